import type { Observable } from 'rxjs'
import { closeOnDispose } from '../handle/close-on-dispose.js'
import type { Semaphore, SemaphoreState } from '../recipes/semaphore.js'
import { fakeContender, type FakeHolding } from './fake-contender.js'

/**
 * Options of `fakeSemaphore(...)`.
 *
 * @example
 * ```ts
 * const options: FakeSemaphoreOptions = { holding: cold('f--t----f', { t: true, f: false }), limit: 3 }
 * ```
 */
export interface FakeSemaphoreOptions {
  /**
   * Whether the fake holds a slot, over time: `true`, `false`, or a `TransitionReason` that says
   * why (see `FakeHolding`). Values that repeat the current one are dropped, as a real contender
   * never repeats itself. Subscribed when `holding$` or `state$` is, like a real contender.
   */
  readonly holding: Observable<FakeHolding>
  /** `state$`'s `limit`; default 1. */
  readonly limit?: number
  /** `state$`'s `session`; default 'fake-session'. */
  readonly session?: string
  /** The fencing token of the first acquisition; each later one adds 1. Default 1n. */
  readonly firstFencingToken?: bigint
}

/** A `Semaphore` driven by the test, which counts its `close()` calls. */
export interface FakeSemaphore extends Semaphore {
  /** How many times `close()` was called (disposing calls it too). */
  readonly closeCount: number
}

/**
 * A `Semaphore` whose `holding$` and `state$` follow the test's `holding` stream instead of
 * Consul, for marble tests of code that uses a semaphore. It keeps the real rules: `holding$`
 * starts with false and never repeats; the fencing token is there only while holding and greater
 * for every new acquisition; `close()` says false (reason 'released') and completes the streams.
 * Its state lists only itself: in `holders` while holding, never in `waiting`, always connected.
 *
 *     holding:   -f--t------f--r--   r: 'restored'
 *     holding$:  f---t------f--t--
 *     state$:    a---b------c--d--   a: no reason yet, b: 'acquired' with token 1n,
 *                                    c: 'removed', no token, d: 'restored' with token 1n
 *
 * @example
 * ```ts
 * testScheduler.run(({ cold, expectObservable }) => {
 *   const sem = fakeSemaphore({ holding: cold('f--t----f', { t: true, f: false }), limit: 3 })
 *   const work$ = sem.holding$.pipe(switchMap((held) => (held ? interval(2) : EMPTY)))
 *   expectObservable(work$).toBe('-----0-1-', { 0: 0, 1: 1 })
 * })
 * ```
 * @param options - The test's `holding` stream, and optionally `limit`, `session` and the first
 *   fencing token.
 * @returns The fake semaphore; `closeCount` says how often it was closed.
 */
export function fakeSemaphore(options: FakeSemaphoreOptions): FakeSemaphore {
  const limit = options.limit ?? 1
  const session = options.session ?? 'fake-session'
  const holders = [session]
  const fake = fakeContender<SemaphoreState>({
    holding: options.holding,
    firstFencingToken: options.firstFencingToken,
    toState: ({ holding, reason, fencingToken, revokeRequested }) => ({
      holding,
      reason,
      session,
      contending: true,
      fencingToken,
      holders: holding ? holders : [],
      waiting: [],
      rank: undefined,
      estimatedWaitMs: undefined,
      limit,
      connected: true,
      leaseDeadline: undefined,
      ...(revokeRequested === undefined ? {} : { revokeRequested }),
    }),
  })
  return closeOnDispose({
    state$: fake.state$,
    holding$: fake.holding$,
    close: fake.close,
    isHolding: fake.isHolding,
    assertHolding: fake.assertHolding,
    fencedTxn: fake.fencedTxn,
    get closeCount() {
      return fake.closeCount()
    },
  })
}
