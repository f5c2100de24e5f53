import type { Observable } from 'rxjs'
import { closeOnDispose, type asyncDispose } from '../handle/close-on-dispose.js'
import type { SlotGuard } from '../handle/slot-guard.js'
import { contenderHandle, type ContenderHandle } from '../handle/contender-handle.js'
import type { ConsulError } from '../base/consul-error.js'
import type { ContenderState } from '../core/contender/contender-state-model.js'
import type { LastFailure } from '../core/last-failure.js'
import type { RankedContender, TransitionReason } from '../core/events.js'
import { contenderKey } from '../core/keys/contender-key.js'
import { sameRevokeRequest, type RevokeRequest } from '../core/revoke/revoke-request.js'
import { semaphoreProtocol } from '../effects/protocol/semaphore-protocol.js'
import {
  resolveSemaphoreOptions,
  type ReportProblem,
  type SemaphoreOptions,
} from '../options/contender-options.js'
import { rejectUnknownOptions, SEMAPHORE_OPTION_NAMES } from '../options/known-options.js'

/**
 * What one contender knows about its semaphore, after every change.
 *
 * @example
 * ```ts
 * sem.state$.subscribe((s: SemaphoreState) => {
 *   if (s.holding) console.log(`holding, fencing token ${s.fencingToken}`)
 *   else console.log(`waiting at rank ${s.rank}; ${s.holders.length} of ${s.limit} slots taken`)
 * })
 * ```
 */
export interface SemaphoreState {
  /** True only while this contender really holds a slot (see docs/safety.md). */
  readonly holding: boolean
  /** Why `holding` last changed; undefined before the first change. */
  readonly reason: TransitionReason | undefined
  /** The contender's current session, once created. */
  readonly session: string | undefined
  /** This contender's key `<prefix>/<session>` is in Consul: it is in the queue or holds. */
  readonly contending: boolean
  /**
   * Strictly increasing over the acquisitions of every slot of the prefix (the `.lock`
   * ModifyIndex written when this contender won its slot); undefined while not holding. Hand it to
   * the guarded resource so that it can refuse writes from a holder that was replaced.
   * `JSON.stringify(state)` writes it (as every bigint of a state) as a decimal string.
   */
  readonly fencingToken: bigint | undefined
  /**
   * The live holders listed in `.lock`. Like `waiting` and `rank`, as of the last snapshot this
   * contender decided on: every snapshot for a holder and for the first two in line; for a waiter
   * further back, a snapshot when it moves (the waiter ahead of it took a slot or left), and,
   * while its process watches the whole prefix anyway, at most every 1 to 2 s.
   */
  readonly holders: readonly string[]
  /** Contenders waiting for a slot, in the order they will be served (see `holders` for when). */
  readonly waiting: readonly RankedContender[]
  /**
   * This contender's place among `waiting` (0 = next): how many are served before it, this
   * library's contenders and Go's alike; undefined when not waiting. Exact for the first two in
   * line; further back it is updated when the contender moves (see `holders`). It only goes down
   * while the contender waits, unless its process runs other contenders of the prefix too: the
   * queue takes turns across processes, so another process's first waiter goes before this
   * process's second.
   */
  readonly rank: number | undefined
  /**
   * How long this waiter may still wait (ms), as of the same snapshot as `rank`: rank + 1 times
   * the mean interval between the hand-overs its process saw on the prefix (the 16 most recent), or the
   * time since the last one when that is longer. Undefined while not waiting, and until the
   * process has seen two hand-overs one after the other (its earlier contenders' count).
   */
  readonly estimatedWaitMs: number | undefined
  /**
   * The slot limit in force: the one `.lock` states once a snapshot was read (an operator may
   * change it: `followLimit`), the options' before that.
   */
  readonly limit: number
  /** The prefix watch is connected (its last request succeeded). */
  readonly connected: boolean
  /**
   * Until when the session's lease is trusted: when its last renewal (or its creation) was sent,
   * plus the TTL, minus the lease margin; in ms of the contender's scheduler, which is
   * `Date.now()`'s clock unless a scheduler was given. Undefined before a session exists. Past it,
   * `holding` turns false even if no answer came; `isHolding()` checks it synchronously.
   */
  readonly leaseDeadline: number | undefined
  /**
   * Why the contender is retrying, while it is: the last failure of the prefix watch, of the
   * session's renewals, or of the creation of a session; absent once that request succeeds again.
   */
  readonly lastError?: ContenderFailure | undefined
  /**
   * Someone asked this holder to give its slot back (`evict` with a grace, `rxsem evict --grace`):
   * the grace it has and the reason given. Present only while holding and asked. Give the slot back
   * with `close()` once the work is stopped; if it is still held when the grace ends, the eviction
   * is forced (the slot is taken out of `.lock` and the session destroyed). `withSlot` aborts its
   * work's signal with SemaphoreError('RevokeRequested') and gives the slot back when the work
   * settles.
   */
  readonly revokeRequested?: RevokeRequest | undefined
}

