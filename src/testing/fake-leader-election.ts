import { distinctUntilChanged, map, type Observable } from 'rxjs'
import { closeOnDispose } from '../handle/close-on-dispose.js'
import type { Leader } from '../core/leader-key/decide-leader-key.js'
import type { LeaderElection, LeaderElectionState } from '../recipes/leader-election.js'
import { fakeContender, type FakeHolding } from './fake-contender.js'

/**
 * Options of `fakeLeaderElection(...)`.
 *
 * @example
 * ```ts
 * const options: FakeLeaderElectionOptions = { holding: cold('f-t', { t: true, f: false }) }
 * ```
 */
export interface FakeLeaderElectionOptions {
  /**
   * Whether the fake leads, over time: `true`, `false`, or a `TransitionReason` that says why (see
   * `FakeHolding`). Values that repeat the current one are dropped.
   */
  readonly holding: Observable<FakeHolding>
  /** `state$`'s `session` and the leader's session while the fake leads; default 'fake-session'. */
  readonly session?: string
  /** The leader's value while the fake leads; default 'fake-leader'. */
  readonly value?: string
  /** The fencing token of the first acquisition; each later one adds 1. Default 1n. */
  readonly firstFencingToken?: bigint
}

/** A `LeaderElection` driven by the test, which counts its `close()` calls. */
export interface FakeLeaderElection extends LeaderElection {
  /** How many times `close()` was called (disposing calls it too). */
  readonly closeCount: number
}

/**
 * A `LeaderElection` whose `holding$`, `state$` and `leader$` follow the test's `holding` stream
 * instead of Consul, with the rules of the real one (see `fakeSemaphore`). The fake knows no other
 * contender: `leader$` is itself while it leads and null otherwise. Unlike the real `leader$`,
 * subscribing to it subscribes to the test's stream.
 *
 *     holding:   -f--t------f--
 *     holding$:  f---t------f--
 *     leader$:   n---s------n--   (n null, s { session, value } of the fake)
 *
 * @example
 * ```ts
 * testScheduler.run(({ cold, expectObservable }) => {
 *   const election = fakeLeaderElection({ holding: cold('f-t', { t: true, f: false }) })
 *   expectObservable(election.leader$.pipe(map((l) => l?.value ?? 'none'))).toBe('n-v', {
 *     n: 'none',
 *     v: 'fake-leader',
 *   })
 * })
 * ```
 * @param options - The test's `holding` stream, and optionally `session`, `value` and the first
 *   fencing token.
 * @returns The fake election; `closeCount` says how often it was closed.
 */
export function fakeLeaderElection(options: FakeLeaderElectionOptions): FakeLeaderElection {
  const session = options.session ?? 'fake-session'
  const self: Leader = { session, value: options.value ?? 'fake-leader' }
  const fake = fakeContender<LeaderElectionState>({
    holding: options.holding,
    firstFencingToken: options.firstFencingToken,
    toState: ({ holding, reason, fencingToken, revokeRequested }) => ({
      holding,
      reason,
      session,
      fencingToken,
      leader: holding ? self : null,
      connected: true,
      leaseDeadline: undefined,
      ...(revokeRequested === undefined ? {} : { revokeRequested }),
    }),
  })
  return closeOnDispose({
    state$: fake.state$,
    holding$: fake.holding$,
    leader$: fake.state$.pipe(
      map((state) => state.leader),
      distinctUntilChanged(),
    ),
    close: fake.close,
    isHolding: fake.isHolding,
    assertHolding: fake.assertHolding,
    fencedTxn: fake.fencedTxn,
    get closeCount() {
      return fake.closeCount()
    },
  })
}
