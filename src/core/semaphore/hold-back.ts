import type { Decision } from '../events.js'

/** The places at the front of the queue whose waiters see every snapshot. */
export const FRONT_PLACES = 2

/**
 * Until when a waiter holds back the snapshots of its prefix that leave it far back, after it
 * stepped on `decision` at `at`. A waiter further back than the first `FRONT_PLACES` places has
 * nothing to do on such a snapshot: the write that frees a slot is for the front of the queue,
 * and the snapshot that moves it to the front reaches it. So it steps on one of them only once per
 * `refreshMs`, to keep its `rank`, `waiting` and `holders` roughly current and its fairness grace
 * counting; everything else reaches it at once (`holdsBack`): every event of a holder, of the
 * front of the queue, of a contender whose key is missing, every prefix problem, every change of
 * decision, every `disconnected` and the first snapshot after it. A prefix of n waiters in one
 * process then costs n O(1) lookups per snapshot, and the whole state machine only for the few it
 * concerns. A snapshot held back is not lost: the last one is stepped on once `refreshMs` has
 * passed, if none reached the waiter meanwhile, since the prefix may stay quiet after it and it
 * may be the one that shows a free slot behind dead waiters, on which the fairness grace counts.
 *
 * Safety does not depend on it: a waiter holds nothing, and a snapshot that makes it a holder
 * (a changed decision) reaches it at once.
 *
 * ```
 * decision:  W5--W4--W3--W1--T0--H
 * until:     ------------|                      (refreshMs after the last one stepped on)
 * stepped:   s---------------s---s---s          (W5 first, W3 refresh, W1 front, T0, H)
 * ```
 *
 * @example
 * ```ts
 * const until = holdBackUntil(decision, scheduler.now(), 1500)
 * if (holdsBack(until, cache.decide(next, options), scheduler.now())) keepForTheRefresh(next)
 * ```
 * @param decision - The decision the waiter stepped on.
 * @param at - When (scheduler ms).
 * @param refreshMs - A waiter deep in the queue still steps at least this often.
 * @returns The end of the hold (scheduler ms), or undefined when nothing is held back.
 */
export function holdBackUntil(
  decision: Decision,
  at: number,
  refreshMs: number,
): number | undefined {
  return farBack(decision) ? at + refreshMs : undefined
}

/**
 * Whether a snapshot on which a waiter decides `decision` at `now` is held back from it, within
 * the hold `holdBackUntil` set when it last stepped on one (undefined: none, as after it connected
 * or reconnected, so the first snapshot after a failure reaches it).
 *
 * @example
 * holdsBack(until, decision, scheduler.now()) // true: keep it for the refresh
 * @param until - The end of the hold, or undefined.
 * @param decision - The waiter's decision on the new snapshot (computed once per snapshot).
 * @param now - Scheduler ms.
 * @returns True when the snapshot is held back.
 */
export function holdsBack(until: number | undefined, decision: Decision, now: number): boolean {
  return until !== undefined && now < until && farBack(decision)
}

function farBack(decision: Decision): boolean {
  return decision.type === 'Wait' && decision.rank !== undefined && decision.rank >= FRONT_PLACES
}
