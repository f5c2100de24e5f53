import {
  BehaviorSubject,
  EMPTY,
  NEVER,
  catchError,
  concat,
  defer,
  filter,
  finalize,
  map,
  of,
  takeUntil,
  tap,
  throwError,
  type Observable,
} from 'rxjs'
import type { TransitionReason } from '../core/events.js'
import type { RevokeRequest } from '../core/revoke/revoke-request.js'
import { SemaphoreError, toSemaphoreError } from '../base/semaphore-error.js'
import type { SlotGuard } from '../handle/slot-guard.js'
import { serializable } from '../handle/serializable-state.js'
import { handleStreams } from '../handle/handle-streams.js'

/**
 * What a test feeds a fake contender: `true` (a new tenure, reason 'acquired'), `false` (lost,
 * reason 'removed'), or a reason, which says both the direction and why: 'acquired' and
 * 'restored' rise, every other reason falls. `{ revokeRequested }` asks the holder to give its
 * slot back: while it holds, its state says `revokeRequested` until the tenure ends (ignored while
 * it does not hold, as a real request is).
 *
 * @example
 * ```ts
 * const holding: Observable<FakeHolding> = cold('f-t--w-r', {
 *   t: true,
 *   f: false,
 *   w: 'watch-failed',
 *   r: 'restored',
 * })
 * const asked: FakeHolding = { revokeRequested: { graceMs: 30_000, reason: 'deploy' } }
 * ```
 */
export type FakeHolding =
  | boolean
  | TransitionReason
  | {
      /** The request the holder sees (`revokeRequested` of its state). */
      readonly revokeRequested: RevokeRequest
    }

/** Whether a fake holds, why it last changed, the fencing token of its tenure, and a request. */
export interface FakeTenure {
  readonly holding: boolean
  readonly reason: TransitionReason | undefined
  readonly fencingToken: bigint | undefined
  readonly revokeRequested?: RevokeRequest | undefined
}

/** @internal What a fake contender needs from its kind. */
export interface FakeContenderSpec<S extends { readonly holding: boolean }> {
  readonly holding: Observable<FakeHolding>
  readonly firstFencingToken: bigint | undefined
  readonly toState: (tenure: FakeTenure) => S
}

/** @internal The streams and close of a fake, before its kind adds its own (`leader$`). */
export interface FakeContender<S> extends SlotGuard {
  readonly state$: Observable<S>
  readonly holding$: Observable<boolean>
  readonly close: () => Promise<void>
  readonly closeCount: () => number
}

const notHolding: FakeTenure = { holding: false, reason: undefined, fencingToken: undefined }

/**
 * The lifecycle both fakes share, with the rules of the real contenders: `state$` starts not
 * holding, changes only when `holding` does (a value that repeats the current one is dropped), has
 * a fencing token only while holding, a new and greater one for every 'acquired' and the same one
 * for 'restored'. The streams are shared as the real ones are, and stay open when the test's
 * stream completes (a real contender lives until `close()`). `close()` is counted and, when
 * holding, says false with reason 'released' before the streams complete. An error of the test's
 * stream arrives as a SemaphoreError, after a false when holding.
 *
 * @example
 * ```ts
 * const fake = fakeContender({ holding, firstFencingToken: 1n, toState: (t) => t })
 * ```
 * @param spec - The test's stream, the first fencing token, and the state of the fake's kind.
 * @returns The streams, `close()`, and how often it was called.
 * @internal
 */
export function fakeContender<S extends { readonly holding: boolean }>(
  spec: FakeContenderSpec<S>,
): FakeContender<S> {
  const closing = new BehaviorSubject(false)
  let closeCount = 0
  let lastToken: bigint | undefined
  // The tenure of the running subscription, for the guard (a fake has no lease to lapse).
  let latest = notHolding

  const tenureAfter = (current: FakeTenure, value: FakeHolding): FakeTenure => {
    if (typeof value === 'object') return { ...current, revokeRequested: value.revokeRequested }
    const reason = value === true ? 'acquired' : value === false ? 'removed' : value
    if (reason === 'acquired' || (reason === 'restored' && lastToken === undefined)) {
      lastToken = lastToken === undefined ? (spec.firstFencingToken ?? 1n) : lastToken + 1n
      return { holding: true, reason, fencingToken: lastToken }
    }
    if (reason === 'restored') return { holding: true, reason, fencingToken: lastToken }
    return { holding: false, reason, fencingToken: undefined }
  }

  const states = defer(() => {
    if (closing.value) return of(notHolding)
    let current = notHolding
    const released = (): Observable<FakeTenure> =>
      current.holding ? of((current = { ...notHolding, reason: 'released' })) : EMPTY
    const changes = concat(spec.holding, NEVER).pipe(
      filter((value) => changesTenure(current, value)),
      map((value) => (current = tenureAfter(current, value))),
      takeUntil(closing.pipe(filter(Boolean))),
      catchError((error: unknown) =>
        concat(
          released(),
          throwError(() => toSemaphoreError(error)),
        ),
      ),
    )
    return concat(of(notHolding), changes, defer(released)).pipe(
      tap((tenure) => (latest = tenure)),
      finalize(() => (latest = notHolding)),
    )
  }).pipe(map((tenure) => serializable(spec.toState(tenure))))
  const notHeld = (): SemaphoreError =>
    new SemaphoreError(
      'SlotLost',
      'the fake does not hold its slot now (its holding stream said so)',
    )

  return {
    ...handleStreams(states),
    close: () => {
      closeCount += 1
      closing.next(true)
      return Promise.resolve()
    },
    closeCount: () => closeCount,
    isHolding: () => latest.holding,
    assertHolding: () => {
      if (!latest.holding || latest.fencingToken === undefined) throw notHeld()
      return latest.fencingToken
    },
    // Nothing is sent anywhere: while holding, the write "commits" with no results.
    fencedTxn: () =>
      latest.holding
        ? Promise.resolve({ committed: true, results: [] })
        : Promise.reject(notHeld()),
  }
}

/** Whether `value` changes the tenure: a rise or a fall, or a request to a holder. */
function changesTenure(current: FakeTenure, value: FakeHolding): boolean {
  if (typeof value === 'object') return current.holding
  return (value === true || value === 'acquired' || value === 'restored') !== current.holding
}
