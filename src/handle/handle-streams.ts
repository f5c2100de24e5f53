import { ReplaySubject, defer, distinctUntilChanged, map, share, type Observable } from 'rxjs'

/**
 * The `state$` and `holding$` of a contender handle, from its cold stream of states: `state$` is
 * shared (the first subscriber starts it, late ones get the current state at once, the last
 * unsubscribe stops it, and a new subscriber after that starts afresh); `holding$` is its distinct
 * boolean projection, whose operators are made when it is subscribed (a handle whose `holding$`
 * nobody reads keeps none). The real handles and the test doubles of
 * `rx-consul-semaphore/testing` share them the same way.
 *
 * @example
 * const { state$, holding$ } = handleStreams(states)
 * @param states - The contender's states, cold.
 * @returns The two public streams.
 */
export function handleStreams<S extends { readonly holding: boolean }>(
  states: Observable<S>,
): { readonly state$: Observable<S>; readonly holding$: Observable<boolean> } {
  const state$ = states.pipe(
    share({
      connector: () => new ReplaySubject<S>(1),
      resetOnRefCountZero: true,
      resetOnComplete: true,
      resetOnError: true,
    }),
  )
  return {
    state$,
    holding$: defer(() => state$.pipe(holdingOf)),
  }
}

/** The distinct `holding` of states. */
const holdingOf = <S extends { readonly holding: boolean }>(
  states: Observable<S>,
): Observable<boolean> =>
  states.pipe(
    map((state) => state.holding),
    distinctUntilChanged(),
  )
