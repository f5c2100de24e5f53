import * as E from 'fp-ts/lib/Either.js'
import { HOLDER_FLAGS } from '../../base/flags.js'
import type { KVEntry, KVSnapshot } from '../../base/kv-snapshot.js'
import { ownWaiterKey } from './waiting-contenders.js'
import { directChild } from '../keys/direct-child.js'
import { lockKey } from '../keys/lock-key.js'
import { readLockBody } from '../lock-body/read-lock-body.js'
import { encodeLockBody } from '../lock-body/encode-lock-body.js'
import type { PrefixProblem } from '../events.js'
import { prefixView, type PrefixView } from './prefix-view.js'

/**
 * A release that hands the slot to the first waiter in line: one transaction that checks the
 * waiter still locks its key, CASes `.lock` from this holder to it, deletes this holder's key, and
 * rewrites the waiter's key (same value, HOLDER_FLAGS), which wakes it with the hand-off's index.
 *
 * @example
 * ```ts
 * const handOff: HandOff | undefined = handOffSlot(snapshot, { prefix, session, limit: 3 })
 * if (handOff) console.log(`hand the slot to ${handOff.heir} if .lock is still at ${handOff.cas}`)
 * ```
 */
export interface HandOff {
  /** The waiter's session: the new holder. */
  readonly heir: string
  /** The waiter's contender key, as the snapshot showed it (its value is written back as it is). */
  readonly heirEntry: KVEntry
  /** The new `.lock` body: the live holders without this session, with the heir, in the shape read. */
  readonly body: Uint8Array
  /** ModifyIndex `.lock` must still have. */
  readonly cas: bigint
}

/** Whose slot is handed on, and the limit it contends with. */
export interface HandOffOptions {
  /** The semaphore prefix. */
  readonly prefix: string
  /** The holder giving its slot. */
  readonly session: string
  /** The holder's limit: `.lock` must state it, unless `followLimit`. */
  readonly limit: number
  /** The holder takes the limit `.lock` states (see `PrefixViewOptions.followLimit`). */
  readonly followLimit?: boolean | undefined
}

/**
 * Whether this holder's release can hand its slot straight to the next waiter, from a snapshot
 * that lists it: only when `.lock` is readable and agrees with the limit, lists this session (a
 * live holder, or a dead one: a session Consul ended, whose process, still running, hands its slot
 * on rather than leave it to the next listing of a waiter), leaves room for the heir once this
 * session is out (an operator may have lowered the limit), and the first waiter in line runs this
 * library (its key has CONTENDER_FLAGS). A
 * Go waiter would not know that it was handed a slot (its loop only counts holders), so when one
 * is first in line, or there is no waiter, the release is the plain one
 * (`releaseFromLockBody`). Dead holders are pruned, as any acquisition prunes them: the heir's
 * acquisition is written by the releaser.
 *
 * The transaction decides, not this snapshot: it commits only if `.lock` is unchanged and the heir
 * still locks its key; otherwise the release falls back to the plain one.
 *
 * @example
 * ```ts
 * const handOff = handOffSlot(lastSnapshot, { prefix: 'service/db/lock', session, limit: 3 })
 * ```
 * @param snapshot - The holder's last snapshot of the prefix.
 * @param options - Prefix, this holder's session and the limit.
 * @param shared - The snapshot's view for this limit, when the caller has it already (the view
 *   its contenders decided on); computed from the snapshot otherwise.
 * @returns The hand-off to try, or undefined for a plain release.
 */
