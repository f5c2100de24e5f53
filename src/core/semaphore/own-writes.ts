import * as E from 'fp-ts/lib/Either.js'
import type { KVEntry, KVSnapshot } from '../../base/kv-snapshot.js'
import type { TxnOp, TxnResult } from '../../base/txn.js'
import { lockKey } from '../keys/lock-key.js'
import { readLockBody } from '../lock-body/read-lock-body.js'

/** One key as a write of ours left it (null: deleted), and that write's index. */
export interface OwnWrite {
  /** The Raft index of the write. */
  readonly index: bigint
  /** The key as the write left it, its value the one sent; null when the write deleted it. */
  readonly entry: KVEntry | null
}

/**
 * What a process knows of a prefix from its own answers, beyond the last listing of its watch:
 * `.lock` as the freshest of its committed writes left it (or as a read found it: the greatest
 * ModifyIndex known), and the contender keys those same writes changed (the releaser's key
 * deleted, a hand-off's heir or an acquirer marked holder, a rotated key locked anew). Each item
 * stands until a listing at or above its index shows the prefix as of then (`afterListing`).
 *
 * ```
 * listing i ──► own write i+1 (answer) ──► own write i+2 ──► listing i+2: all shown, nothing left
 * known:         .lock@i+1                  .lock@i+2          undefined
 * ```
 */
export interface OwnWrites {
  /** `.lock` as the freshest answer left it; undefined when no answer told a newer one. */
  readonly lock: KVEntry | undefined
  /** Contender keys the `.lock` writes changed, by key. */
  readonly keys: ReadonlyMap<string, OwnWrite>
}

/**
 * A listing with the process's own writes newer than it laid over it (`freshestPrefix`): the same
 * index (the listing's: its keys are as of then), `.lock` and the keys our writes changed as they
 * left them.
 */
export interface OverlaidSnapshot extends KVSnapshot {
  /** The listing under the overlay. */
  readonly listing: KVSnapshot
  /**
   * Holders the newer `.lock` lists that the listing's `.lock` does not: their contender keys may
   * be newer than the listing, so the listing cannot tell them dead, and none is pruned.
   */
  readonly unjudged: ReadonlySet<string>
}

const NO_KEYS: ReadonlyMap<string, OwnWrite> = new Map()

/**
 * What a transaction of ours on the prefix tells, added to what was known. A committed write of
 * `.lock` (a `cas`: an acquisition, a hand-off, a release, a rotation) gives `.lock` as written (the
 * value sent, at the index answered) and each key it set, locked or deleted; a committed read of
 * `.lock` in the transaction (a Refence) gives `.lock` as read. A rollback tells nothing: `.lock`
 * moved on, and the listing that shows how comes.
 *
 * @example
 * known = learnTxn(known, 'svc/lock', ops, result)
 * @param known - What was known before.
 * @param prefix - The semaphore prefix.
 * @param ops - The transaction's operations, as sent.
 * @param result - Its answer.
 * @returns What is known now (the same object when nothing is new).
 */
export function learnTxn(
  known: OwnWrites | undefined,
  prefix: string,
  ops: readonly TxnOp[],
  result: TxnResult,
): OwnWrites | undefined {
  if (!result.committed) return known
  const lock = lockKey(prefix)
  // The last result of each key: a check earlier in the transaction answers with the key before.
  const answered = new Map<string, KVEntry>()
  const results = result.results
  for (let i = 0; i < results.length; i++) {
    const entry = results[i] as KVEntry
    answered.set(entry.key, entry)
  }
  const cas = ops.find(
    (op): op is Extract<TxnOp, { verb: 'cas' }> => op.verb === 'cas' && op.key === lock,
  )
  if (cas === undefined) {
    const read = ops.some((op) => op.verb === 'get' && op.key === lock)
    return read ? learnLock(known, prefix, answered.get(lock) ?? null) : known
  }
  const written = answered.get(lock)
  if (written === undefined) return known
  const index = written.modifyIndex
  const before = known?.keys ?? NO_KEYS
  let keys: Map<string, OwnWrite> | undefined
  // Later operations of the transaction win (a rotated key is deleted, then locked anew).
  const note = (key: string, write: OwnWrite): void => {
    const earlier = (keys ?? before).get(key)
    if (earlier !== undefined && earlier.index > write.index) return
    keys ??= new Map(before)
    keys.set(key, write)
  }
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i] as TxnOp
    if (op.key === lock) continue
    if (op.verb === 'delete') note(op.key, { index, entry: null })
    else if (op.verb === 'set' || op.verb === 'lock') {
      const entry = answered.get(op.key)
      if (entry === undefined) continue
      note(op.key, {
        index: entry.modifyIndex,
        entry: { ...entry, value: op.value, flags: op.flags ?? entry.flags },
      })
    }
  }
  const entry: KVEntry = { ...written, value: cas.value, flags: cas.flags ?? written.flags }
  const newer = known?.lock === undefined || known.lock.modifyIndex < index
  return { lock: newer ? entry : known?.lock, keys: keys ?? before }
}

