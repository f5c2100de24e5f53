import * as E from 'fp-ts/lib/Either.js'
import {
  asyncScheduler,
  defaultIfEmpty,
  take,
  type Observable,
  type SchedulerLike,
  type Subscription,
} from 'rxjs'
import type { ConsulClient } from '../../consul/client-api.js'
import { BACKOFF, backoffDelay } from '../../shared/backoff.js'
import {
  ACL_FAILURES_BEFORE_PERMANENT,
  isAclServerError,
  persistentAclError,
  type ConsulError,
} from '../../consul/errors.js'
import { isTransient } from '../../shared/failure-kinds.js'
import type { KVSnapshot, WatchEvent } from '../../consul/types.js'
import type { ContenderInput } from '../../core/contender/contender-input.js'
import {
  initialContenderState,
  type ContenderAction,
  type ContenderState,
  type ContenderStateOptions,
  type DecideStep,
} from '../../core/contender/contender-state-model.js'
import { reduceContender } from '../../core/contender/reduce-contender.js'
import { sameContenderState } from '../../core/contender/same-contender-state.js'
import { tryOnceRefused } from '../../core/contender/try-once-refused.js'
import type { ContenderEvent, Decision } from '../../core/events.js'
import { passToWaiter, type WaiterPassed } from '../../core/semaphore/pass-to-waiter.js'
import { toSemaphoreError, type SemaphoreError } from '../../errors.js'
import type { ResolvedContenderOptions } from '../../options/contender-options.js'
import { isConsulError } from '../call-policy.js'
import type { ContenderProtocol, ProtocolContender } from '../protocol/contender-protocol.js'
import { destroySession } from '../release/destroy-session.js'
import { SessionLease, type LeaseEvent, type LeaseListener } from '../session-lease.js'
import {
  contenderTelemetry,
  type ContenderEnd,
  type ContenderTelemetry,
} from '../../telemetry/contender-telemetry.js'
import { unreachableError } from './unreachable-error.js'
import {
  coordinatorFor,
  type CoordinatedMember,
  type PrefixCoordinator,
} from './prefix-coordinator.js'

/** Everything one contender needs: its resolved options, its client and its protocol. */
export interface ContendOptions extends ResolvedContenderOptions {
  readonly client: ConsulClient
  readonly protocol: ContenderProtocol
  readonly limit: number
  /** Take the limit `.lock` states (`SemaphoreOptions.followLimit`). Default false. */
  readonly followLimit?: boolean | undefined
  readonly fairness: boolean
  readonly fairnessGraceMs: number | undefined
  /**
   * Receives each release this contender starts in the background (and the destroy of a session
   * whose request was out when it ended), so close() can await it.
   */
  readonly onRelease: (release: Promise<E.Either<ConsulError, void>>) => void
  readonly scheduler?: SchedulerLike | undefined
  /** Source of the jitter of every retry and of the waiters' refresh; default Math.random. */
  readonly random?: (() => number) | undefined
  /**
   * Try once (`tryAcquire`, `tryLead`): until it first holds, the contender gives up at the first
   * refusal (`tryOnceRefused`) or failure instead of waiting or retrying: it releases, completes,
   * and starts no new session. Once it has held, it behaves as any contender.
   */
  readonly tryOnce?: boolean | undefined
}

/** Where a contender's states go: the core's state after each event, across sessions. */
export interface ContenderObserver {
  readonly next: (state: ContenderState) => void
  /** A prefix problem or a permanent failure; nothing follows. */
  readonly error: (error: SemaphoreError) => void
  /** The contender was closed (and its release started), or a try-once contender gave up. */
  readonly complete: () => void
}

/** A running contender: what its handle can ask of it. */
export interface ContenderRun {
  /** Release now and contend no more; completes the observer once the release started. */
  readonly close: () => void
  /** Nobody listens any more: release in the background, and tell the observer nothing more. */
  readonly stop: () => void
}

/** How often a waiter far back in the queue steps on a snapshot that changes nothing for it (ms). */
const WAITER_REFRESH_MS = 1000

/**
 * How long a contender that ends (closed, stopped, failed) waits for the answer to the session
 * request it has in flight, to destroy the session it makes (ms): as long as a client waits for
 * any answer by default (`requestTimeoutMs`). Past it the request is aborted, and a session
 * Consul may have made regardless expires by its TTL.
 */