/**
 * A failure a contender keeps retrying, as `state$` shows it (`lastError`). A failure that no
 * retry fixes ends the stream with a SemaphoreError instead.
 *
 * @example
 * ```ts
 * sem.state$.subscribe(({ lastError }) => {
 *   if (lastError) console.warn(`${lastError.during} failing (${lastError.kind}): ${lastError.message}`)
 * })
 * ```
 */
export interface ContenderFailure {
  /** What keeps failing: the prefix watch, the session's renewals, or creating a session. */
  readonly during: 'watch' | 'renewal' | 'session'
  /** The Consul layer's name of the failure (a ConsulError's `_tag`). */
  readonly kind:
    | 'Unreachable'
    | 'TlsRejected'
    | 'Timeout'
    | 'PermissionDenied'
    | 'NotConsul'
    | 'ServerError'
    | 'BadRequest'
    | 'DecodeError'
    | 'TooLarge'
    | 'Aborted'
  /** Consul's HTTP status, when it answered (e.g. 429, 500, 503). */
  readonly status?: number | undefined
  /** What went wrong and what to do; never contains the ACL token. */
  readonly message: string
}

/**
 * Fails to compile when ContenderFailure's `kind` misses a ConsulError `_tag`, or has one more:
 * the kinds are spelled out so that the root entry's types do not depend on the low-level
 * client's (`rx-consul-semaphore/consul`, which may change in a minor release).
 */
type SameKinds = [ContenderFailure['kind'], ConsulError['_tag']] extends [
  ConsulError['_tag'],
  ContenderFailure['kind'],
]
  ? true
  : never
const sameKinds: SameKinds = true
void sameKinds

/** @internal The public `lastError` of the core's last failure (memoised: same in, same out). */
export function toContenderFailure(failure: LastFailure): ContenderFailure {
  const known = publicFailures.get(failure)
  if (known !== undefined) return known
  const { error, during } = failure
  const made: ContenderFailure = {
    during,
    kind: error._tag,
    ...('status' in error ? { status: error.status } : {}),
    message: error.message,
  }
  publicFailures.set(failure, made)
  return made
}
const publicFailures = new WeakMap<LastFailure, ContenderFailure>()

/** @internal Whether two `lastError`s say the same (so that `state$` does not repeat itself). */
export function sameFailure(
  a: ContenderFailure | undefined,
  b: ContenderFailure | undefined,
): boolean {
  return a === b || (a?.during === b?.during && a?.kind === b?.kind && a?.message === b?.message)
}

/**
 * One contender for a slot of a Consul semaphore, as `semaphore(...)` returns it.
 *
 * @example
 * ```ts
 * const sem: Semaphore = semaphore({ prefix: 'service/db/lock', limit: 3 })
 * const work = sem.holding$.pipe(switchMap((held) => (held ? migrate$ : EMPTY))).subscribe()
 * process.once('SIGTERM', () => void sem.close().finally(() => work.unsubscribe()))
 * ```
 */
