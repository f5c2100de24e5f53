/**
 * What `rxsem run` contends with: a slot of a semaphore (`--limit n`), or the single-key lock of a
 * leader election (`--leader`, the layout of `consul lock` without `-n`). Both are seen through
 * the semaphore's state, so the rest of the command has one shape to follow.
 */
import { EMPTY, catchError, distinctUntilChanged, map, type Observable } from 'rxjs'
import type { ConsulClient } from '../../consul/client-api.js'
import { contendForLead, type LeaderElectionState } from '../../recipes/leader-election.js'
import { contendForSlot, type SemaphoreState } from '../../recipes/semaphore.js'
import { tryOnceVerdict, type TryOnceVerdict } from '../../core/contender/try-once-verdict.js'
import type { RunPlan } from './plan.js'

/** A session's lease: trusted until `deadlineMs` (epoch ms), as the library counts it. */
export interface Lease {
  readonly session: string
  readonly deadlineMs: number
}

/** The part of the library's contender objects `rxsem run` uses, and the leases. */
export interface CliContender {
  readonly state$: Observable<SemaphoreState>
  /**
   * The lease of the current session, each time a creation or renewal moves it: the state's
   * `leaseDeadline` (epoch ms: the library runs on its default scheduler, `Date.now()`'s clock),
   * the same deadline at which the library drops `holding`.
   */
  readonly lease$: Observable<Lease | undefined>
  close(): Promise<void>
}

/** What the contender needs from the run's plan (a leader's limit is 1), and the client. */
export type ContenderSpec = Pick<
  RunPlan,
  | 'leader'
  | 'prefix'
  | 'limit'
  | 'followLimit'
  | 'permits'
  | 'ttl'
  | 'lockDelay'
  | 'sessionName'
  | 'value'
  | 'timeoutMs'
  | 'rideThrough'
  | 'serviceChecks'
  | 'nodeChecks'
> & { readonly consul: ConsulClient }

/**
 * The contender the flags ask for; nothing is sent to Consul before `state$` is subscribed. With
 * `--timeout 0` it is the library's try-once contender, the one `tryAcquire` and `tryLead` use:
 * unranked, it ends its `state$` without holding when the try-once rule answers "not held" (or
 * Consul refuses the lock for a lock-delay, which `state$` does not show), and fails rather than
 * retries.
 */
export function createContender(spec: ContenderSpec): CliContender {
  const internals = { tryOnce: spec.timeoutMs === 0 }
  const common = {
    prefix: spec.prefix,
    consul: spec.consul,
    sessionName: spec.sessionName,
    ...(spec.ttl !== undefined ? { ttl: spec.ttl } : {}),
    ...(spec.lockDelay !== undefined ? { lockDelay: spec.lockDelay } : {}),
    ...(spec.value !== undefined ? { value: spec.value } : {}),
    ...(spec.rideThrough ? { rideThrough: true } : {}),
    ...(spec.serviceChecks !== undefined ? { serviceChecks: spec.serviceChecks } : {}),
    ...(spec.nodeChecks !== undefined ? { checks: spec.nodeChecks } : {}),
  }
  if (!spec.leader) {
    const sem = contendForSlot(
      { ...common, limit: spec.limit, followLimit: spec.followLimit, permits: spec.permits },
      internals,
    )
    return { state$: sem.state$, lease$: leases(sem.state$), close: () => sem.close() }
  }
  const election = contendForLead(common, internals)
  const state$ = election.state$.pipe(map(asSemaphoreState))
  return { state$, lease$: leases(state$), close: () => election.close() }
}

function leases(state$: Observable<SemaphoreState>): Observable<Lease | undefined> {
  return state$.pipe(
    map(({ session, leaseDeadline }) =>
      session === undefined || leaseDeadline === undefined
        ? undefined
        : { session, deadlineMs: leaseDeadline },
    ),
    distinctUntilChanged((a, b) => a?.session === b?.session && a?.deadlineMs === b?.deadlineMs),
    // The contender's error is told by state$'s own subscribers (the run's phases).
    catchError(() => EMPTY),
  )
}

/**
 * A leader election's state as a one-slot semaphore's: the leader is the one holder, and this
 * contender "contends" (is in the race) once it has a session and a view of the key. A lock has
 * no queue in Consul, so a non-leader is simply next (rank 0).
 */
export function asSemaphoreState(state: LeaderElectionState): SemaphoreState {
  const contending = state.session !== undefined && state.connected
  return {
    holding: state.holding,
    reason: state.reason,
    session: state.session,
    contending,
    fencingToken: state.fencingToken,
    holders: state.leader === null ? [] : [state.leader.session],
    waiting: [],
    rank: contending && !state.holding && state.leader?.session !== state.session ? 0 : undefined,
    estimatedWaitMs: undefined,
    limit: 1,
    connected: state.connected,
    leaseDeadline: state.leaseDeadline,
    ...(state.lastError === undefined ? {} : { lastError: state.lastError }),
    ...(state.revokeRequested === undefined ? {} : { revokeRequested: state.revokeRequested }),
  }
}

/**
 * The try-once rule (`tryOnceVerdict`) on the public state. `ranked`: the contender takes a free
 * slot only in its turn (a waiting `rxsem run`; not a `--timeout 0` one, which is unranked). A
 * lock-delay refusal is not in `state$`: a try-once contender ends its `state$` on it instead.
 *
 * @example
 * tryOnceVerdictOf({ ...state, holders: ['a'], limit: 1, rank: 0 }, false) // 'not-held'
 * @param state - A state of the contender.
 * @param ranked - Whether the contender waits for its turn.
 * @returns Whether the one try has an answer yet, and which.
 */
export function tryOnceVerdictOf(
  state: Pick<
    SemaphoreState,
    'holding' | 'session' | 'contending' | 'holders' | 'waiting' | 'limit' | 'rank'
  >,
  ranked: boolean,
): TryOnceVerdict {
  const listed = state.session !== undefined && state.holders.includes(state.session)
  return tryOnceVerdict({
    holding: state.holding,
    // Contending without a rank is a prefix problem: a waiter of the semaphore is ranked, and a
    // non-leader of the lock is 'next' (asSemaphoreState).
    place: !state.contending
      ? 'none'
      : listed
        ? 'listed'
        : state.rank === undefined
          ? 'problem'
          : 'contending',
    freeSlots: Math.max(0, state.limit - state.holders.length),
    weight: (state.rank === undefined ? undefined : state.waiting[state.rank]?.weight) ?? 1,
    rank: state.rank,
    ranked,
    lockDelayed: false,
  })
}
