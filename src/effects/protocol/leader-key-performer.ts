import { EMPTY, type Observable, asyncScheduler, defer, finalize, map, mergeMap, tap } from 'rxjs'
import { BACKOFF, backoffDelay } from '../../base/backoff.js'
import type { TxnResult } from '../../consul/client-api.js'
import { LOCK_FLAGS, LOCK_WAITER_FLAGS } from '../../base/flags.js'
import type { KVSnapshot } from '../../base/kv-snapshot.js'
import type { TxnOp } from '../../base/txn.js'
import type { ContenderEvent } from '../../core/events.js'
import { lockKey } from '../../core/keys/lock-key.js'
import { waiterKey } from '../../core/keys/waiter-key.js'
import { fromCall, orThrow, retryTransient } from '../call-policy.js'
import type { Performer, PerformerOptions } from './contender-protocol.js'
import { lockAnswer } from './lock-answer.js'
import { endOnSessionGone } from './session-gone.js'
import { prefixAfterWrite } from './prefix-after-write.js'
import { joinWithRead, takeOwnKey } from './take-own-key.js'

/**
 * Delay before asking again after the n-th lock-delay refusal in a row (`BACKOFF.lockDelay`):
 * 250 ms doubling, capped at 1 s, with up to 25% jitter off, in whole ms. Consul does not say
 * when a lock-delay ends (nor how long the invalidated holder's delay was), so polling is the
 * only way to learn it; the cap bounds the takeover to at most ~1 s after the delay ends, where
 * Go's `Lock` sleeps a fixed 5 s. A refused txn `lock` costs the leader a map lookup (pre-check,
 * no Raft write), so this is cheap.
 *
 * @example
 * lockDelayBackoffMs(1, () => 0) // 188: the first refusal, jitter at its lowest
 * @param attempt - Lock-delay refusals in a row, 1 for the first.
 * @param random - Source of the jitter, in [0, 1); default Math.random.
 * @returns The delay in ms.
 */
export const lockDelayBackoffMs = (attempt: number, random: () => number = Math.random): number =>
  Math.round(backoffDelay(BACKOFF.lockDelay, attempt, { random }))

/** What the leader key's performer is made with. */
export interface LeaderKeyPerformerOptions extends PerformerOptions {
  /** The value of the contender's waiter key (the lock's value is the action's body). */
  readonly value: string
  /**
   * The contender waits in line (`DecideLeaderKeyOptions.queued`): its acquisition deletes its
   * waiter key. Default false.
   */
  readonly queued?: boolean | undefined
  /**
   * Tells the prefix's coordinator that an acquisition is on its way; the function returned tells
   * it the answer (`ProtocolMember.acquiring`). Default: nobody is told.
   */
  readonly acquiring?: (() => (answered: KVSnapshot | undefined) => void) | undefined
}

/**
 * The leader key's performer for one session: makes the write the core asks for and reports its
 * answer. Created once per session, so it counts the lock-delay refusals of that session in a
 * row.
 *
 * `TryAcquire` → one txn `[{ verb: 'lock', key: <prefix>/.lock, value, flags: LOCK_FLAGS, session }]`
 * and, for a waiter in line, `{ verb: 'delete', key: <prefix>/.queue/<session> }` in the same
 * transaction, so that the waiter behind, which long-polls that key, wakes once, when the lock is
 * taken (a txn rather than `PUT ?acquire` because its answer carries the ModifyIndex written: the
 * fencing token, strictly increasing over acquisitions of the key):
 * - committed → `cas-result` ok with that ModifyIndex;
 * - rolled back "lock is already held" → `cas-result` not ok (the next snapshot shows the holder;
 *   the waiter key stays, so the waiter keeps its place);
 * - rolled back "due to lock delay" → `retry` after `lockDelayBackoffMs` (no snapshot shows a
 *   lock-delay ending, so the core must be told to decide again);
 * - invalid session (rolled back or 500) → `session-gone`.
 *
 * `NotContending` → `?acquire=<session>` of the waiter key with LOCK_WAITER_FLAGS → nothing (the
 * next snapshot shows the key), or `session-gone` when Consul no longer has the session.
 *
 * Transient failures are retried a few times with backoff. A lost answer of a committed lock is
 * harmless: the retry re-acquires with the same session (Consul answers true, nothing changes) or
 * the next snapshot shows this session on the key.
 *
 * ```
 * action:  T               T (key free, lock-delay active)
 * events:  ---(k|)         ---(r|)        k: cas-result ok, r: retry in 250 ms
 * ```
 *
 * @example
 * const perform = leaderKeyPerformer({ client, prefix, session, value: 'node-a', queued: true })
 * states.pipe(map((s) => s.write), distinctUntilChanged(), switchMap((a) => (a ? perform(a) : EMPTY)))
 * @param options - Client, prefix, session, value, whether it queues, scheduler.
 * @returns The performer: each action's events to feed back to the core; errors with a permanent
 *   ConsulError.
 */
