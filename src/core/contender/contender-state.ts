import {
  EMPTY,
  Subject,
  asyncScheduler,
  connect,
  defer,
  distinctUntilChanged,
  endWith,
  ignoreElements,
  map,
  merge,
  scan,
  startWith,
  switchMap,
  takeUntil,
  takeWhile,
  tap,
  timer,
  type Observable,
  type OperatorFunction,
} from 'rxjs'
import type { ContenderInput } from './contender-input.js'
import {
  initialContenderState,
  type ContenderState,
  type ContenderStateOptions,
} from './contender-state-model.js'
import type { ContenderEvent } from '../events.js'
import { reduceContender } from './reduce-contender.js'
import { sameContenderState } from './same-contender-state.js'

/**
 * Turns the events of the effects layer into the contender's state: whether it holds a slot (and
 * why that last changed), its fencing token and lease deadline, the last decision and view, and
 * the `next` write to make. Emits the initial state at once, then each state that differs from the
 * one before; its own timers (lease deadline, fairness grace) run on `options.scheduler`, so the
 * lease is dropped at exactly its deadline with no further event.
 *
 * ```
 * events:  -c--s-----k--s----------------|      c: session-created (ttl 100, sentAt 1)
 *                                               s: snapshot, k: cas-result ok
 * holding: f---------t-----------f-------|      (lease deadline 1 + 100 - 10 = 91: 'lease-expired')
 * ```
 *
 * How the effects layer drives it:
 * - feed every watch event (`snapshot`, `disconnected`), `session-created` (with the time the
 *   create request was sent), each `session-renewed`/`renewal-failed`/`session-gone` of the
 *   lease, the answer of each CAS as `cas-result` (only real answers: a transport error is
 *   retried by the effects layer or left to the next snapshot), and `release-requested`; when a
 *   write is refused for a reason no snapshot will show (the lock's lock-delay), feed `retry`
 *   with the delay after which the core should decide again on its last snapshot;
 * - act on `next`, once per new object: `states.pipe(map(s => s.next), distinctUntilChanged())`.
 *   `TryAcquire`: PUT `next.body` to `lockKey(prefix)` with `?cas=next.cas` and SEMAPHORE_FLAGS,
 *   then feed `cas-result`. `NotContending`: acquire `contenderKey(prefix, session)` with the
 *   session (and SEMAPHORE_FLAGS); the next snapshot shows it. Undefined: nothing to write;
 * - with an `options.decide` that calls `decideLeaderKey` (see DecideStep), the same machine runs the
 *   single-key lock: the `TryAcquire` is then a txn `lock` of `<prefix>/.lock` with the session
 *   and LOCK_FLAGS, answered by `cas-result` (holders [session] when committed) or `retry`;
 * - stop on `problem` (Conflict, LimitConflict, CorruptLock): never write over it;
 * - release (CAS out of `.lock`, delete the contender key, destroy the session) after feeding
 *   `release-requested`, which drops `holding` at once and clears `next` for good.
 *
 * When the events complete, a last state with `holding: false` (reason 'released') is emitted if
 * the contender was holding, then the states complete; an error of the events is passed on (treat
 * it as not holding).
 *
 * @example
 * const states = events.pipe(contenderState({ prefix: 'svc/lock', limit: 2 }))
 * states.pipe(map((s) => s.next), distinctUntilChanged()).subscribe(write)
 * @param options - Prefix, limit, fairness, lease margin, scheduler and decide step.
 * @returns An operator from ContenderEvent to ContenderState.
 */
export function contenderState(
  options: ContenderStateOptions,
): OperatorFunction<ContenderEvent, ContenderState> {
  if (!Number.isSafeInteger(options.limit) || options.limit < 1) {
    throw new RangeError(`limit must be a positive integer, got ${options.limit}`)
  }
  const scheduler = options.scheduler ?? asyncScheduler
  return (events) =>
    defer(() => {
      const wake = new Subject<ContenderInput>()
      const inputs: Observable<ContenderInput> = merge(
        events.pipe(endWith({ type: 'end' } as const)),
        wake,
      )
      return inputs.pipe(
        takeWhile((input) => input.type !== 'end', true),
        scan(
          (state, input) => reduceContender(state, input, scheduler.now(), options),
          initialContenderState,
        ),
        startWith(initialContenderState),
        distinctUntilChanged(sameContenderState),
        connect((states) =>
          merge(
            states,
            states.pipe(
              map((state) => state.wakeAt),
              distinctUntilChanged(),
              switchMap((at) =>
                at === undefined ? EMPTY : timer(Math.max(0, at - scheduler.now()), scheduler),
              ),
              tap(() => wake.next({ type: 'wake' })),
              ignoreElements(),
              takeUntil(states.pipe(ignoreElements(), endWith(null))),
            ),
          ),
        ),
      )
    })
}
