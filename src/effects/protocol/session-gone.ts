import { catchError, of, throwError, type MonoTypeOperatorFunction } from 'rxjs'
import type { ContenderEvent } from '../../core/events.js'
import { isConsulError, isSessionInvalid } from '../call-policy.js'

/**
 * The session-gone rule of a contender's writes, for both performers: a write that Consul answers
 * 500 `invalid session` (it no longer has the session: `retryTransient` passes it on at once) ends
 * with a `session-gone` event, after which the member starts over with a new session; every other
 * failure is passed on as it is.
 *
 * ```
 * write:   ---#         # = 500 invalid session "…"
 * result:  ---(g|)      g = session-gone
 * ```
 *
 * @example
 * fromCall((signal) => client.kv.txn(ops, { signal })).pipe(
 *   mergeMap(orThrow),
 *   retryTransient(scheduler),
 *   map(answer),
 *   endOnSessionGone,
 * )
 */
export const endOnSessionGone: MonoTypeOperatorFunction<ContenderEvent> = catchError(
  (error: unknown) =>
    isConsulError(error) && isSessionInvalid(error)
      ? of<ContenderEvent>({ type: 'session-gone' })
      : throwError(() => error),
)
