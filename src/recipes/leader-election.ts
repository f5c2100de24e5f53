import {
  ReplaySubject,
  catchError,
  defer,
  filter,
  of,
  share,
  takeUntil,
  throwError,
  type Observable,
} from 'rxjs'
import { closeOnDispose, type asyncDispose } from '../handle/close-on-dispose.js'
import { lockKey } from '../core/keys/lock-key.js'
import type { SlotGuard } from '../handle/slot-guard.js'
import { contenderHandle } from '../handle/contender-handle.js'
import type { ContenderState } from '../core/contender/contender-state-model.js'
import { readLeaderKey, type Leader } from '../core/leader-key/decide-leader-key.js'
import type { TransitionReason } from '../core/events.js'
import { watchLeaderKey, sameLeader } from '../effects/protocol/leader-key-watch.js'
import { leaderKeyProtocol } from '../effects/protocol/leader-key-protocol.js'
import { toSemaphoreError } from '../base/semaphore-error.js'
import { resolveContenderOptions, type ContenderOptions } from '../options/contender-options.js'
import {
  revokeRequestOf,
  sameFailure,
  toContenderFailure,
  type ContenderFailure,
  type ContenderInternals,
} from './semaphore.js'
import { sameRevokeRequest, type RevokeRequest } from '../core/revoke/revoke-request.js'
import { rejectUnknownOptions, CONTENDER_OPTION_NAMES } from '../options/known-options.js'

/**
 * Options of `leaderElection(...)`: those of every contender. `value` is written to the lock key
 * with each acquisition and shown by `leader$` (default '<hostname>:<pid>'); `lockDelay` is the
 * session's lock-delay (default Consul's, 15 s), how long Consul refuses the key to everyone after
 * this contender's session is invalidated while leading.
 *
 * @example
 * ```ts
 * const options: LeaderElectionOptions = {
 *   prefix: 'service/scheduler/leader',
 *   value: 'node-a',
 *   lockDelay: '5s',
 * }
 * const election = leaderElection(options)
 * ```
 */
export type LeaderElectionOptions = ContenderOptions

/**
 * What one contender knows about its election, after every change.
 *
 * @example
 * ```ts
 * election.state$.subscribe((s: LeaderElectionState) => {
 *   console.log(s.holding ? `leading (token ${s.fencingToken})` : `following ${s.leader?.value}`)
 * })
 * ```
 */
export interface LeaderElectionState {
  /** True only while this contender really leads (same rules as the semaphore's `holding`). */
  readonly holding: boolean
  /** Why `holding` last changed; undefined before the first change. */
  readonly reason: TransitionReason | undefined
  /** The contender's current session, once created. */
  readonly session: string | undefined
  /**
   * The ModifyIndex of `<prefix>/.lock` written by this contender's acquisition, strictly
   * increasing over the acquisitions of the key; undefined while not leading. Hand it to the
   * guarded resource so that it can refuse writes from a leader that was replaced.
   * `JSON.stringify(state)` writes it (as every bigint of a state) as a decimal string.
   */
  readonly fencingToken: bigint | undefined
  /** Who leads as this contender last saw it (itself from the moment its acquisition answered). */
  readonly leader: Leader | null
  /** The prefix watch is connected (its last request succeeded). */
  readonly connected: boolean
  /**
   * Until when the session's lease is trusted: when its last renewal (or its creation) was sent,
   * plus the TTL, minus the lease margin; in ms of the contender's scheduler, which is
   * `Date.now()`'s clock unless a scheduler was given. Undefined before a session exists. Past it,
   * `holding` turns false even if no answer came; `isHolding()` checks it synchronously.
   */
  readonly leaseDeadline: number | undefined
  /** Why the contender is retrying, while it is (see SemaphoreState's `lastError`). */
  readonly lastError?: ContenderFailure | undefined
  /**
   * Someone asked this leader to step down (`evict` with a grace): present only while leading and
   * asked (see SemaphoreState's `revokeRequested`). Step down with `close()` before the grace ends,
   * or the eviction is forced (the session destroyed).
   */
  readonly revokeRequested?: RevokeRequest | undefined
}