export interface Semaphore extends SlotGuard {
  /**
   * Whether this contender holds a slot now. Starts with false, never repeats a value. Shared: the
   * first subscriber starts contending, late subscribers get the current value at once, the last
   * unsubscribe releases the slot. Errors with a SemaphoreError on a permanent problem.
   */
  readonly holding$: Observable<boolean>
  /** The full state behind `holding$`, shared the same way. */
  readonly state$: Observable<SemaphoreState>
  /**
   * Releases now: `holding$` turns false at once, then the session is CAS'd out of `.lock`, the
   * contender key deleted and the session destroyed. Resolves when Consul is clean; rejects with
   * SemaphoreError('ReleaseFailed') if it could not be cleaned (the session then expires by its
   * TTL). Called while a session is being created, it waits for Consul's answer (at most 10 s)
   * and destroys that session; a request still unanswered then is aborted, and a session Consul
   * may have made regardless expires by its TTL. Subscriptions complete; the object cannot
   * contend again.
   *
   * This holds on the process's default client (no `consul` in the options) as on a client of
   * your own: once close() resolves, Consul holds no session and no contender key of this
   * semaphore, so the process may end at once, with `process.exit()` too (`.lock` stays, with the
   * prefix's limit).
   */
  close(): Promise<void>
  /**
   * Calls `close()`, so that `await using sem = semaphore(...)` releases when the scope ends.
   * Present where the runtime defines `Symbol.asyncDispose` (Node 20.4 and later).
   */
  [asyncDispose](): Promise<void>
}

export function toSemaphoreState(core: ContenderState, limit: number): SemaphoreState {
  const session = core.session
  const listed = core.view?.liveHolders ?? []
  const queue = core.view?.waiting ?? []
  // A won CAS answers before the watch shows it: show this session as a holder from that moment.
  const promoted = core.holding && session !== undefined && !listed.includes(session)
  // Once released (close(), last unsubscribe) the session has left the prefix, whatever the last
  // snapshot, taken before the release, still lists.
  const released = core.retired === 'released'
  const decision = core.decision
  // The arrays are the prefix's shared view (the same for every contender of the prefix): they
  // are copied only in the rare promoted and released cases, never per contender per snapshot.
  return {
    holding: core.holding,
    reason: core.reason,
    session,
    contending: !released && decision !== undefined && decision.type !== 'NotContending',
    fencingToken: core.holding ? core.fencingToken : undefined,
    holders: promoted
      ? [...listed, session]
      : released
        ? listed.filter((s) => s !== session)
        : listed,
    waiting: promoted || released ? queue.filter((c) => c.session !== session) : queue,
    rank:
      !promoted && !released && (decision?.type === 'Wait' || decision?.type === 'TryAcquire')
        ? decision.rank
        : undefined,
    estimatedWaitMs:
      !promoted && !released && decision?.type === 'Wait' ? decision.estimatedWaitMs : undefined,
    limit: core.view?.limit ?? limit,
    connected: core.connected,
    leaseDeadline: core.leaseDeadline,
    ...(core.lastFailure === undefined ? {} : { lastError: toContenderFailure(core.lastFailure) }),
    ...revokeRequestOf(core),
  }
}

/**
 * @internal `revokeRequested` of a public state, spread into it: present while the contender
 * holds and its last decision carries a revoke request.
 */
export function revokeRequestOf(core: ContenderState): { revokeRequested?: RevokeRequest } {
  const decision = core.decision
  return core.holding && decision?.type === 'Held' && decision.revokeRequested !== undefined
    ? { revokeRequested: decision.revokeRequested }
    : {}
}

/** @internal How `tryAcquire`/`tryLead` set up a contender (see `ContendOptions.tryOnce`). */
export interface ContenderInternals {
  readonly tryOnce?: boolean
  /** A job pool's worker: its session lingers for the next worker, whatever the client. */
  readonly pooled?: boolean
  /** More options to check with the contender's, so that one error names every problem. */
  readonly checkMore?: (report: ReportProblem) => void
}

