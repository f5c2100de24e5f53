/**
 * What `rxsem run` contends with: a slot of a semaphore (`--limit n`), or the single-key lock of a
 * leader election (`--leader`, the layout of `consul lock` without `-n`). Both are seen through
 * the semaphore's state, so the rest of the command has one shape to follow.
 *
 * The contender also tells the lease deadline of its sessions (for the watchdog and the command's
 * RXSEM_LEASE_DEADLINE_MS), which the library's state does not carry: it is read off the client
 * the contender is given, by timing each successful session create and renew the library makes.
 */
import * as E from 'fp-ts/lib/Either.js'
import { BehaviorSubject, map, type Observable } from 'rxjs'
import type { ConsulClient } from '../consul/client-api.js'
import { leaseDeadline } from '../core/contender/lease-deadline.js'
import { leaderElection, type LeaderElectionState } from '../leader-election.js'
import { resolveContenderOptions } from '../options/contender-options.js'
import { semaphore, type SemaphoreState } from '../semaphore.js'
import type { RunPlan } from './run-plan.js'

/** A session's lease: trusted until `deadlineMs` (epoch ms), as the library counts it. */
export interface Lease {
  readonly session: string
  readonly deadlineMs: number
}

/** The part of the library's contender objects `rxsem run` uses, and the leases. */
export interface CliContender {
  readonly state$: Observable<SemaphoreState>
  /**
   * The lease of the session created or renewed last (replayed to a late subscriber): the time the
   * request was sent (epoch ms, `Date.now()`, the clock of the library's default scheduler) plus
   * the TTL minus the lease margin, the same deadline the library drops `holding` at.
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
  const { ttlMs, leaseMarginMs } = resolveContenderOptions(
    { prefix: spec.prefix, ...(spec.ttl !== undefined ? { ttl: spec.ttl } : {}) },
    'rxsem',
  )
  const lease$ = new BehaviorSubject<Lease | undefined>(undefined)
  const consul = timingLeases(spec.consul, (session, sentAt, serverTtlMs) =>
    lease$.next({
      session,
      deadlineMs: leaseDeadline(sentAt, serverTtlMs ?? ttlMs, { leaseMarginMs }),
    }),
  )
  const common = {
    prefix: spec.prefix,
    consul,
    sessionName: spec.sessionName,
    ...(spec.ttl !== undefined ? { ttl: spec.ttl } : {}),
    ...(spec.value !== undefined ? { value: spec.value } : {}),
  }
  if (!spec.leader) {
    const sem = semaphore({ ...common, limit: spec.limit })
    return { state$: sem.state$, lease$, close: () => sem.close() }
  }
  const election = leaderElection(common)
  return {
    state$: election.state$.pipe(map(asSemaphoreState)),
    lease$,
    close: () => election.close(),
  }
}

/**
 * `client` with its session create and renew timed: `onLease(session, sentAt, ttlMs)` after each
 * success, `sentAt` taken (Date.now()) just before the request goes out, `ttlMs` the TTL a renewal
 * answered with, if any. Everything else is the client's own.
 */
export function timingLeases(
  client: ConsulClient,
  onLease: (session: string, sentAt: number, ttlMs: number | undefined) => void,
): ConsulClient {
  const sessions = client.session
  return {
    kv: client.kv,
    watchPrefix: (prefix, options) => client.watchPrefix(prefix, options),
    close: () => client.close(),
    session: {
      info: (id, options) => sessions.info(id, options),
      destroy: (id, options) => sessions.destroy(id, options),
      create: (options) => {
        const task = sessions.create(options)
        return async () => {
          const sentAt = Date.now()
          const created = await task()
          if (E.isRight(created)) onLease(created.right, sentAt, undefined)
          return created
        }
      },
      renew: (id, options) => {
        const task = sessions.renew(id, options)
        return async () => {
          const sentAt = Date.now()
          const renewed = await task()
          if (E.isRight(renewed) && renewed.right !== null) {
            onLease(id, sentAt, renewed.right.ttlMs)
          }
          return renewed
        }
      },
    },
  }
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