export const ABANDONED_SESSION_WAIT_MS = 10_000

/** A session request in flight: its answer, and how to abort it. */
interface CreateCall {
  readonly controller: AbortController
  readonly answer: Promise<E.Either<ConsulError, string>>
}

/**
 * One contender (of a semaphore, or of a leader election, by `options.protocol`), from session to
 * slot and back, until it is closed or stopped. It registers with its prefix's coordinator, which
 * owns the one watch; each event runs through the core's pure reducer (`reduceContender`), and
 * the member does what the new state asks: start or cancel a write (`state.next`), set its one
 * timer (`state.wakeAt`), renew its session, release. No Observable pipeline per contender: a
 * waiting contender is this object, its state, and two scheduler timers (lease and wake-up).
 *
 * ```
 * create session ─► join ─► follow the prefix ─► decide/step ─► write ─► holding … release
 *        ▲                                                                    │
 *        └──── session gone (new session) / transient failure (backoff) ◄────┘
 * ```
 *
 * When the session is lost it starts over with a new one; transient failures are retried with the
 * `session` backoff; a prefix problem or a permanent failure ends it with a SemaphoreError. Until
 * the first session is created, the retries last at most `startupTimeoutMs` (then `Unreachable`);
 * a session request still waiting for a connection of a busy client then, while the agent answers
 * the client, is waited for, and only its failure ends the contender. A contender that ends while a
 * session request is out awaits its answer in the background (at most ABANDONED_SESSION_WAIT_MS)
 * and destroys the session it makes (`abandonCreate`).
 *
 * @example
 * const run = contend({ ...resolved, client, protocol: semaphoreProtocol, limit: 3, ... }, {
 *   next: (state) => console.log(state.holding),
 *   error: (error) => console.error(error.message),
 *   complete: () => console.log('done'),
 * })
 * // ... later
 * run.close()
 * @param options - The contender's options, client and protocol.
 * @param observer - Receives its states.
 * @returns The handle to close or stop it.
 */
export function contend(options: ContendOptions, observer: ContenderObserver): ContenderRun {
  const member = new Member(options, observer)
  member.start()
  return member
}

class Member implements ContenderRun, CoordinatedMember, LeaseListener {
  private readonly scheduler: SchedulerLike
  private readonly random: () => number
  private readonly coordinator: PrefixCoordinator
  private readonly leaveCoordinator: () => void
  private readonly contender: ProtocolContender
  private readonly core: ContenderStateOptions
  private readonly refreshMs: number
  private readonly decide: DecideStep
  /** Metrics and spans of this contender (docs/observability.md); no-ops without an SDK. */
  private readonly telemetry: ContenderTelemetry

  /** The state after the last event (between runs: the last run's, the base of the notices). */
  private state: ContenderState = initialContenderState
  private finished = false
  private closing = false
  private trying: boolean
  private gaveUp = false
  private lastStartupFailure: ConsulError | undefined
  /** The startup timeout passed while a session's creation was out (see `start`). */
  private startupOverdue = false
  /** Failures in a row of session creation / runs (reset by a run's first state). */
  private attempt = 0
  private aclInRow = 0

  // The run of the current session.
  private session: string | undefined
  private running = false
  private released = false
  private perform: ((action: ContenderAction) => Observable<ContenderEvent>) | undefined
  private action: ContenderAction | undefined
  private actionRun: Subscription | undefined
  private following = false
  private joinRun: Subscription | undefined
  private joinDone: (() => void) | undefined
  private seedIndex: bigint | undefined
  private passed: WaiterPassed | undefined
  /** The last snapshot `passToWaiter` held back, until it is stepped on (`holdBack`). */
  private heldBack: Extract<WatchEvent, { type: 'snapshot' }> | undefined
  /** The decision on the last snapshot delivered, and whether the reducer took it yet. */
  private memo: { snapshot: KVSnapshot; decision: Decision; taken: boolean } | undefined
  private readonly inbox: ContenderInput[] = []
  private stepping = false