const idle = (limit: number): SemaphoreState => ({
  holding: false,
  reason: undefined,
  session: undefined,
  contending: false,
  fencingToken: undefined,
  holders: [],
  waiting: [],
  rank: undefined,
  estimatedWaitMs: undefined,
  limit,
  connected: false,
  leaseDeadline: undefined,
})

/**
 * A contender for one of `limit` slots under `prefix`, on Consul's semaphore algorithm: the same
 * keys, body and flags as `consul lock -n <limit>`, so both can share a prefix.
 *
 * @example
 * ```ts
 * const sem = semaphore({ prefix: 'service/db/lock', limit: 3 })
 * sem.holding$.pipe(switchMap((held) => (held ? work$ : EMPTY))).subscribe()
 * sem.state$.subscribe((s) => console.log(s.holding, s.rank, s.fencingToken))
 * // later
 * await sem.close()
 * ```
 * @param options - Prefix, limit, and optionally the Consul client, TTL, value, fairness, ...
 * @returns The contender. Nothing happens until `holding$` or `state$` is subscribed.
 * @throws SemaphoreError('InvalidOptions') at once when an option is wrong, naming every wrong
 *   one; nothing is sent to Consul then.
 */
export function semaphore(options: SemaphoreOptions): Semaphore {
  rejectUnknownOptions(options, 'semaphore', SEMAPHORE_OPTION_NAMES)
  return contendForSlot(options, {})
}

/**
 * @internal `semaphore(options)` set up as `tryAcquire`, `withSlot` or `rxsem run` need it (see
 * ContenderInternals); not exported from any entry of the package.
 */
export function contendForSlot(options: SemaphoreOptions, internal: ContenderInternals): Semaphore {
  const { state$, holding$, close, guard } = slotContender(options, internal)
  return closeOnDispose({ state$, holding$, close, ...guard })
}

/**
 * @internal The handle under `contendForSlot`, with `refence` (a fresh fencing token between two
 * jobs) for the job pool under `withSlot`.
 */
export function slotContender(
  options: SemaphoreOptions,
  internal: ContenderInternals,
): ContenderHandle<SemaphoreState> {
  const resolved = resolveSemaphoreOptions(options, 'rx-consul-semaphore', internal.checkMore)
  // The functions below keep what they read, not the options: the spec keeps a copy of them.
  const { limit, prefix } = resolved
  return contenderHandle<SemaphoreState>({
    consul: options.consul,
    idle: idle(limit),
    options: {
      ...resolved,
      protocol: semaphoreProtocol,
      fairness: resolved.fairness && internal.tryOnce !== true,
      scheduler: options.scheduler,
      tryOnce: internal.tryOnce,
    },
    toState: (core) => toSemaphoreState(core, limit),
    same: sameState,
    releaseFailedHint: 'The session expires by its TTL and other contenders then prune it.',
    guardKey: (session) => contenderKey(prefix, session),
    scheduler: options.scheduler,
    shelveAlways: internal.pooled,
  })
}

function sameState(a: SemaphoreState, b: SemaphoreState): boolean {
  return (
    a.holding === b.holding &&
    a.reason === b.reason &&
    a.session === b.session &&
    a.contending === b.contending &&
    a.fencingToken === b.fencingToken &&
    a.rank === b.rank &&
    a.estimatedWaitMs === b.estimatedWaitMs &&
    a.connected === b.connected &&
    a.leaseDeadline === b.leaseDeadline &&
    sameFailure(a.lastError, b.lastError) &&
    sameRevokeRequest(a.revokeRequested, b.revokeRequested) &&
    sameSessions(a.holders, b.holders, (h) => h) &&
    sameSessions(a.waiting, b.waiting, (w) => w.session)
  )
}

/** The shared view reuses unchanged arrays, so the element-wise look is rarely needed. */
function sameSessions<T>(a: readonly T[], b: readonly T[], id: (item: T) => string): boolean {
  return a === b || (a.length === b.length && a.every((item, i) => id(item) === id(b[i] as T)))
}
