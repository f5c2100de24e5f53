import {
  asyncScheduler,
  defer,
  filter,
  type MonoTypeOperatorFunction,
  type SchedulerLike,
} from 'rxjs'
import type { WatchEvent } from '../../consul/types.js'
import type { DecideStep } from '../contender/contender-state-model.js'
import type { Decision } from '../events.js'

/** The places at the front of the queue whose waiters see every snapshot. */
export const FRONT_PLACES = 2

/**
 * Options of `waiterSnapshots`.
 *
 * @example
 * ```ts
 * const options: WaiterSnapshotsOptions = { prefix, session, limit: 3, decide, refreshMs: 1500 }
 * sharedWatch(client, `${prefix}/`).pipe(waiterSnapshots(options))
 * ```
 */
export interface WaiterSnapshotsOptions {
  /** The semaphore prefix. */
  readonly prefix: string
  /** This contender's session. */
  readonly session: string
  /** The slot limit. */
  readonly limit: number
  /** Fairness as the contender decides with it (see `decide`). */
  readonly fairness?: boolean | undefined
  /** The decide step the contender uses (shared per prefix, so a lookup here costs O(1)). */
  readonly decide: DecideStep
  /** A waiter deep in the queue still gets a snapshot at least this often (scheduler ms). */
  readonly refreshMs: number
  /** Scheduler of `now()`; default `asyncScheduler`. */
  readonly scheduler?: SchedulerLike | undefined
}

/**
 * The watch events one contender needs, out of every event of its prefix's watch. A waiter
 * further back than the first `FRONT_PLACES` places has nothing to do on a snapshot that leaves
 * it waiting further back: the write that frees a slot is for the front of the queue, and the
 * snapshot that moves it to the front reaches it. Such snapshots are passed on only once per
 * `refreshMs`, to keep its `rank`, `waiting` and `holders` roughly current and its fairness grace
 * counting; everything else passes at once: every event of a holder, of the front of the queue,
 * of a contender whose key is missing, every prefix problem, every change of decision, every
 * `disconnected` and the first snapshot after it. So a prefix of n waiters in one process runs
 * n O(1) lookups per snapshot, and the whole state machine only for the few it concerns.
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
 * const events = sharedWatch(client, `${prefix}/`).pipe(
 *   waiterSnapshots({ prefix, session, limit: 3, decide: sharedDecide(client, prefix), refreshMs: 1500 }),
 * )
 * ```
 * @param options - The contender, its decide step and the refresh period.
 * @returns An operator on the prefix's watch events.
 */
export function waiterSnapshots(
  options: WaiterSnapshotsOptions,
): MonoTypeOperatorFunction<WatchEvent> {
  const scheduler = options.scheduler ?? asyncScheduler
  const decideOptions = {
    prefix: options.prefix,
    session: options.session,
    limit: options.limit,
    fairness: options.fairness,
  }
  return (events) =>
    defer(() => {
      let passed: Decision | undefined
      let passedAt = 0
      return events.pipe(
        filter((event) => {
          if (event.type !== 'snapshot') {
            passed = undefined // the first snapshot after a failure passes: it reconnects
            return true
          }
          const decision = options.decide(event.snapshot, decideOptions)
          const now = scheduler.now()
          if (
            passed !== undefined &&
            farBack(passed) &&
            farBack(decision) &&
            now - passedAt < options.refreshMs
          ) {
            return false
          }
          passed = decision
          passedAt = now
          return true
        }),
      )
    })
}

function farBack(decision: Decision): boolean {
  return decision.type === 'Wait' && decision.rank !== undefined && decision.rank >= FRONT_PLACES
}