/**
 * What a read of `.lock` tells, added to what was known: the entry read, when it is newer than the
 * `.lock` known and can be read. A missing or unreadable `.lock` tells nothing to build on (the
 * library never writes over a body it cannot read): what was known stays, and a write built on it
 * only loses its CAS until the listing shows the prefix.
 *
 * @example
 * known = learnLock(known, 'svc/lock', entry)
 * @param known - What was known before.
 * @param prefix - The semaphore prefix.
 * @param entry - `.lock` as read (null: missing).
 * @returns What is known now (the same object when nothing is new).
 */
export function learnLock(
  known: OwnWrites | undefined,
  prefix: string,
  entry: KVEntry | null,
): OwnWrites | undefined {
  if (entry === null || entry.key !== lockKey(prefix)) return known
  if (known?.lock !== undefined && known.lock.modifyIndex >= entry.modifyIndex) return known
  if (E.isLeft(readLockBody(entry, entry.key))) return known
  return { lock: entry, keys: known?.keys ?? NO_KEYS }
}

/**
 * What is still newer than a listing: the items above its index. A listing at or above an item's
 * index shows the prefix as of then, that write included, or what came after it (another
 * process's write, a deletion of `.lock`). After a reset (an agent restarted or restored:
 * indexes went back), nothing known before means anything.
 *
 * @example
 * known = afterListing(known, snapshot, event.reset === true)
 * @param known - What was known.
 * @param listing - The listing of the watch (or a join's answer).
 * @param reset - The watch marked it a reset.
 * @returns What is still newer (the same object when all of it is), or undefined.
 */
export function afterListing(
  known: OwnWrites | undefined,
  listing: KVSnapshot,
  reset: boolean,
): OwnWrites | undefined {
  if (known === undefined || reset) return undefined
  const lock =
    known.lock !== undefined && known.lock.modifyIndex > listing.index ? known.lock : undefined
  let keys: Map<string, OwnWrite> | undefined
  for (const [key, write] of known.keys) {
    if (write.index > listing.index) continue
    keys ??= new Map(known.keys)
    keys.delete(key)
  }
  if (lock === known.lock && keys === undefined) return known
  const left = keys ?? known.keys
  return lock === undefined && left.size === 0 ? undefined : { lock, keys: left }
}

/**
 * The listing under a snapshot: itself, or the listing an overlay was laid over.
 *
 * @example
 * listingOf(freshestPrefix(listing, prefix, known)) === listing // true
 */
export function listingOf(snapshot: KVSnapshot): KVSnapshot {
  return 'listing' in snapshot ? (snapshot as OverlaidSnapshot).listing : snapshot
}

/**
 * The holders of an overlaid snapshot that its listing cannot judge (`OverlaidSnapshot.unjudged`).
 *
 * @example
 * pruneHolders(record.holders, live, unjudgedHolders(snapshot))
 */
export function unjudgedHolders(snapshot: KVSnapshot): ReadonlySet<string> | undefined {
  return 'unjudged' in snapshot ? (snapshot as OverlaidSnapshot).unjudged : undefined
}

