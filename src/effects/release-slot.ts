import * as E from 'fp-ts/lib/Either.js'
import { setTimeout as sleep } from 'node:timers/promises'
import type { ConsulClient, TxnOp } from '../consul/client-api.js'
import type { ConsulError } from '../consul/errors.js'
import type { KVEntry, KVSnapshot } from '../consul/types.js'
import { HOLDER_FLAGS, SEMAPHORE_FLAGS } from '../consul/flags.js'
import { contenderKey } from '../core/keys/contender-key.js'
import { lockKey } from '../core/keys/lock-key.js'
import { releaseLock, type ReleaseDecision } from '../core/lock-body/release-lock.js'
import type { PrefixProblem } from '../core/events.js'
import { handOffAgain, handOffLock, type HandOff } from '../core/semaphore/hand-off.js'
import type { PrefixView } from '../core/semaphore/prefix-view.js'
import { withTransientRetries } from './call-policy.js'

export interface ReleaseSlotOptions {
  readonly client: ConsulClient
  readonly prefix: string
  readonly session: string
  readonly limit: number
  /** CAS attempts before giving up when other writers keep changing `.lock`. Default 10. */
  readonly attempts?: number
  /**
   * The last snapshot this contender saw, if any. When its `.lock` lists the session, the first
   * attempt CASes on that `.lock` at once instead of reading the prefix first: one round trip
   * less per handover. A stale hint only costs a failed CAS; the CAS on `.lock`'s ModifyIndex is
   * what makes the write safe, whatever snapshot it was computed from.
   */
  readonly hint?: KVSnapshot | undefined
  /**
   * The hint's view (`sharedView`), when the caller's contenders already decided on it: the
   * hand-off then looks the first waiter up instead of pruning and ranking the prefix again.
   */
  readonly hintView?: E.Either<PrefixProblem, PrefixView> | undefined
}

/**
 * Gives a slot back and leaves Consul clean, in the order the guides give: CAS this session out of
 * `.lock` (in one transaction with the deletion of the contender key), then destroy the session.
 * A `.lock` that does not list the session (a waiter), or that this library must not write
 * (conflict, corrupt), only loses the contender key; a waiter then reads `.lock` once more, since
 * a holder's hand-off can name it until its key is gone.
 *
 * When the hint lists the session and the first waiter in line runs this library, the same
 * transaction hands it the slot instead (`handOffLock`): `.lock` names the waiter in place of this
 * holder, guarded by a check that the waiter still locks its key, and the waiter's key is
 * rewritten with HOLDER_FLAGS. A handover is then one write and one wake-up, and no waiter races
 * for the slot. If its CAS loses (`.lock` moved), the hand-off is tried again from `.lock` as read
 * now (`handOffAgain`); if the waiter left or was served meanwhile, the release goes on the plain
 * way.
 *
 * Under heavy churn the CAS can lose again and again; attempts after the first wait a few
 * jittered milliseconds so that writers stop colliding in step. If every attempt loses, the
 * session is destroyed all the same, which is a complete release by other means: Consul deletes
 * the contender key with the session (behavior `delete`), so every acquirer (ours, and Go's
 * `pruneDeadHolders`) prunes the session from `.lock` in its next write.
 *
 * @example
 * const result = await releaseSlot({ client, prefix: 'svc/lock', session, limit: 3 })
 * if (E.isLeft(result)) console.error(result.left.message)
 * @returns Right when the session and its contender key are gone (and `.lock` no longer lists it,
 *   or lists a session every acquirer prunes); Left with the error that stopped it (the session
 *   is still destroyed when Consul lets it be; otherwise it expires by its TTL, and others prune
 *   it).
 */
