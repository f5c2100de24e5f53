import type { Decision } from '../events.js'

/** The places at the front of the queue whose waiters see every snapshot. */
export const FRONT_PLACES = 2

/** The last snapshot a waiter stepped on: its decision there, and when (scheduler ms). */
export interface WaiterPassed {
  /** The decision on that snapshot. */
  readonly decision: Decision
  /** Scheduler ms at which it was stepped on. */
  readonly at: number
}

/**
 * Whether a contender steps on a snapshot of its prefix, out of every snapshot of the prefix's watch. A waiter
 * further back than the first `FRONT_PLACES` places has nothing to do on a snapshot that leaves
 * it waiting further back: the write that frees a slot is for the front of the queue, and the
 * snapshot that moves it to the front reaches it. Such snapshots are passed on only once per
 * `refreshMs`, to keep its `rank`, `waiting` and `holders` roughly current and its fairness grace
 * counting; everything else passes at once: every event of a holder, of the front of the queue,
 * of a contender whose key is missing, every prefix problem, every change of decision, every
 * `disconnected` and the first snapshot after it. So a prefix of n waiters in one process runs
 * n O(1) lookups per snapshot, and the whole state machine only for the few it concerns. A
 * snapshot held back is not lost: the caller steps on the last one held back once `refreshMs`
 * has passed, if none passed meanwhile (the member's refresh timer), since the prefix may stay
 * quiet after it and it may be the one that shows a free slot behind dead waiters, on which the
 * fairness grace counts.
 *
 * Safety does not depend on it: a waiter holds nothing, and a snapshot that makes it a holder
 * (a changed decision) passes at once.
 *
 * ```
 * decision:  W5--W4--W3--W1--T0--H
 * refresh:   ------------|                      (refreshMs after the last one passed)
 * passes:    s---------------s---s---s          (W5 first, W3 refresh, W1 front, T0, H)
 * ```
 *
 * @example
 * ```ts
 * const decision = cache.decide(snapshot, { prefix, session, limit: 3 })
 * const next = passToWaiter(member.passed, decision, scheduler.now(), 1500)
 * if (next !== undefined) member.passed = next // step the state machine on this snapshot
 * ```
 * @param passed - The last snapshot the waiter stepped on (undefined: none since it connected; a
 *   `disconnected` event forgets it, so the first snapshot after a failure passes).
 * @param decision - Its decision on the new snapshot (computed once per snapshot).
 * @param now - Scheduler ms.
 * @param refreshMs - A waiter deep in the queue still steps at least this often.
 * @returns The new record when the snapshot passes, undefined when it is held back.
 */
export function passToWaiter(
  passed: WaiterPassed | undefined,
  decision: Decision,
  now: number,
  refreshMs: number,
): WaiterPassed | undefined {
  const holdBack =
    passed !== undefined &&
    farBack(passed.decision) &&
    farBack(decision) &&
    now - passed.at < refreshMs
  return holdBack ? undefined : { decision, at: now }
}

function farBack(decision: Decision): boolean {
  return decision.type === 'Wait' && decision.rank !== undefined && decision.rank >= FRONT_PLACES
}