/**
 * The freshest prefix the process knows: the listing under `snapshot` with the own writes newer
 * than it laid over it, `.lock` and the contender keys they changed, so that the next write of any
 * contender of the process (an acquisition, a hand-off, a release) is decided by the same pure
 * functions on the `.lock` our last write left instead of the one the watch last showed. Safety is
 * the CAS's: a write built on it still checks `.lock`'s ModifyIndex, so a stale one only loses, and
 * one built on a fresher `.lock` never admits more than the limit. What could make it wrong is
 * left alone:
 *
 * - nothing newer than the listing is known: the listing itself;
 * - the listing's `.lock` cannot be read (a conflict, a corrupt body): the listing itself, whose
 *   problem stands (nothing is ever built over a body that could not be read);
 * - holders the newer `.lock` lists that the listing's does not are kept from pruning
 *   (`unjudged`): a listing older than their keys would take them for dead.
 *
 * ```
 * listing i:   .lock@i {a, b}   keys a b w1 w2      (a hands its slot to w1 at i+1)
 * own write:   .lock@i+1 {b, w1}, a deleted, w1 marked holder
 * overlaid:    index i, .lock@i+1 {b, w1}, keys b w1 w2   ──► w2 is first in line
 * ```
 *
 * @example
 * const fresh = freshestPrefix(lastListing, 'svc/lock', known)
 * const handOff = handOffSlot(fresh, { prefix: 'svc/lock', session, limit: 3 })
 * @param snapshot - The last listing (or a snapshot overlaid before: its listing is taken).
 * @param prefix - The semaphore prefix.
 * @param known - The process's own writes newer than listings it has seen.
 * @returns The listing, or an `OverlaidSnapshot` of it.
 */
export function freshestPrefix(
  snapshot: KVSnapshot,
  prefix: string,
  known: OwnWrites | undefined,
): KVSnapshot {
  const listing = listingOf(snapshot)
  const fresher = known?.lock
  if (fresher === undefined || fresher.modifyIndex <= listing.index) return listing
  const key = lockKey(prefix)
  const listed = readLockBody(
    listing.entries.find((entry) => entry.key === key),
    key,
  )
  const now = readLockBody(fresher, key)
  if (E.isLeft(listed) || E.isLeft(now)) return listing
  const changes = new Map<string, KVEntry | null>([[key, fresher]])
  for (const [changed, write] of known?.keys ?? NO_KEYS) {
    if (write.index > listing.index) changes.set(changed, write.entry)
  }
  const entries: KVEntry[] = []
  for (let i = 0; i < listing.entries.length; i++) {
    const entry = listing.entries[i] as KVEntry
    const change = changes.get(entry.key)
    if (change === undefined) entries.push(entry)
    else {
      changes.delete(entry.key)
      if (change !== null) entries.push(change)
    }
  }
  let added = false
  for (const change of changes.values()) {
    if (change === null) continue
    entries.push(change)
    added = true
  }
  // Entries stay sorted by key, as a listing's are.
  if (added) entries.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
  const before = new Set(listed.right.record?.holders ?? [])
  const unjudged = new Set<string>()
  const holders = now.right.record?.holders ?? []
  for (let i = 0; i < holders.length; i++) {
    const holder = holders[i] as string
    if (!before.has(holder)) unjudged.add(holder)
  }
  const overlaid: OverlaidSnapshot = { index: listing.index, entries, listing, unjudged }
  return overlaid
}

/**
 * The ModifyIndex of `.lock` in a listing (0n when it has none), as a CAS of it would name it.
 *
 * @example
 * lockIndexIn(snapshot, 'svc/lock') // 42n
 */
export function lockIndexIn(listing: KVSnapshot, prefix: string): bigint {
  const key = lockKey(prefix)
  return listing.entries.find((entry) => entry.key === key)?.modifyIndex ?? 0n
}

/**
 * Whether a transaction CASes `.lock` on an index older than one `.lock` is known to have had
 * since (by the process's own answers, `known`, or by its watch's last listing, `listed`): it
 * would lose, so it is not worth sending; whoever made it decides again on the freshest prefix
 * (`freshestPrefix`). A transaction that does not CAS `.lock` is never stale.
 *
 * @example
 * staleCas(known, 40n, 'svc/lock', ops) // true: `.lock` is known at 42, the CAS is on 40
 * @param known - What the process knows from its answers.
 * @param listed - `.lock`'s ModifyIndex in the watch's last listing (`lockIndexIn`), if any.
 * @param prefix - The semaphore prefix.
 * @param ops - The transaction's operations.
 * @returns True when its CAS of `.lock` is known to lose.
 */
export function staleCas(
  known: OwnWrites | undefined,
  listed: bigint | undefined,
  prefix: string,
  ops: readonly TxnOp[],
): boolean {
  const answered = known?.lock?.modifyIndex ?? 0n
  const newest = listed !== undefined && listed > answered ? listed : answered
  const key = lockKey(prefix)
  return ops.some((op) => op.verb === 'cas' && op.key === key && op.index < newest)
}
