/**
 * What `rxsem run` contends with: a slot of a semaphore (`--limit n`), or the single-key lock of a
 * leader election (`--leader`, the layout of `consul lock` without `-n`). Both are seen through
 * the semaphore's state, so the rest of the command has one shape to follow.
 */
import { EMPTY, catchError, distinctUntilChanged, map, type Observable } from 'rxjs'
import type { ConsulClient } from '../../consul/client-api.js'
import { leaderElection, type LeaderElectionState } from '../../leader-election.js'
import { semaphore, type SemaphoreState } from '../../semaphore.js'
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
  'leader' | 'prefix' | 'limit' | 'ttl' | 'sessionName' | 'value'
> & { readonly consul: ConsulClient }

/** The contender the flags ask for; nothing is sent to Consul before `state$` is subscribed. */
export function createContender(spec: ContenderSpec): CliContender {
  const common = {
    prefix: spec.prefix,
    consul: spec.consul,
    sessionName: spec.sessionName,
    ...(spec.ttl !== undefined ? { ttl: spec.ttl } : {}),
    ...(spec.value !== undefined ? { value: spec.value } : {}),
  }
  if (!spec.leader) {
    const sem = semaphore({ ...common, limit: spec.limit })
    return { state$: sem.state$, lease$: leases(sem.state$), close: () => sem.close() }
  }
  const election = leaderElection(common)
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
    limit: 1,
    connected: state.connected,
    leaseDeadline: state.leaseDeadline,
    ...(state.lastError === undefined ? {} : { lastError: state.lastError }),
  }
}
