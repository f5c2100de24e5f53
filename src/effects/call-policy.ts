import * as E from 'fp-ts/lib/Either.js'
import type * as TE from 'fp-ts/lib/TaskEither.js'
import {
  of,
  retry,
  throwError,
  timer,
  type MonoTypeOperatorFunction,
  type Observable,
  type SchedulerLike,
} from 'rxjs'
import {
  ACL_FAILURES_BEFORE_PERMANENT,
  isAclServerError,
  isTransient,
  persistentAclError,
  type ConsulError,
} from '../consul/errors.js'
import {
  BACKOFF,
  RELEASE_THROTTLE_CAP_MS,
  backoffDelay,
  throttledDelay,
} from '../consul/backoff.js'

// One definition, in backoff.ts; the release paths import it from here.
export { RELEASE_THROTTLE_CAP_MS }

/** Whether a thrown value is one of the Consul layer's typed errors. */
export function isConsulError(value: unknown): value is ConsulError {
  return typeof value === 'object' && value !== null && '_tag' in value
}

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
 * Retries a write a few times (5) after a transient failure, waiting on `scheduler` as
 * `BACKOFF.write` says (200 ms doubling, capped at 2 s, the upper half jittered; a 429/503 waits
 * at least its `Retry-After`, up to MAX_RETRY_AFTER_MS). A session Consul no longer has is not
 * transient, whatever the status says: it is passed on at once so the caller can start over with
 * a new session. A 500 naming an ACL problem that comes back ACL_FAILURES_BEFORE_PERMANENT times
 * in a row is passed on as the permanent PermissionDenied.
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
  return retry<A>({
    count: 5,
    delay: (error: unknown, attempt) => {
      if (!isConsulError(error) || !isTransient(error) || isSessionInvalid(error)) {
        return throwError(() => error)
      }
      // `attempt` counts the failures in a row of this call (1 for the first).
      if (isAclServerError(error) && attempt >= ACL_FAILURES_BEFORE_PERMANENT) {
        return throwError(() => persistentAclError(error, attempt))
      }
      return timer(backoffDelay(BACKOFF.write, attempt, { random, error }), scheduler)
    },
  })
}

/**
 * Runs a Consul call again after a transient failure, up to `attempts` calls in all, 100 ms
 * doubling between them: for the release paths, which are Promises because close() awaits them.
 * A release that gives up on the first 500 or reset connection leaves the session to its TTL,
 * which a flaky network makes common. A 429/503 waits what `Retry-After` asks, but at most
 * RELEASE_THROTTLE_CAP_MS: close() should not hang for a rate limit, and the TTL cleans up after
 * a release that gave up.
 *
 * @example
 * const deleted = await withTransientRetries(client.kv.delete(key))
 * @returns The call's last answer.
 */
export async function withTransientRetries<A>(
  call: TE.TaskEither<ConsulError, A>,
  attempts = 4,
): Promise<E.Either<ConsulError, A>> {
  for (let attempt = 1; ; attempt++) {
    const result = await call()
    if (E.isRight(result) || attempt >= attempts || !isTransient(result.left)) return result
    const delayMs = throttledDelay(result.left, 100 * 2 ** (attempt - 1), RELEASE_THROTTLE_CAP_MS)
    await new Promise((resume) => setTimeout(resume, delayMs))
  }
}
