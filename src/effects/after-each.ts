import { Observable, type MonoTypeOperatorFunction } from 'rxjs'

/**
 * Passes each value on, then calls `act` with it, unless the subscription was torn down during
 * the delivery; an error thrown by `act` ends the stream with that error. Unlike
 * `mergeMap(v => concat(of(v), ...))` it subscribes nothing per value, which matters on a path
 * every contender of a prefix runs on every snapshot.
 *
 * ```
 * source: --a--b--c|
 * act:      ^  ^  ^ (called after each value is delivered; c's act throws E)
 * result: --a--b--(c#)
 * ```
 *
 * @example
 * states.pipe(afterEach((s) => { if (s.problem) throw toError(s.problem) }))
 * @param act - What to do once a value was delivered downstream.
 * @returns The operator.
 */
export function afterEach<T>(act: (value: T) => void): MonoTypeOperatorFunction<T> {
  return (source) =>
    new Observable<T>((subscriber) =>
      source.subscribe({
        next: (value) => {
          subscriber.next(value)
          // Torn down while the value was delivered (e.g. the last subscriber errored on it):
          // acting now would act for nobody, or bring back state the teardown cleared.
          if (subscriber.closed) return
          try {
            act(value)
          } catch (error: unknown) {
            subscriber.error(error)
          }
        },
        error: (error: unknown) => subscriber.error(error),
        complete: () => subscriber.complete(),
      }),
    )
}