/**
 * One contender of a leader election on Consul's single-key lock, as `leaderElection(...)`
 * returns it.
 *
 * @example
 * ```ts
 * const election: LeaderElection = leaderElection({ prefix: 'service/scheduler/leader' })
 * election.holding$.pipe(switchMap((leading) => (leading ? schedule$ : EMPTY))).subscribe()
 * process.once('SIGTERM', () => void election.close())
 * ```
 */
export interface LeaderElection extends SlotGuard {
  /**
   * Whether this contender leads now. Starts with false, never repeats a value. Shared: the first
   * subscriber starts contending, late subscribers get the current value at once, the last
   * unsubscribe releases the lock. Errors with a SemaphoreError on a permanent problem (e.g. a
   * `Conflict` when `<prefix>/.lock` is not a lock).
   */
  readonly holding$: Observable<boolean>
  /** The full state behind `holding$`, shared the same way. */
  readonly state$: Observable<LeaderElectionState>
  /**
   * Who leads now (null while nobody does), from the process's shared watch of the prefix; distinct.
   * A read view: subscribing to it alone creates no session and takes no part in the election.
   * Completes on `close()`.
   */
  readonly leader$: Observable<Leader | null>
  /**
   * Steps down now: `holding$` turns false at once, then the key is released (`?release=` with
   * the same value and flags, which sets no lock-delay, so a waiter takes over at once) and the
   * session destroyed. Resolves when Consul is clean; rejects with SemaphoreError('ReleaseFailed')
   * if it could not be cleaned. Called while a session is being created, it waits for Consul's
   * answer (at most 10 s) and destroys that session; a request still unanswered then is aborted,
   * and a session Consul may have made regardless expires by its TTL. Subscriptions complete; the
   * object cannot contend again.
   */
  close(): Promise<void>
  /**
   * Calls `close()`, so that `await using election = leaderElection(...)` steps down when the
   * scope ends. Present where the runtime defines `Symbol.asyncDispose` (Node 20.4 and later).
   */
  [asyncDispose](): Promise<void>
}

/**
 * The public state from the core's, for a lock contender with `value`.
 *
 * @example
 * states.pipe(map((core) => toLeaderElectionState(core, prefix, 'node-a')))
 * @returns The state `state$` emits.
 */
export function toLeaderElectionState(
  core: ContenderState,
  prefix: string,
  value: string,
): LeaderElectionState {
  const { session } = core
  const seen = core.snapshot === undefined ? null : readLeaderKey(core.snapshot, prefix)
  // A won acquisition answers before the watch shows it: show this session as leader from then.
  const promoted = core.holding && session !== undefined && seen?.session !== session
  // Once released (close(), last unsubscribe) this session leads no more, whatever the last
  // snapshot, taken before the release, still says.
  const released = core.retired === 'released' && seen?.session === session
  return {
    holding: core.holding,
    reason: core.reason,
    session,
    fencingToken: core.holding ? core.fencingToken : undefined,
    leader: promoted ? { session, value } : released ? null : seen,
    connected: core.connected,
    leaseDeadline: core.leaseDeadline,
    ...(core.lastFailure === undefined ? {} : { lastError: toContenderFailure(core.lastFailure) }),
    ...revokeRequestOf(core),
  }
}

const idle: LeaderElectionState = {
  holding: false,
  reason: undefined,
  session: undefined,
  fencingToken: undefined,
  leader: null,
  connected: false,
  leaseDeadline: undefined,
}