  // Timers and calls in flight.
  private wakeTimer: Subscription | undefined
  private refreshTimer: Subscription | undefined
  private lease: SessionLease | undefined
  private retryTimer: Subscription | undefined
  private startupTimer: Subscription | undefined
  private createCall: CreateCall | undefined

  constructor(
    private readonly options: ContendOptions,
    private readonly observer: ContenderObserver,
  ) {
    this.scheduler = options.scheduler ?? asyncScheduler
    this.random = options.random ?? Math.random
    this.trying = options.tryOnce === true
    const lease = coordinatorFor(options.client, options.prefix, options.protocol, {
      waitMs: options.watchWaitMs,
      scheduler: options.scheduler,
    })
    this.coordinator = lease.value
    this.leaveCoordinator = lease.release
    this.contender = {
      client: options.client,
      prefix: options.prefix,
      limit: options.limit,
      followLimit: options.followLimit === true,
      value: options.value,
      fairness: options.fairness,
      scheduler: this.scheduler,
      cache: this.coordinator.cache,
    }
    const decide = options.protocol.decide(this.contender)
    this.decide = decide
    this.core = {
      prefix: options.prefix,
      limit: options.limit,
      followLimit: options.followLimit,
      fairness: options.fairness,
      fairnessGraceMs: options.fairnessGraceMs,
      leaseMarginMs: options.leaseMarginMs,
      rideThrough: options.rideThrough,
      scheduler: this.scheduler,
      sharedGrace: options.protocol.sharedGrace(this.contender),
      // The decision on a new snapshot is computed once: the coordinator asked for it already
      // (its watch target, the waiter's filter), and the reducer takes it here. Deciding again on
      // the same snapshot (a wake-up, a renewal after a lapse) is a fresh decision, as the core
      // expects (it tells fresh decisions by identity).
      decide: (snapshot, decideOptions) => {
        const memo = this.memo
        if (decideOptions.ignoreRank !== true && memo?.snapshot === snapshot && !memo.taken) {
          memo.taken = true
          return memo.decision
        }
        return decide(snapshot, decideOptions)
      },
    }
    // 1 to 2 s, so that a thousand waiters of a process do not all refresh on one snapshot.
    this.refreshMs = WAITER_REFRESH_MS * (1 + this.random())
    this.telemetry = contenderTelemetry(options.telemetry, {
      prefix: options.prefix,
      limit: options.limit,
      protocol: options.protocol.kind,
      client: options.client,
      now: this.scheduler.now(),
    })
  }

  start(): void {
    const timeoutMs = this.options.startupTimeoutMs
    if (Number.isFinite(timeoutMs)) {
      const answers = (): number => this.options.client.network?.answers?.() ?? 0
      const answersBefore = answers()
      this.startupTimer = this.scheduler.schedule(() => {
        this.startupTimer = undefined
        // The agent answered this client meanwhile, and an attempt is still out: it waits its
        // turn for a connection of a busy client (thousands of contenders starting at once).
        // It decides: the contender fails only if it fails too.
        if (this.createCall !== undefined && answers() > answersBefore) this.startupOverdue = true
        else this.failUnreachable()
      }, timeoutMs)
    }
    this.create()
  }

  close(): void {
    if (this.finished || this.closing) return
    this.closing = true
    this.cancel('startupTimer')
    if (this.running) {
      this.input({ type: 'release-requested' })
    } else {
      // Waiting to retry, or for a session (destroyed once it exists: `abandonCreate`): a closed
      // contender ends quietly.
      this.end()
    }
  }

  stop(): void {
    if (this.finished) return
    if (this.running) this.endRun(true)
    this.finish('closed')
  }

  // ── CoordinatedMember ────────────────────────────────────────────────────────────────────────

  decisionOn(snapshot: KVSnapshot): Decision | undefined {
    const session = this.session
    if (session === undefined) return undefined
    if (this.memo?.snapshot === snapshot) return this.memo.decision
    const decision = this.decide(snapshot, {
      prefix: this.options.prefix,
      session,
      limit: this.options.limit,
      followLimit: this.options.followLimit,
      fairness: this.options.fairness,
    })
    this.memo = { snapshot, decision, taken: false }
    return decision
  }

