import type * as E from 'fp-ts/lib/Either.js'
import type * as TE from 'fp-ts/lib/TaskEither.js'
import { Observable } from 'rxjs'
import type { ConsulError } from '../consul/errors.js'

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
  return new Observable((subscriber) => {
    const controller = new AbortController()
    call(controller.signal)().then(
      (result) => {
        subscriber.next(result)
        subscriber.complete()
      },
      // The Consul layer's tasks never reject; this only routes a bug there to the subscriber.
      (error: unknown) => subscriber.error(error),
    )
    return () => controller.abort()
  })
}