/**
 * A contender for leadership under `prefix`, on Consul's single-key lock: `<prefix>/.lock` taken
 * with `?acquire=<session>` (a txn `lock`) and Consul's lock flags, given back with
 * `?release=<session>`, as Go's `api.Lock` and `consul lock <prefix> <cmd>` do; so both share
 * leadership of one prefix correctly. The leader is the session on the key.
 *
 * Sessions have behavior 'release', as Go's: if this contender dies while leading, Consul clears
 * the holder when the session's TTL runs out and then refuses the key for the session's
 * lock-delay; waiters keep asking with a short backoff and take over within about a second of
 * the delay's end. A voluntary `close()` sets no lock-delay: the handover is immediate.
 *
 * @example
 * ```ts
 * const election = leaderElection({ prefix: 'service/scheduler/leader', value: 'node-a' })
 * election.holding$.pipe(switchMap((leading) => (leading ? schedule$ : EMPTY))).subscribe()
 * election.leader$.subscribe((leader) => console.log('leader:', leader?.value ?? 'none'))
 * // later
 * await election.close()
 * ```
 * @param options - Prefix, and optionally the Consul client, value, TTL, lock-delay, checks, ...
 * @returns The contender. Nothing happens until `holding$` or `state$` is subscribed.
 * @throws SemaphoreError('InvalidOptions') at once when an option is wrong, naming every wrong
 *   one; nothing is sent to Consul then.
 */
export function leaderElection(options: LeaderElectionOptions): LeaderElection {
  rejectUnknownOptions(options, 'leaderElection', CONTENDER_OPTION_NAMES)
  return contendForLead(options, {})
}

/**
 * @internal `leaderElection(options)` set up as `tryLead` or `rxsem run` need it (see
 * ContenderInternals); not exported from any entry of the package.
 */
export function contendForLead(
  options: LeaderElectionOptions,
  internal: ContenderInternals,
): LeaderElection {
  const resolved = resolveContenderOptions(options, 'rx-consul-semaphore leader')
  const { state$, holding$, close, lifecycle, guard } = contenderHandle<LeaderElectionState>({
    consul: options.consul,
    idle,
    options: {
      ...resolved,
      protocol: leaderKeyProtocol,
      limit: 1,
      // The first in line tries whenever the key is free, and a waiter waits on the key of the
      // one ahead (`leaderWatchTarget`). The fairness grace covers a first in line that died with
      // its session still alive: a waiter that sees the key stand free for the grace (2 s, a
      // quarter more per place further back) tries it whatever its place.
      fairness: true,
      fairnessGraceMs: undefined,
      scheduler: options.scheduler,
      tryOnce: internal.tryOnce,
    },
    toState: (core, resolved) => toLeaderElectionState(core, resolved.prefix, resolved.value),
    same: sameState,
    releaseFailedHint:
      'The session expires by its TTL; Consul then frees the key after the lock-delay.',
    guardKey: () => lockKey(resolved.prefix),
    scheduler: options.scheduler,
  })
  const { closing } = lifecycle

  const leader$ = defer(() => {
    if (closing.value) return of<Leader | null>()
    return lifecycle
      .withClient((client) =>
        watchLeaderKey(client, resolved.prefix, { waitMs: resolved.watchWaitMs }),
      )
      .pipe(takeUntil(closing.pipe(filter(Boolean))))
  }).pipe(
    catchError((error: unknown) => throwError(() => toSemaphoreError(error, resolved.prefix))),
    share({
      connector: () => new ReplaySubject<Leader | null>(1),
      resetOnRefCountZero: true,
      resetOnComplete: true,
      resetOnError: true,
    }),
  )

  return closeOnDispose({ state$, holding$, leader$, close, ...guard })
}

function sameState(a: LeaderElectionState, b: LeaderElectionState): boolean {
  return (
    a.holding === b.holding &&
    a.reason === b.reason &&
    a.session === b.session &&
    a.fencingToken === b.fencingToken &&
    a.connected === b.connected &&
    a.leaseDeadline === b.leaseDeadline &&
    sameFailure(a.lastError, b.lastError) &&
    sameRevokeRequest(a.revokeRequested, b.revokeRequested) &&
    sameLeader(a.leader, b.leader)
  )
}