  onWatch(event: WatchEvent): void {
    if (!this.running) return
    if (event.type === 'snapshot') {
      // Nothing older than a join's answer, unless the watch says the index went back (reset).
      if (
        this.seedIndex !== undefined &&
        event.reset !== true &&
        event.snapshot.index < this.seedIndex
      ) {
        return
      }
      if (this.options.protocol.herdFree) {
        const decision = this.decisionOn(event.snapshot)
        if (decision !== undefined) {
          const passed = passToWaiter(this.passed, decision, this.scheduler.now(), this.refreshMs)
          if (passed === undefined) return this.holdBack(event)
          this.passed = passed
        }
      }
    } else {
      // The first snapshot after a failure passes: it reconnects.
      this.passed = undefined
    }
    this.forgetHeldBack()
    this.input(event)
  }

  /**
   * A snapshot held back from a waiter far back is stepped on when the waiter's refresh is due,
   * unless another passed meanwhile: the prefix may stay quiet after it for as long as dead
   * waiters ahead keep their keys, and it may be the one that shows a free slot, on which the
   * fairness grace counts (`decidePatiently`). Dropped, it would leave the waiter deciding on
   * the snapshot before, with no slot free, until the next change under the prefix.
   */
  private holdBack(event: Extract<WatchEvent, { type: 'snapshot' }>): void {
    this.heldBack = event
    const passed = this.passed
    if (this.refreshTimer !== undefined || passed === undefined) return
    this.refreshTimer = this.scheduler.schedule(
      () => {
        this.refreshTimer = undefined
        const due = this.heldBack
        this.heldBack = undefined
        if (due === undefined || !this.running) return
        const decision = this.decisionOn(due.snapshot)
        if (decision !== undefined) this.passed = { decision, at: this.scheduler.now() }
        this.input(due)
      },
      Math.max(0, passed.at + this.refreshMs - this.scheduler.now()),
    )
  }

  private forgetHeldBack(): void {
    this.heldBack = undefined
    this.cancel('refreshTimer')
  }

  // ── LeaseListener ────────────────────────────────────────────────────────────────────────────

  onLease(event: LeaseEvent): void {
    this.input(event)
  }

  onLeaseError(error: ConsulError): void {
    this.runFailed(error)
  }

  onWatchError(error: unknown): void {
    this.following = false
    this.runFailed(error)
  }

  // ── sessions ─────────────────────────────────────────────────────────────────────────────────

  private create(): void {
    const { client, protocol } = this.options
    const createdAt = this.scheduler.now()
    const controller = new AbortController()
    const answer = client.session.create({
      name: this.options.sessionName,
      ttl: this.options.ttl,
      behavior: protocol.behavior,
      ...(this.options.lockDelay !== undefined ? { lockDelay: this.options.lockDelay } : {}),
      ...(this.options.checks !== undefined ? { nodeChecks: this.options.checks } : {}),
      signal: controller.signal,
    })()
    const call = { controller, answer }
    this.createCall = call
    void answer.then((created) => {
      if (this.createCall !== call) return
      this.createCall = undefined
      if (E.isLeft(created)) {
        this.failed(created.left)
        return
      }
      this.cancel('startupTimer')
      this.startupOverdue = false
      this.begin(created.right, createdAt)
    })
  }

  private begin(session: string, createdAt: number): void {
    this.session = session
    this.running = true
    this.released = false
    this.memo = undefined
    this.passed = undefined
    this.seedIndex = undefined
    this.perform = this.options.protocol.performer(this.contender, session)
    this.state = initialContenderState
    this.emit(this.state)
    this.input({ type: 'session-created', session, ttlMs: this.options.ttlMs, sentAt: createdAt })
    if (!this.running) return
    this.lease = new SessionLease(
      {
        client: this.options.client,
        session,
        ttlMs: this.options.ttlMs,
        createdAt,
        leaseMarginMs: this.options.leaseMarginMs,
        scheduler: this.scheduler,
        random: this.random,
      },
      this,
    )
    this.join()
  }

