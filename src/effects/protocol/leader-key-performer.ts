import { EMPTY, asyncScheduler, map, mergeMap } from 'rxjs'
import { BACKOFF, backoffDelay } from '../../base/backoff.js'
import type { TxnResult } from '../../consul/client-api.js'
import { LOCK_FLAGS } from '../../base/flags.js'
import type { ContenderEvent } from '../../core/events.js'
import { lockKey } from '../../core/keys/lock-key.js'
import { fromCall, orThrow, retryTransient } from '../call-policy.js'
import type { Performer, PerformerOptions } from './contender-protocol.js'
import { lockAnswer } from './lock-answer.js'
import { endOnSessionGone } from './session-gone.js'

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

/**
 * The leader key's performer for one session: makes the acquisition the core asks for and reports
 * its answer. Created once per session, so it counts the lock-delay refusals of that session in a
 * row.
 *
 * `TryAcquire` → one txn `[{ verb: 'lock', key: <prefix>/.lock, value, flags: LOCK_FLAGS, session }]`
 * (a txn rather than `PUT ?acquire` because its answer carries the ModifyIndex written: the fencing
 * token, strictly increasing over acquisitions of the key):
 * - committed → `cas-result` ok with that ModifyIndex;
 * - rolled back "lock is already held" → `cas-result` not ok (the next snapshot shows the holder);
 * - rolled back "due to lock delay" → `retry` after `lockDelayBackoffMs` (no snapshot shows a
 *   lock-delay ending, so the core must be told to decide again);
 * - invalid session (rolled back or 500) → `session-gone`.
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
 * const perform = leaderKeyPerformer({ client, prefix, session })
 * states.pipe(map((s) => s.write), distinctUntilChanged(), switchMap((a) => (a ? perform(a) : EMPTY)))
 * @param options - Client, prefix, session, scheduler.
 * @returns The performer: each action's events to feed back to the core; errors with a permanent
 *   ConsulError.
 */
export function leaderKeyPerformer(options: PerformerOptions): Performer {
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
  return (action) => {
    // The leader key's decide step never asks for a contender key.
    if (action.type !== 'TryAcquire') return EMPTY
    return fromCall((signal) =>
      client.kv.txn(
        [{ verb: 'lock', key: lockKey(prefix), value: action.body, flags: LOCK_FLAGS, session }],
        { signal },
      ),
    ).pipe(mergeMap(orThrow), retryTransient(scheduler, random), map(answer), endOnSessionGone)
  }
}