export async function releaseSlot(
  options: ReleaseSlotOptions,
): Promise<E.Either<ConsulError, void>> {
  const { client, prefix, session, limit } = options
  const ownKey = contenderKey(prefix, session)
  let released = false
  let failed: ConsulError | undefined
  // The release only reads `.lock`: after a lost CAS, get that one key, not the whole prefix
  // (with a thousand contenders the listing is a thousand entries to send and decode).
  const readLockEntry = () => withTransientRetries(client.kv.get(lockKey(prefix)))
  const read = async (): Promise<E.Either<ConsulError, ReleaseDecision>> =>
    E.map((entry: KVEntry | null) =>
      releaseLock(
        { index: entry?.modifyIndex ?? 0n, entries: entry === null ? [] : [entry] },
        { prefix, session, limit },
      ),
    )(await readLockEntry())
  // A hint that lists the session and names a waiter of this library first in line: hand it the
  // slot in the release's own transaction. If that rolls back, release the plain way from a read.
  const attempts = options.attempts ?? 10
  const offered =
    options.hint && handOffLock(options.hint, { prefix, session, limit }, options.hintView)
  let handOff = offered
  // A lost CAS (another holder wrote `.lock` since the hint) is tried again from `.lock` as read
  // now, to the same heir; a heir that left, or that another release already served, ends it.
  for (let attempt = 0; handOff && attempt < attempts && !released && !failed; attempt++) {
    if (attempt > 0) await pauseBeforeRetry(attempt)
    const handed = await withTransientRetries(client.kv.txn(handOffOps(prefix, ownKey, handOff)))
    if (E.isLeft(handed)) failed = handed.left
    else if (handed.right.committed) released = true
    else if (handed.right.errors.some((e) => e.opIndex === 0)) handOff = undefined
    else {
      const now = await readLockEntry()
      if (E.isLeft(now)) failed = now.left
      else handOff = handOffAgain(now.right ?? undefined, { prefix, session, limit }, handOff)
    }
  }
  // Only a hint that says "write" is used: one that says "not listed" may predate our own CAS.
  const hinted = !offered && options.hint && releaseLock(options.hint, { prefix, session, limit })
  let first = hinted && hinted.type === 'WriteRelease' ? E.right(hinted) : undefined
  let keyGone = false
  for (let attempt = 0; attempt < attempts && !released && !failed; attempt++) {
    if (attempt > 0) await pauseBeforeRetry(attempt)
    const decided = first ?? (await read())
    first = undefined
    if (E.isLeft(decided)) {
      failed = decided.left
      break
    }
    const decision = decided.right
    if (decision.type === 'WriteRelease') {
      const txn = await withTransientRetries(
        client.kv.txn([
          {
            verb: 'cas',
            key: lockKey(prefix),
            value: decision.body,
            flags: SEMAPHORE_FLAGS,
            index: decision.cas,
          },
          { verb: 'delete', key: ownKey },
        ]),
      )
      if (E.isLeft(txn)) {
        failed = txn.left
        break
      }
      released = txn.right.committed
    } else if (keyGone) {
      released = true // not listed once our key was gone: nothing can hand us a slot any more
    } else {
      // Not listed (or a `.lock` we must not write): delete our key. A holder's hand-off can name
      // us until then (its txn checks that we lock the key), so a NotListed read before the
      // delete proves nothing: read `.lock` once more after it.
      const deleted = await withTransientRetries(client.kv.delete(ownKey))
      if (E.isLeft(deleted)) {
        failed = deleted.left
        break
      }
      keyGone = true
      released = decision.type !== 'NotListed'
      if (!released) attempt-- // the read after the delete is not a retry
    }
  }
  // Destroy the session even when the KV cleanup failed: Consul then deletes the contender key
  // (behavior delete) and others prune the session from `.lock`, without waiting for the TTL.
  const destroyed = await withTransientRetries(client.session.destroy(session))
  if (failed !== undefined) return E.left(failed)
  // Released, or (every CAS lost) destroyed with its key: either way the slot is free.
  return E.isLeft(destroyed) ? destroyed : E.right(undefined)
}

/** A few jittered milliseconds before attempt n (n ≥ 1), so that writers stop colliding in step. */
const pauseBeforeRetry = (attempt: number): Promise<void> =>
  sleep(Math.random() * Math.min(50, 5 * 2 ** (attempt - 1)))

/**
 * The hand-off transaction: the heir still locks its key, `.lock` moves from this holder to the
 * heir, this holder's key goes, and the heir's key is rewritten (same value, HOLDER_FLAGS; the
 * write keeps its lock) so that the heir learns the hand-off's index from its own key.
 */
function handOffOps(prefix: string, ownKey: string, handOff: HandOff): TxnOp[] {
  const heirKey = handOff.heirEntry.key
  return [
    { verb: 'check-session', key: heirKey, session: handOff.heir },
    {
      verb: 'cas',
      key: lockKey(prefix),
      value: handOff.body,
      flags: SEMAPHORE_FLAGS,
      index: handOff.cas,
    },
    { verb: 'delete', key: ownKey },
    { verb: 'set', key: heirKey, value: handOff.heirEntry.value, flags: HOLDER_FLAGS },
  ]
}