  /** Follows the prefix's watch; the process's only contender of a sound prefix joins first. */
  private join(): void {
    const { protocol } = this.options
    if (protocol.join === undefined || !this.coordinator.mayJoin(this.contender)) {
      this.follow(undefined)
      return
    }
    this.joinDone = this.coordinator.startJoin()
    this.joinRun = protocol
      .join(this.contender, this.session as string)
      .pipe(defaultIfEmpty(undefined), take(1))
      .subscribe((seed) => {
        this.joinDone?.()
        this.joinDone = undefined
        this.joinRun = undefined
        if (this.running) this.follow(seed)
      })
  }

  private follow(seed: KVSnapshot | undefined): void {
    this.seedIndex = seed?.index
    this.following = true
    this.coordinator.follow(this, seed)
  }

  // ── the state machine ────────────────────────────────────────────────────────────────────────

  /** Feeds one input to the reducer; inputs that arrive while it steps wait their turn. */
  private input(input: ContenderInput): void {
    this.inbox.push(input)
    if (this.stepping) return
    this.stepping = true
    try {
      for (let next = this.inbox.shift(); next !== undefined; next = this.inbox.shift()) {
        if (this.running) this.step(next)
      }
    } finally {
      this.stepping = false
      this.inbox.length = 0
    }
  }

  private step(input: ContenderInput): void {
    const before = this.state
    const now = this.scheduler.now()
    const after = reduceContender(before, input, now, this.core)
    this.state = after
    this.telemetry.stepped(after, input, now)
    this.attempt = 0
    this.aclInRow = 0
    if (!sameContenderState(before, after)) this.emit(after)
    if (after.wakeAt !== before.wakeAt) this.scheduleWake(after.wakeAt)
    if (after.next !== this.action) this.startAction(after.next)
    if (after.holding) this.trying = false
    if (this.trying && tryOnceRefused(after)) this.gaveUp = true
    if (after.problem !== undefined) {
      this.endRun(true)
      this.fail(this.options.protocol.problemError(after.problem))
    } else if (after.retired !== undefined || this.gaveUp) {
      // A requested release starts right after every subscriber heard holding false.
      this.endRun(after.retired !== 'session-gone')
      this.afterRun()
    }
  }

  private scheduleWake(at: number | undefined): void {
    this.cancel('wakeTimer')
    if (at === undefined) return
    this.wakeTimer = this.scheduler.schedule(
      () => {
        this.wakeTimer = undefined
        this.input({ type: 'wake' })
      },
      Math.max(0, at - this.scheduler.now()),
    )
  }

  /**
   * Starts the write the core asks for; a new action cancels the previous attempt. An attempt
   * that ends without news for the core (a contender key written: the next snapshot is to show
   * it) is forgotten, so the next step makes the write again if the core still asks for it: a
   * snapshot without the key after the write means that the key is gone again (an operator's
   * delete), and the core, which cannot tell one such decision from the other, keeps asking.
   */
  private startAction(action: ContenderAction | undefined): void {
    this.actionRun?.unsubscribe()
    this.actionRun = undefined
    this.action = action
    if (action === undefined || this.perform === undefined) return
    const run = this.perform(action).subscribe({
      next: (event: ContenderEvent) => this.input(event),
      error: (error: unknown) => this.runFailed(error),
      complete: () => {
        if (this.action !== action) return
        this.action = undefined
        this.actionRun = undefined
      },
    })
    // An action that answered at once has already made way for the next one.
    if (this.action === action && !run.closed) this.actionRun = run
  }

  // ── ends of runs ─────────────────────────────────────────────────────────────────────────────

  /** Ends the current session's run: release (unless told not to), then tear it down. */
  private endRun(release: boolean): void {
    if (!this.running) return
    this.running = false
    const session = this.session
    if (
      release &&
      !this.released &&
      session !== undefined &&
      this.state.retired !== 'session-gone'
    ) {
      this.released = true
      const release = this.options.protocol.release(this.contender, session, this.state.snapshot)
      const telemetry = this.telemetry
      this.options.onRelease(
        release.then((result) => {
          telemetry.released(result)
          return E.map((): void => undefined)(result)
        }),
      )
    }
    this.cancel('wakeTimer')
    this.forgetHeldBack()
    this.lease?.stop()
    this.lease = undefined
    this.actionRun?.unsubscribe()
    this.actionRun = undefined
    this.action = undefined
    this.joinRun?.unsubscribe()
    this.joinRun = undefined
    this.joinDone?.()
    this.joinDone = undefined
    if (this.following) this.coordinator.unfollow(this)
    this.following = false
    this.memo = undefined
  }