export function leaderKeyPerformer(options: LeaderKeyPerformerOptions): Performer {
  const { client, prefix, session, random } = options
  const scheduler = options.scheduler ?? asyncScheduler
  let delayedInARow = 0
  const answer = (result: TxnResult): ContenderEvent => {
    const lock = lockAnswer(result)
    if (lock.type === 'session-gone') return lock
    if (lock.type === 'lock-delay') {
      delayedInARow += 1
      return { type: 'retry', inMs: lockDelayBackoffMs(delayedInARow, random) }
    }
    delayedInARow = 0
    return lock.type === 'acquired'
      ? { type: 'cas-result', ok: true, holders: [session], modifyIndex: lock.modifyIndex }
      : { type: 'cas-result', ok: false, holders: [] }
  }
  const ownKey = waiterKey(prefix, session)
  const takeWaiterKey = takeOwnKey({
    client,
    key: ownKey,
    value: options.value,
    flags: LOCK_WAITER_FLAGS,
    session,
    scheduler,
    random,
    mayExist: options.keyMayExist ?? true,
  })
  return (action) => {
    if (action.type === 'NotContending') return takeWaiterKey
    if (action.type !== 'TryAcquire') return EMPTY
    const ops: TxnOp[] = [
      { verb: 'lock', key: lockKey(prefix), value: action.body, flags: LOCK_FLAGS, session },
      // Out of the line in the same write: the waiter behind wakes once, as the lock is taken.
      ...(options.queued === true ? [{ verb: 'delete', key: ownKey } as const] : []),
      // The prefix as of the acquisition: the watch goes on from there, not from its own write.
      { verb: 'get-tree', key: `${prefix}/` },
    ]
    return defer(() => {
      const told = options.acquiring?.()
      return fromCall((signal) => client.kv.txn(ops, { signal })).pipe(
        mergeMap(orThrow),
        retryTransient(scheduler, random),
        tap((result) => told?.(prefixAfterWrite(result))),
        map(answer),
        endOnSessionGone,
        finalize(() => told?.(undefined)),
      )
    })
  }
}

/**
 * Joins the leader lock's queue in one request, for a contender whose session is new: its waiter
 * key (the `NotContending` write, LOCK_WAITER_FLAGS) taken in a transaction that reads the prefix
 * right after it (`joinWithRead`).
 *
 * @example
 * joinLine({ client, prefix: 'svc/leader', session, value: 'node-a' }).subscribe((seed) => ...)
 * @returns The prefix as of the join, or undefined; then completes.
 */
export function joinLine(
  options: Pick<LeaderKeyPerformerOptions, 'client' | 'prefix' | 'session' | 'value'>,
): Observable<KVSnapshot | undefined> {
  const { client, prefix, session, value } = options
  const key = waiterKey(prefix, session)
  return joinWithRead({ client, prefix, key, value, flags: LOCK_WAITER_FLAGS, session })
}