export function handOffSlot(
  snapshot: KVSnapshot,
  options: HandOffOptions,
  shared: E.Either<PrefixProblem, PrefixView> = prefixView(snapshot, options),
): HandOff | undefined {
  if (E.isLeft(shared) || shared.right.limitConflict !== undefined) return undefined
  const { view, holders } = shared.right
  const heir = view.waiting[0]?.session
  const listed = holders.has(options.session) || view.deadHolders.includes(options.session)
  if (heir === undefined || !listed) return undefined
  const kept = view.liveHolders.filter((holder) => holder !== options.session)
  // A limit lowered under its holders admits no one until they are fewer than it.
  if (kept.length >= view.limit) return undefined
  const heirEntry = ownWaiterKey(snapshot, options.prefix, heir)
  if (heirEntry === undefined) return undefined
  return {
    heir,
    heirEntry,
    body: encodeLockBody({
      limit: view.limit,
      holders: [...kept, heir],
      shape: view.shape ?? 'go-map',
    }),
    cas: view.lockIndex,
  }
}

/**
 * The same hand-off again after its CAS lost: from `.lock` as read now, this holder out and the
 * same heir in. Undefined when there is nothing to hand any more: `.lock` no longer lists this
 * session, already lists the heir (another release handed it a slot), or must not be written.
 * Listed holders are kept as they are (without the listing, liveness is unknown); the count of
 * holders does not grow, since this session leaves as the heir comes.
 *
 * @example
 * ```ts
 * const again = handOffAgain(await getLockEntry(), { prefix, session, limit: 3 }, handOff)
 * ```
 * @param entry - The `.lock` entry as read now (undefined when it is gone).
 * @param options - Prefix, this holder's session and the limit.
 * @param previous - The hand-off whose CAS lost.
 * @returns The hand-off to try now, or undefined for a plain release.
 */
export function handOffAgain(
  entry: KVEntry | undefined,
  options: HandOffOptions,
  previous: HandOff,
): HandOff | undefined {
  const key = lockKey(options.prefix)
  const lock = readLockBody(entry, key, options.followLimit === true ? undefined : options.limit)
  if (E.isLeft(lock) || lock.right.record === undefined) return undefined
  const { record, lockIndex } = lock.right
  if (!record.holders.includes(options.session) || record.holders.includes(previous.heir)) {
    return undefined
  }
  // Counted with the dead holders still listed (no listing here to prune them): never over.
  if (record.holders.length > record.limit) return undefined
  const holders = [...record.holders.filter((h) => h !== options.session), previous.heir]
  return { ...previous, body: encodeLockBody({ ...record, holders }), cas: lockIndex }
}

/**
 * A release's hint from a listing older than its `.lock` (the freshest prefix of a holder that
 * long-polled only its key and `.lock`), less the keys of the holders that left since: keys marked
 * holder (HOLDER_FLAGS) whose session that `.lock` no longer lists. A holder leaves `.lock` in the
 * write that deletes its key (a release, a hand-off), or once its key is gone (pruned, evicted), so
 * such a key is no waiter to hand a slot to; kept, it would stand first in line (its arrival is
 * older) and turn the hand-off into a plain release. Anything else is as it was, the overlay's
 * marks included; a `.lock` that cannot be read leaves the snapshot as it is.
 *
 * @example
 * const hint = withoutDepartedHolders(fresh.latestFrom(lastSeen), 'svc/lock')
 * const handOff = handOffSlot(hint, { prefix: 'svc/lock', session, limit: 3 })
 * @param snapshot - The overlaid snapshot.
 * @param prefix - The semaphore prefix.
 * @returns The snapshot without those keys (the same object when there are none).
 */
export function withoutDepartedHolders(snapshot: KVSnapshot, prefix: string): KVSnapshot {
  const key = lockKey(prefix)
  const lock = readLockBody(
    snapshot.entries.find((entry) => entry.key === key),
    key,
  )
  if (E.isLeft(lock)) return snapshot
  const listed = new Set(lock.right.record?.holders ?? [])
  const childOf = directChild(prefix)
  const departed = (entry: KVEntry): boolean => {
    const id = childOf(entry.key)
    return (
      entry.flags === HOLDER_FLAGS && id !== undefined && id === entry.session && !listed.has(id)
    )
  }
  if (!snapshot.entries.some(departed)) return snapshot
  return { ...snapshot, entries: snapshot.entries.filter((entry) => !departed(entry)) }
}
