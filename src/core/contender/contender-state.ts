import {
  EMPTY,
  Subject,
  asyncScheduler,
  connect,
  defer,
  distinctUntilChanged,
  endWith,
  filter,
  ignoreElements,
  map,
  merge,
  mergeMap,
  scan,
  startWith,
  switchMap,
  takeUntil,
  takeWhile,
  timer,
  type Observable,
  type OperatorFunction,
} from 'rxjs'
import type { ContenderInput, RefenceInput } from './contender-input.js'
import {
  initialContenderState,
  type ContenderAction,
  type ContenderState,
  type ContenderStateOptions,
} from './contender-state-model.js'
import { contenderStep, type ContenderCommand, type ContenderStep } from './contender-step.js'
import type { ContenderEvent } from '../events.js'
import { sameContenderState } from './same-contender-state.js'

/**
 * Carries out a contender's writes: given an action, returns the Observable of the events its
 * write causes (a `cas-result`, a `retry`, or none), subscribed when the step asks for the write
 * and unsubscribed when it no longer wants it.
 */
export type ContenderPerformer = (action: ContenderAction) => Observable<ContenderEvent>

const firstStep: ContenderStep = { state: initialContenderState, commands: [] }

/**
 * The write a step's commands leave running: an action to start (cancelling the one in flight),
 * null to stop the one in flight, or undefined to leave it as it is.
 *
 * @example
 * writeAfter([{ type: 'cancel-write' }, { type: 'wake', at: 90 }]) // null
 * @param commands - The commands of one step.
 * @returns The action to run now, null for none, undefined for no change.
 */
export function writeAfter(
  commands: readonly ContenderCommand[],
): ContenderAction | null | undefined {
  let write: ContenderAction | null | undefined
  for (const command of commands) {
    if (command.type === 'write') write = command.action
    else if (command.type === 'cancel-write' || command.type === 'end') write = null
  }
  return write
}

/**
 * Scans the effects layer's events through `contenderStep`, the contender's one pure step, and
 * emits each step (the state after it and its commands): the initial one at once, then every step
 * that changed the state or asked for something. It interprets the `wake` commands itself (one
 * timer on `options.scheduler`, fed back as `wake`), so the lease is dropped at exactly its
 * deadline with no further event; given `perform`, it carries out the writes too, as the member
 * does: a `write` subscribes `perform(action)` and feeds its events back, a `cancel-write` or `end`
 * unsubscribes it, and its completion is fed back as `written`.
 *
 * ```
 * events:   -c--s-----k---|     c: session-created, s: snapshot (a free slot), k: cas-result ok
 * commands: -w--W-----C---|     w: wake (lease deadline), W: write TryAcquire, C: cancel-write
 * perform:  ----^-----!         (the CAS, with `perform`)
 * ```
 *
 * An `end` command ends nothing here: the steps go on until the events complete, so that a spec
 * can show what the state does after it.
 *
 * @example
 * events.pipe(contenderSteps({ prefix: 'svc/lock', limit: 2 }, (action) => write(action)))
 * @param options - Prefix, limit, fairness, lease margin, scheduler and decide step.
 * @param perform - Carries out a write (optional: without it, writes are only commands).
 * @returns An operator from ContenderEvent to ContenderStep.
 */