  /** After a run that ended by itself: the session is gone (start over) or the contender is done. */
  private afterRun(): void {
    // A try-once contender that lost its session before it held has its answer: not held.
    if (this.closing || this.trying || this.gaveUp) return this.end()
    this.retryAfter(backoffDelay(BACKOFF.session, 1, { random: this.random }))
  }

  /** A failure inside a run (a write, the lease, the watch): release, then retry or give up. */
  private runFailed(error: unknown): void {
    if (!this.running) return
    this.endRun(true)
    this.failed(error)
  }

  /** A failure of a session's creation or of its run. */
  private failed(error: unknown): void {
    if (this.finished) return
    // A closed contender ends quietly: whatever failed, its user no longer listens for it.
    if (this.closing) return this.end()
    if (!isConsulError(error) || !isTransient(error) || this.trying) {
      return this.fail(toSemaphoreError(error))
    }
    this.lastStartupFailure = error
    if (this.startupOverdue) return this.failUnreachable()
    this.aclInRow = isAclServerError(error) ? this.aclInRow + 1 : 0
    if (isAclServerError(error) && this.aclInRow >= ACL_FAILURES_BEFORE_PERMANENT) {
      return this.fail(toSemaphoreError(persistentAclError(error, this.aclInRow)))
    }
    // While no session can be made, the core does not run: these states say why it waits.
    if (!this.state.holding) {
      this.emit({
        ...this.state,
        connected: false,
        next: undefined,
        lastFailure: { during: 'session', error },
      })
    }
    this.attempt++
    this.retryAfter(backoffDelay(BACKOFF.session, this.attempt, { error, random: this.random }))
  }

  /** Ends the contender: no session within its `startupTimeout`, with the last failure seen. */
  private failUnreachable(): void {
    const { client, startupTimeoutMs } = this.options
    this.fail(unreachableError(client, startupTimeoutMs, this.lastStartupFailure))
  }

  private retryAfter(delayMs: number): void {
    this.retryTimer = this.scheduler.schedule(() => {
      this.retryTimer = undefined
      if (this.closing) return this.end()
      this.create()
    }, delayMs)
  }

  private emit(state: ContenderState): void {
    if (!this.finished) this.observer.next(state)
  }

  private end(): void {
    if (this.finished) return
    this.finish(this.closing ? 'closed' : 'refused')
    this.observer.complete()
  }

  private fail(error: SemaphoreError): void {
    if (this.finished) return
    if (this.running) this.endRun(true)
    this.finish({ failed: error.kind })
    this.observer.error(error)
  }

  /** Stops every timer and call; leaves the coordinator. Emits nothing. */
  private finish(why: ContenderEnd): void {
    this.finished = true
    this.telemetry.ended(why, this.scheduler.now())
    this.cancel('startupTimer')
    this.cancel('retryTimer')
    this.abandonCreate()
    this.leaveCoordinator()
  }

  /**
   * The session request in flight of a contender that ends: awaited in the background (for at
   * most ABANDONED_SESSION_WAIT_MS), and the session it makes destroyed, through `onRelease`, so
   * that close() resolves only once Consul is clean. Aborted instead, a request already sent made
   * a session all the same, left to its TTL. A request that fails made none (or none this
   * contender can know of: that one, too, expires by its TTL).
   */
  private abandonCreate(): void {
    const call = this.createCall
    if (call === undefined) return
    this.createCall = undefined
    const { client } = this.options
    const { scheduler, random } = this
    const bound = scheduler.schedule(() => call.controller.abort(), ABANDONED_SESSION_WAIT_MS)
    this.options.onRelease(
      call.answer.then((created) => {
        bound.unsubscribe()
        if (E.isLeft(created)) return E.right<ConsulError, void>(undefined)
        return destroySession({ client, session: created.right, scheduler, random })
      }),
    )
  }

  private cancel(timer: 'wakeTimer' | 'refreshTimer' | 'retryTimer' | 'startupTimer'): void {
    this[timer]?.unsubscribe()
    this[timer] = undefined
  }
}
