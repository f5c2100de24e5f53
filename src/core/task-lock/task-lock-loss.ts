import {
  EMPTY,
  asyncScheduler,
  connect,
  filter,
  map,
  merge,
  of,
  switchMap,
  take,
  timer,
  type Observable,
  type OperatorFunction,
  type SchedulerLike,
} from 'rxjs'
import type { WatchEvent } from '../../base/kv-snapshot.js'

/** What tells a task whether its key's lock still holds: the watch, and the session's lease. */
export type TaskLockInput =
  | WatchEvent
  /** The session's lease is trusted until `deadline` (scheduler ms; see `leaseDeadline`). */
  | { readonly type: 'lease'; readonly deadline: number }
  /** Consul says the session is gone (renewal answered 404, or the lease failed for good). */
  | { readonly type: 'session-gone' }

/**
 * Why a task's lock was lost (the `reason` of an `exclusive` result with outcome 'lost').
 *
 * @example
 * ```ts
 * const explain = (reason: TaskLossReason) => (reason === 'removed' ? 'no longer ours' : reason)
 * tasks$.pipe(exclusive({ keyOf, run })).subscribe((result) => {
 *   if (result.outcome === 'lost') console.warn(`${result.key}: ${explain(result.reason)}`)
 * })
 * ```
 */
export type TaskLossReason =
  /** The key shows another session or none, or is deleted. */
  | 'removed'
  /** The watch of the key failed: nobody can say the key is still ours. */
  | 'watch-failed'
  /** No renewal got through before the lease deadline (Consul unreachable, for instance). */
  | 'lease-expired'
  /** Consul invalidated the session (renewal answered 404, or the lease failed for good). */
  | 'session-invalidated'

/** What `taskLockLoss` watches. */
export interface TaskLockLossOptions {
  /** The task's key. */
  readonly key: string
  /** The session that acquired it. */
  readonly session: string
  /** The ModifyIndex the acquisition wrote: older snapshots cannot speak about it. */
  readonly acquiredIndex: bigint
  readonly scheduler?: SchedulerLike | undefined
}

/**
 * Watches one held task key and says, once, why it stopped being held: the first snapshot (at or
 * after the acquisition) that shows the key with another session or none, a watch failure, the
 * lease deadline passing with no renewal (a timer: no event is needed when Consul is unreachable),
 * or the session gone. Same holding rules as the contender's core (docs/safety.md).
 *
 * ```
 * inputs:  -L--s---L--s------x-    L: lease until +50 ms, s: snapshot showing the key ours
 * output:  ------------------(r|)  x: snapshot without the key → r: 'removed'
 * inputs:  -L--s--d-           d: watch failed → w: 'watch-failed' (one tick later, so that a
 * output:  -------(w|)             replayed failure already followed by a snapshot is ignored)
 * inputs:  -L--s-----------        (no renewal)
 * output:  ------------(e|)        e: 'lease-expired' at the deadline
 * ```
 *
 * @example
 * inputs.pipe(taskLockLoss({ key: 'jobs/task/7', session, acquiredIndex: 42n }))
 *   .subscribe((reason) => controller.abort(reason))
 * @param options - The key, the session, the acquisition's index, the scheduler.
 * @returns An operator emitting one reason then completing; nothing while the key holds.
 */
export function taskLockLoss(
  options: TaskLockLossOptions,
): OperatorFunction<TaskLockInput, TaskLossReason> {
  const scheduler = options.scheduler ?? asyncScheduler
  return (inputs) =>
    inputs.pipe(
      connect((shared) =>
        merge(
          shared.pipe(
            filter((input) => input.type === 'lease'),
            // Each renewal moves the deadline: the timer of the previous one is dropped.
            switchMap(({ deadline }) =>
              timer(Math.max(0, deadline - scheduler.now()), scheduler).pipe(
                map((): TaskLossReason => 'lease-expired'),
              ),
            ),
          ),
          shared.pipe(
            filter((input) => input.type === 'session-gone'),
            map((): TaskLossReason => 'session-invalidated'),
          ),
          shared.pipe(
            filter((input) => input.type === 'snapshot' || input.type === 'disconnected'),
            // Latest watch event wins: a shared watch replays its last two events on subscribe,
            // and a failure followed at once by a snapshot is a failure that is already over.
            switchMap((event) => watchVerdict(event, options, scheduler)),
          ),
        ),
      ),
      take(1),
    )
}

function watchVerdict(
  event: WatchEvent,
  options: TaskLockLossOptions,
  scheduler: SchedulerLike,
): Observable<TaskLossReason> {
  if (event.type === 'disconnected') {
    return timer(0, scheduler).pipe(map((): TaskLossReason => 'watch-failed'))
  }
  const { snapshot } = event
  if (snapshot.index < options.acquiredIndex) return EMPTY
  const entry = snapshot.entries.find((e) => e.key === options.key)
  return entry?.session === options.session ? EMPTY : of<TaskLossReason>('removed')
}