export function contenderSteps(
  options: ContenderStateOptions,
  perform?: ContenderPerformer,
): OperatorFunction<ContenderEvent | RefenceInput, ContenderStep> {
  if (!Number.isSafeInteger(options.limit) || options.limit < 1) {
    throw new RangeError(`limit must be a positive integer, got ${options.limit}`)
  }
  const scheduler = options.scheduler ?? asyncScheduler
  return (events) =>
    defer(() => {
      const fedBack = new Subject<ContenderInput>()
      const inputs: Observable<ContenderInput> = merge(
        events.pipe(endWith({ type: 'end' } as const)),
        fedBack,
      )
      return inputs.pipe(
        takeWhile((input) => input.type !== 'end', true),
        scan(
          (step, input) => contenderStep(step.state, input, scheduler.now(), options),
          firstStep,
        ),
        startWith(firstStep),
        connect((steps) => {
          const wakes = steps.pipe(
            mergeMap((step) => step.commands),
            filter((command) => command.type === 'wake'),
            switchMap(({ at }) =>
              at === undefined ? EMPTY : timer(Math.max(0, at - scheduler.now()), scheduler),
            ),
            map((): ContenderInput => ({ type: 'wake' })),
          )
          const writes =
            perform === undefined
              ? EMPTY
              : steps.pipe(
                  map((step) => writeAfter(step.commands)),
                  filter((write) => write !== undefined),
                  switchMap((action) =>
                    action === null
                      ? EMPTY
                      : perform(action).pipe(endWith<ContenderInput>({ type: 'written', action })),
                  ),
                )
          const fedBackInputs = merge(wakes, writes).pipe(
            map((input) => fedBack.next(input)),
            ignoreElements(),
            takeUntil(steps.pipe(ignoreElements(), endWith(null))),
          )
          return merge(
            steps.pipe(
              distinctUntilChanged(
                (before, after) =>
                  after.commands.length === 0 && sameContenderState(before.state, after.state),
              ),
            ),
            fedBackInputs,
          )
        }),
      )
    })
}

/**
 * Turns the events of the effects layer into the contender's state: whether it holds a slot (and
 * why that last changed), its fencing token and lease deadline, the last decision and view, and
 * the `write` to make to make. Emits the initial state at once, then each state that differs from the
 * one before; the states of `contenderSteps` (the same pure step the library runs), so its timers
 * (lease deadline, fairness grace) run on `options.scheduler`, and the lease is dropped at exactly
 * its deadline with no further event.
 *
 * ```
 * events:  -c--s-----k--s----------------|      c: session-created (ttl 100, sentAt 1)
 *                                               s: snapshot, k: cas-result ok
 * holding: f---------t-----------f-------|      (lease deadline 1 + 100 - 10 = 91: 'lease-expired')
 * ```
 *
 * How the effects layer drives it (or let `contenderSteps` carry out the writes):
 * - feed every watch event (`snapshot`, `disconnected`), `session-created` (with the time the
 *   create request was sent), each `session-renewed`/`renewal-failed`/`session-gone` of the
 *   lease, the answer of each CAS as `cas-result` (only real answers: a transport error is
 *   retried by the effects layer or left to the next snapshot), and `release-requested`; when a
 *   write is refused for a reason no snapshot will show (the lock's lock-delay), feed `retry`
 *   with the delay after which the core should decide again on its last snapshot;
 * - act on `write`, once per new object: `states.pipe(map(s => s.write), distinctUntilChanged())`.
 *   `TryAcquire`: PUT `next.body` to `lockKey(prefix)` with `?cas=next.cas` and SEMAPHORE_FLAGS,
 *   then feed `cas-result`. `NotContending`: acquire `contenderKey(prefix, session)` with the
 *   session (and SEMAPHORE_FLAGS); the next snapshot shows it. Undefined: nothing to write;
 * - with an `options.decide` that calls `decideLeaderKey` (see DecideStep), the same machine runs
 *   the single-key lock: the `TryAcquire` is then a txn `lock` of `<prefix>/.lock` with the
 *   session and LOCK_FLAGS, answered by `cas-result` (holders [session] when committed) or `retry`;
 * - stop on `problem` (Conflict, LimitConflict, CorruptLock): never write over it;
 * - release (CAS out of `.lock`, delete the contender key, destroy the session) after feeding
 *   `release-requested`, which drops `holding` at once and clears `write` for good.
 *
 * When the events complete, a last state with `holding: false` (reason 'released') is emitted if
 * the contender was holding, then the states complete; an error of the events is passed on (treat
 * it as not holding).
 *
 * @example
 * const states = events.pipe(contenderState({ prefix: 'svc/lock', limit: 2 }))
 * states.pipe(map((s) => s.write), distinctUntilChanged()).subscribe(write)
 * @param options - Prefix, limit, fairness, lease margin, scheduler and decide step.
 * @returns An operator from ContenderEvent to ContenderState.
 */
export function contenderState(
  options: ContenderStateOptions,
): OperatorFunction<ContenderEvent, ContenderState> {
  const steps = contenderSteps(options)
  return (events) =>
    events.pipe(
      steps,
      map((step) => step.state),
      distinctUntilChanged(sameContenderState),
    )
}
