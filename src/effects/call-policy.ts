import * as E from 'fp-ts/lib/Either.js'
import type * as TE from 'fp-ts/lib/TaskEither.js'
import {
  Observable,
  of,
  throwError,
  type Observer,
  type Subscription,
  type MonoTypeOperatorFunction,
  type SchedulerLike,
} from 'rxjs'
import type { ConsulError } from '../base/consul-error.js'
import { isConsulError } from '../base/failure-kinds.js'
import { judgeFailure } from '../base/failure-verdict.js'
import { BACKOFF, backoffDelay } from '../base/backoff.js'

// The effects layer's callers ask here whether a thrown value is a ConsulError.
export { isConsulError } from '../base/failure-kinds.js'

/** Consul's words for a write that names a session it no longer has (KV 500 body, txn error). */
export function namesInvalidSession(text: string): boolean {
  return /invalid session|missing session/i.test(text)
}

/** Consul answers 500 `invalid session "…"` when a write names a session it no longer has. */
export function isSessionInvalid(error: ConsulError): boolean {
  return error._tag === 'ServerError' && namesInvalidSession(error.body)
}

/** An Either of the Consul layer as an Observable that errors with its Left. */
export function orThrow<A>(result: E.Either<ConsulError, A>): Observable<A> {
  return E.isLeft(result) ? throwError(() => result.left) : of(result.right)
}

/**
 * Retries a write a few times (5) after a failure that `judgeFailure` says to retry, waiting on
 * `scheduler` as `BACKOFF.write` says (200 ms doubling, capped at 2 s, the upper half jittered; a
 * 429/503 waits at least its `Retry-After`, up to MAX_RETRY_AFTER_MS). A session Consul no longer
 * has is not transient, whatever the status says: it is passed on at once so the caller can start
 * over with a new session. A 500 naming an ACL problem that comes back
 * ACL_FAILURES_BEFORE_PERMANENT times in a row is passed on as the permanent PermissionDenied.
 *
 * ```
 * call:    #  (≈200 ms)  #  (≈400 ms)  a|     # a transient failure: the call is made anew
 * result:  ----------------------------a|
 * ```
 *
 * @example
 * fromCall((signal) => client.kv.put(key, value, { signal })).pipe(
 *   mergeMap(orThrow),
 *   retryTransient(scheduler),
 * )
 * @param scheduler - Where the delays are waited (a TestScheduler in specs).
 * @param random - Source of the jitter, in [0, 1); default Math.random.
 * @returns The operator: the source's values, or its last error.
 */
export function retryTransient<A>(
  scheduler: SchedulerLike,
  random: () => number = Math.random,
): MonoTypeOperatorFunction<A> {
  // One Observable per subscription rather than `defer` around RxJS's `retry` and a `timer` per
  // wait: every write of a busy pool passes here, and the operators' subscribers were most of
  // what a write allocates.
  return (source) =>
    new Observable<A>((subscriber) => {
      // The ACL failures in a row of this subscription, across the retries it makes.
      let aclInRow = 0
      // The failures in a row of this call (1 for the first), as `retry` counts its attempts.
      let attempt = 0
      let call: Subscription | undefined
      let wait: Subscription | undefined
      const failed = (error: unknown): void => {
        if (++attempt > RETRIES || !isConsulError(error) || isSessionInvalid(error)) {
          return subscriber.error(error)
        }
        const verdict = judgeFailure(error, aclInRow)
        if (verdict.verdict === 'permanent') return subscriber.error(verdict.error)
        aclInRow = verdict.aclInRow
        const delay = backoffDelay(BACKOFF.write, attempt, { random, error })
        wait = scheduler.schedule(makeCall, Math.max(0, delay))
      }
      const observer: Partial<Observer<A>> = {
        next: (value) => subscriber.next(value),
        error: failed,
        complete: () => subscriber.complete(),
      }
      function makeCall(): void {
        wait = undefined
        call = source.subscribe(observer)
      }
      makeCall()
      return () => {
        call?.unsubscribe()
        wait?.unsubscribe()
      }
    })
}

/** How many times `retryTransient` makes a call again. */
const RETRIES = 5

/**
 * Runs one Consul call per subscription as an Observable of its Either, aborting the request when
 * the subscriber unsubscribes first.
 *
 * ```
 * subscribe ──── answer
 * -------------(r|)
 * ```
 *
 * @example
 * fromCall((signal) => client.session.renew(id, { signal })).subscribe(console.log)
 * @param call Builds the TaskEither for a given AbortSignal.
 * @returns One `Either` then completion.
 */
export function fromCall<A>(
  call: (signal: AbortSignal) => TE.TaskEither<ConsulError, A>,
): Observable<E.Either<ConsulError, A>> {
  return new Observable((subscriber) =>
    callFor(subscriber, call, (result) => {
      subscriber.next(result)
      subscriber.complete()
    }),
  )
}

/**
 * `fromCall(call).pipe(mergeMap(orThrow))` in one Observable: the call's Right then completion,
 * or its Left as the error. `answered` is told each Right first, before the subscriber.
 *
 * ```
 * subscribe ──── answer
 * -------------(a|)      or  -------------#
 * ```
 *
 * @example
 * rightOf((signal) => client.kv.txn(ops, { signal })).pipe(retryTransient(scheduler))
 * @param call Builds the TaskEither for a given AbortSignal.
 * @returns One value then completion, or the ConsulError.
 */
export function rightOf<A>(
  call: (signal: AbortSignal) => TE.TaskEither<ConsulError, A>,
  answered?: (value: A) => void,
): Observable<A> {
  return new Observable((subscriber) =>
    callFor(subscriber, call, (result) => {
      if (E.isLeft(result)) return subscriber.error(result.left)
      answered?.(result.right)
      subscriber.next(result.right)
      subscriber.complete()
    }),
  )
}

/**
 * Makes `call` for one subscription and hands its result to `answer`; returns the teardown,
 * which aborts the request when it is still in flight.
 */
function callFor<A>(
  subscriber: { readonly error: (error: unknown) => void },
  call: (signal: AbortSignal) => TE.TaskEither<ConsulError, A>,
  answer: (result: E.Either<ConsulError, A>) => void,
): () => void {
  const controller = new AbortController()
  let answered = false
  call(controller.signal)().then(
    (result) => {
      answered = true
      answer(result)
    },
    // The Consul layer's tasks never reject; this only routes a bug there to the subscriber.
    (error: unknown) => subscriber.error(error),
  )
  // Only a call still in flight is aborted: an abort makes a DOMException with its stack,
  // which every answered write would otherwise pay for nothing.
  return () => {
    if (!answered) controller.abort()
  }
}
