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
import type { ConsulError } from '../../base/consul-error.js'
import type { KVSnapshot, WatchEvent } from '../../base/kv-snapshot.js'
import type { ContenderInput } from '../../core/contender/contender-input.js'
import {
  initialContenderState,
  type ContenderAction,
  type ContenderState,
  type ContenderStateOptions,
  type DecideStep,
} from '../../core/contender/contender-state-model.js'
import { contenderStep, type ContenderCommand } from '../../core/contender/contender-step.js'
import { sameContenderState } from '../../core/contender/same-contender-state.js'
import type { ContenderEvent, Decision } from '../../core/events.js'
import { passToWaiter, type WaiterPassed } from '../../core/semaphore/pass-to-waiter.js'
import { SemaphoreError } from '../../base/semaphore-error.js'
import type { ResolvedContenderOptions } from '../../options/contender-options.js'
import type { ContenderProtocol, ProtocolMember } from '../protocol/contender-protocol.js'
import { SessionLease, type LeaseEvent, type LeaseListener } from '../session-lease.js'
import type { ContenderShelf } from '../session-shelf.js'
import {
  contenderTelemetry,
  type ContenderEnd,
  type ContenderTelemetry,
} from '../../telemetry/contender-telemetry.js'
import { SessionLoop, adoptedSessionGone } from './session-loop.js'
import {
  coordinatorFor,
  type CoordinatedMember,
  type PrefixCoordinator,
} from './prefix-coordinator.js'

export { ABANDONED_SESSION_WAIT_MS } from './session-loop.js'

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
  /**
   * Where the process's idle sessions wait (`contenderShelf`; the handle gives one only to a job
   * pool's worker): the contender takes one made with
   * its session options instead of creating one, and, released after close() with a clean outcome
   * (the slot handed off or given back, its key deleted), keeps its session there instead of
   * destroying it. Without it, every session is created and destroyed by its contender.
   */
  readonly shelf?: ContenderShelf | undefined
}

/** Where a contender's states go: the core's state after each event, across sessions. */
export interface ContenderObserver {
  readonly next: (state: ContenderState) => void
  /** A prefix problem or a permanent failure; nothing follows. */
  readonly error: (error: SemaphoreError) => void
  /** The contender was closed (and its release started), or a try-once contender gave up. */
  readonly complete: () => void
}

/** How often a waiter far back in the queue steps on a snapshot that changes nothing for it (ms). */
const WAITER_REFRESH_MS = 1000

/**
 * Where a member is in its life; the one field that says what it may do next.
 *
 * ```
 * start ─► creating ──session──► running ──close()──► closing ──end (released)──► done
 *             ▲  │                  │
 *             │  │ a transient      │ session gone, or a transient failure
 *             │  ▼ failure          ▼
 *             └─ between ◄──────────┘         (after a backoff, creating again)
 * ```
 *
 * `done` also follows a permanent failure, a prefix problem, a try-once answer, or a close() from
 * `creating` or `between`.
 *
 * - `creating`: a session request is out (the session loop);
 * - `between`: waiting to ask for a session again, after a failure or a lost session;
 * - `running`: a session and its run: following the prefix, stepping, acting on the commands;
 * - `closing`: close() asked its run to release; the run's `end` completes the member;
 * - `done`: completed, failed or stopped: nothing runs, nothing is emitted.
 */
type MemberPhase =
  | { readonly name: 'creating' | 'between' | 'done' }
  | { readonly name: 'running' | 'closing'; readonly run: SessionRun }

/** What one session's run holds: all of it is torn down together when the run ends. */
interface SessionRun {
  readonly session: string
  readonly perform: (action: ContenderAction) => Observable<ContenderEvent>
  readonly lease: SessionLease
  /** The write in flight (`write` commands), and its subscription. */
  write: { readonly action: ContenderAction; subscription?: Subscription } | undefined
  /** The one wake-up the step asked for (`wake` commands). */
  wakeTimer: Subscription | undefined
  /** The join in flight, and how to tell the coordinator it is over. */
  join: { readonly done: () => void; subscription?: Subscription } | undefined
  /** The index of the join's answer: older snapshots are not stepped on. */
  seedIndex: bigint | undefined
  /** This contender's decision on the last snapshot it was asked about (coordinator, filter). */
  decided: { readonly snapshot: KVSnapshot; readonly decision: Decision } | undefined
  /** The last decision a waiter far back stepped on, and when (`passToWaiter`). */
  passed: WaiterPassed | undefined
  /** The last snapshot `passToWaiter` held back, until it is stepped on (`holdBack`). */
  heldBack: Extract<WatchEvent, { type: 'snapshot' }> | undefined
  refreshTimer: Subscription | undefined
}

/**
 * One contender (of a semaphore, or of a leader election, by `options.protocol`), from session to
 * slot and back, until it is closed or stopped: the interpreter of its pure step. It registers
 * with its prefix's coordinator, which owns the one watch and decides each snapshot for every
 * member; each input (a snapshot with its decision, a lease event, a write's answer, a wake-up)
 * runs through `contenderStep`, and the member emits the new state and carries out the step's
 * commands: start or cancel the write, set the one wake-up, end the run (and release). Its
 * sessions come from a `SessionLoop` (create, retry, start-up timeout); its lifecycle is one
 * `MemberPhase`. No Observable pipeline per contender: a waiting contender is this object, its
 * state, its lease's timer, its wake-up and, while a snapshot is held back from it, a refresh.
 *
 * ```
 * SessionLoop ─► session ─► join ─► follow the prefix ─► contenderStep ─► commands ─► write …
 *      ▲                                                       │ end
 *      └──── session gone (again) / transient failure (failed) ◄┘
 * ```
 *
 * When the session is lost it starts over with a new one; transient failures are retried with the
 * `session` backoff; a prefix problem or a permanent failure ends it with a SemaphoreError.
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
export function contend(options: ContendOptions, observer: ContenderObserver): Member {
  const member = new Member(options, observer)
  member.start()
  return member
}

/**
 * A running contender, a member of its prefix's coordinator. Its handle calls `close()` (release
 * now, contend no more; completes the observer once the release started) and `stop()` (nobody
 * listens any more: release in the background, and tell the observer nothing more).
 */
export class Member implements CoordinatedMember, LeaseListener {
  private readonly scheduler: SchedulerLike
  private readonly random: () => number
  private readonly coordinator: PrefixCoordinator
  private readonly leaveCoordinator: () => void
  private readonly contender: ProtocolMember
  private readonly sessions: SessionLoop
  /** The step's options; `tryOnce` set while a try-once contender has not held yet. */
  private core: ContenderStateOptions
  private readonly decide: DecideStep
  private readonly refreshMs: number
  /** Metrics and spans of this contender (docs/observability.md); no-ops without an SDK. */
  private readonly telemetry: ContenderTelemetry

  private phase: MemberPhase = { name: 'creating' }
  /** The state after the last step (between runs: the last run's, the base of the notices). */
  private state: ContenderState = initialContenderState
  /** Inputs of the run, stepped one at a time: one that arrives during a step waits its turn. */
  private readonly inbox: ContenderInput[] = []

  constructor(
    private readonly options: ContendOptions,
    private readonly observer: ContenderObserver,
  ) {
    this.scheduler = options.scheduler ?? asyncScheduler
    this.random = options.random ?? Math.random
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
    this.decide = options.protocol.decide(this.contender)
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
      decide: this.decide,
      tryOnce: options.tryOnce === true,
      renew: options.protocol.renew?.(this.contender),
    }
    this.sessions = new SessionLoop(
      { ...options, scheduler: this.scheduler, random: this.random },
      {
        onCreating: () => (this.phase = { name: 'creating' }),
        onSession: (session, sentAt, ttlMs) => this.begin(session, sentAt, ttlMs),
        onRetrying: (error) => this.retrying(error),
        mayRetry: () => this.core.tryOnce !== true,
        onGiveUp: (error) => this.fail(error),
      },
    )
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
    this.sessions.start()
  }

  close(): void {
    const phase = this.phase
    switch (phase.name) {
      case 'running':
        this.phase = { name: 'closing', run: phase.run }
        return this.input({ type: 'release-requested' })
      case 'creating':
      case 'between':
        // Waiting to retry, or for a session (destroyed once it exists): it ends quietly.
        return this.complete('closed')
      default:
        return
    }
  }

  /**
   * The job this holder served has ended and another job of its process waits: write the renewal
   * that gives the next one a fresh fencing token (`holding` is false until it commits), or
   * rotate to the tail of the queue when others wait. Nothing when it does not hold.
   */
  renew(): void {
    if (this.phase.name === 'running') this.input({ type: 'renew' })
  }

  stop(): void {
    const run = this.runOf()
    if (this.phase.name === 'done') return
    if (run !== undefined) this.endRun(run, true)
    this.finish('closed')
  }

  /** The run inputs go to: the running (or closing) session's. */
  private runOf(): SessionRun | undefined {
    const phase = this.phase
    return phase.name === 'running' || phase.name === 'closing' ? phase.run : undefined
  }

  // ── CoordinatedMember ────────────────────────────────────────────────────────────────────────

  decisionOn(snapshot: KVSnapshot): Decision | undefined {
    const run = this.runOf()
    if (run === undefined) return undefined
    if (run.decided?.snapshot === snapshot) return run.decided.decision
    const decision = this.decide(snapshot, {
      prefix: this.options.prefix,
      session: run.session,
      limit: this.options.limit,
      followLimit: this.options.followLimit,
      fairness: this.options.fairness,
    })
    run.decided = { snapshot, decision }
    return decision
  }

  onWatch(event: WatchEvent): void {
    const run = this.runOf()
    if (run === undefined) return
    if (event.type !== 'snapshot') {
      // The first snapshot after a failure passes: it reconnects.
      run.passed = undefined
      this.forgetHeldBack(run)
      return this.input(event)
    }
    // Nothing older than a join's answer, unless the watch says the index went back (reset).
    if (
      run.seedIndex !== undefined &&
      event.reset !== true &&
      event.snapshot.index < run.seedIndex
    ) {
      return
    }
    const decision = this.decisionOn(event.snapshot)
    if (this.options.protocol.herdFree && decision !== undefined) {
      const passed = passToWaiter(run.passed, decision, this.scheduler.now(), this.refreshMs)
      if (passed === undefined) return this.holdBack(run, event)
      run.passed = passed
    }
    this.forgetHeldBack(run)
    this.input({ ...event, decision })
  }

  /**
   * A snapshot held back from a waiter far back is stepped on when the waiter's refresh is due,
   * unless another passed meanwhile: the prefix may stay quiet after it for as long as dead
   * waiters ahead keep their keys, and it may be the one that shows a free slot, on which the
   * fairness grace counts (`decidePatiently`). Dropped, it would leave the waiter deciding on
   * the snapshot before, with no slot free, until the next change under the prefix.
   */
  private holdBack(run: SessionRun, event: Extract<WatchEvent, { type: 'snapshot' }>): void {
    run.heldBack = event
    const passed = run.passed
    if (run.refreshTimer !== undefined || passed === undefined) return
    run.refreshTimer = this.scheduler.schedule(
      () => {
        run.refreshTimer = undefined
        const due = run.heldBack
        run.heldBack = undefined
        if (due === undefined || this.runOf() !== run) return
        const decision = this.decisionOn(due.snapshot)
        if (decision !== undefined) run.passed = { decision, at: this.scheduler.now() }
        this.input({ ...due, decision })
      },
      Math.max(0, passed.at + this.refreshMs - this.scheduler.now()),
    )
  }

  private forgetHeldBack(run: SessionRun): void {
    run.heldBack = undefined
    run.refreshTimer?.unsubscribe()
    run.refreshTimer = undefined
  }

  // ── LeaseListener ────────────────────────────────────────────────────────────────────────────

  onLease(event: LeaseEvent): void {
    this.input(event)
  }

  onLeaseError(error: ConsulError): void {
    this.runFailed(error)
  }

  onWatchError(error: unknown): void {
    this.runFailed(error)
  }

  // ── a session's run ──────────────────────────────────────────────────────────────────────────

  private begin(session: string, sentAt: number, ttlMs: number): void {
    const { client, adoptedSession } = this.options
    const leaseMarginMs = this.leaseMarginFor(ttlMs)
    if (leaseMarginMs === undefined) {
      return this.fail(
        new SemaphoreError(
          'InvalidOptions',
          `option leaseMargin: ${this.options.leaseMarginMs} ms is not less than the TTL of ` +
            `session ${session} (${ttlMs} ms): give a shorter margin, or a fraction of the TTL.`,
        ),
      )
    }
    if (adoptedSession !== undefined) this.core = { ...this.core, leaseMarginMs }
    const run: SessionRun = {
      session,
      perform: this.options.protocol.performer(this.contender, session),
      lease: new SessionLease(
        {
          client,
          session,
          ttlMs,
          createdAt: sentAt,
          leaseMarginMs,
          scheduler: this.scheduler,
          random: this.random,
        },
        this,
      ),
      write: undefined,
      wakeTimer: undefined,
      join: undefined,
      seedIndex: undefined,
      decided: undefined,
      passed: undefined,
      heldBack: undefined,
      refreshTimer: undefined,
    }
    this.phase = { name: 'running', run }
    this.state = initialContenderState
    this.emit(this.state)
    this.input({ type: 'session-created', session, ttlMs, sentAt })
    if (this.runOf() === run) this.join(run)
  }

  /**
   * The lease margin of a session of `ttlMs`: the options', or, for an adopted session and a
   * margin given as a fraction, that fraction of its own TTL; undefined when it is not less than
   * the TTL.
   */
  private leaseMarginFor(ttlMs: number): number | undefined {
    const { adoptedSession, leaseMarginRatio, leaseMarginMs } = this.options
    if (adoptedSession === undefined) return leaseMarginMs
    const margin = leaseMarginRatio !== undefined ? leaseMarginRatio * ttlMs : leaseMarginMs
    return margin < ttlMs ? margin : undefined
  }

  /**
   * Follows the prefix's watch; the process's only contender of a sound prefix joins first. An
   * adopted session does not: its key may be there already, held (`ContenderOptions.session`),
   * and the join's write would turn it back into a waiter's; the first snapshot tells.
   */
  private join(run: SessionRun): void {
    const { protocol, adoptedSession } = this.options
    if (
      protocol.join === undefined ||
      adoptedSession !== undefined ||
      !this.coordinator.mayJoin(this.contender)
    ) {
      return this.follow(run, undefined)
    }
    const join: NonNullable<SessionRun['join']> = { done: this.coordinator.startJoin() }
    run.join = join
    const subscription = protocol
      .join(this.contender, run.session)
      .pipe(defaultIfEmpty(undefined), take(1))
      .subscribe((seed) => {
        join.done()
        run.join = undefined
        if (this.runOf() === run) this.follow(run, seed)
      })
    if (run.join === join) join.subscription = subscription
  }

  private follow(run: SessionRun, seed: KVSnapshot | undefined): void {
    run.seedIndex = seed?.index
    this.coordinator.follow(this, seed)
  }

  /** Steps the run on one input; inputs that arrive while it steps wait their turn. */
  private input(input: ContenderInput): void {
    this.inbox.push(input)
    if (this.inbox.length > 1) return
    try {
      for (let next = this.inbox[0]; next !== undefined; next = this.inbox[0]) {
        const run = this.runOf()
        if (run !== undefined) this.step(run, next)
        this.inbox.shift()
      }
    } finally {
      this.inbox.length = 0
    }
  }

  private step(run: SessionRun, input: ContenderInput): void {
    const before = this.state
    const now = this.scheduler.now()
    const { state, commands } = contenderStep(before, input, now, this.core)
    this.state = state
    this.telemetry.stepped(state, input, now)
    this.sessions.succeeded()
    // Once it held, a try-once contender behaves as any contender.
    if (state.holding && this.core.tryOnce === true) this.core = { ...this.core, tryOnce: false }
    if (!sameContenderState(before, state)) this.emit(state)
    // Every subscriber heard the state before its commands run: a release starts after
    // `holding` false was heard.
    this.interpret(run, commands)
  }

  /** Carries out one step's commands, in order, for as long as the run lasts. */
  private interpret(run: SessionRun, commands: readonly ContenderCommand[]): void {
    for (const command of commands) {
      if (this.runOf() !== run) return
      switch (command.type) {
        case 'write':
          this.startWrite(run, command.action)
          break
        case 'cancel-write':
          this.startWrite(run, undefined)
          break
        case 'wake':
          this.setWake(run, command.at)
          break
        case 'end':
          this.ended(run, command)
          break
      }
    }
  }

  private setWake(run: SessionRun, at: number | undefined): void {
    run.wakeTimer?.unsubscribe()
    run.wakeTimer =
      at === undefined
        ? undefined
        : this.scheduler.schedule(
            () => {
              run.wakeTimer = undefined
              this.input({ type: 'wake' })
            },
            Math.max(0, at - this.scheduler.now()),
          )
  }

  /**
   * Starts the write the step asks for, cancelling the one in flight (or only cancels it). Its
   * events are stepped on, and its completion too (`written`): a write that ends without news for
   * the core (a contender key written: the next snapshot is to show it) is over, and a later
   * decision that still asks for it makes it again.
   */
  private startWrite(run: SessionRun, action: ContenderAction | undefined): void {
    run.write?.subscription?.unsubscribe()
    run.write = undefined
    if (action === undefined) return
    const write: NonNullable<SessionRun['write']> = { action }
    run.write = write
    const subscription = run.perform(action).subscribe({
      next: (event: ContenderEvent) => this.input(event),
      error: (error: unknown) => this.runFailed(error),
      complete: () => this.input({ type: 'written', action }),
    })
    if (run.write === write) write.subscription = subscription
  }

  // ── ends of runs ─────────────────────────────────────────────────────────────────────────────

  /** The step ended the run: release or not as it says, then what follows its reason. */
  private ended(run: SessionRun, end: Extract<ContenderCommand, { type: 'end' }>): void {
    const was = this.endRun(run, end.release)
    if (end.why === 'problem' && this.state.problem !== undefined) {
      return this.fail(this.options.protocol.problemError(this.state.problem))
    }
    // Released (only close() asks), refused (a try-once contender's answer: not held), or, for a
    // try-once contender that has not held yet, a lost session: nothing follows.
    if (was === 'closing') return this.complete('closed')
    const { adoptedSession } = this.options
    // No session is made in place of an adopted one.
    if (end.why === 'session-gone' && adoptedSession !== undefined) {
      return this.fail(adoptedSessionGone(adoptedSession, 'ended while the contender used it'))
    }
    if (end.why !== 'session-gone' || this.core.tryOnce === true) return this.complete('refused')
    this.sessions.again()
  }

  /**
   * Ends the run of a session: release (when asked), then tear down all it holds. The member is
   * `between` sessions after it, until its caller says what follows.
   *
   * @returns The phase the run ended in: `closing` when close() asked for it.
   */
  private endRun(run: SessionRun, release: boolean): 'running' | 'closing' {
    const was = this.phase.name === 'closing' ? 'closing' : 'running'
    this.phase = { name: 'between' }
    if (release) {
      // Only a contender given a shelf (a job pool's worker) and closed keeps its session; a
      // failed or stopped one destroys it.
      // An adopted session is never destroyed.
      const keep =
        this.options.adoptedSession !== undefined
          ? 'adopted'
          : this.options.shelf !== undefined && was === 'closing'
      const renewal = run.lease.lastRenewal
      const { session } = run
      const released = this.options.protocol.release(
        this.contender,
        session,
        this.state.snapshot,
        keep,
      )
      const { telemetry, sessions } = this
      this.options.onRelease(
        released.then((result) => {
          telemetry.released(result)
          if (E.isRight(result) && result.right !== undefined && 'sessionKept' in result.right)
            sessions.shelve(session, renewal)
          return E.map((): void => undefined)(result)
        }),
      )
    }
    // The run is dropped with the phase: only what runs on without it is stopped.
    run.wakeTimer?.unsubscribe()
    run.refreshTimer?.unsubscribe()
    run.lease.stop()
    run.write?.subscription?.unsubscribe()
    run.join?.subscription?.unsubscribe()
    run.join?.done()
    // A no-op when the coordinator already let every member go (its watch failed).
    this.coordinator.unfollow(this)
    return was
  }

  /** A failure inside a run (a write, the lease, the watch): release, then retry or give up. */
  private runFailed(error: unknown): void {
    const run = this.runOf()
    if (run === undefined) return
    // A closed contender ends quietly: whatever failed, its user no longer listens for it.
    if (this.endRun(run, true) === 'closing') return this.complete('closed')
    this.sessions.failed(error)
  }

  /** A transient failure of a session's creation or run: a new session comes after a backoff. */
  private retrying(error: ConsulError): void {
    this.phase = { name: 'between' }
    // While no session can be made, the step does not run: these states say why it waits.
    if (!this.state.holding) {
      this.emit({
        ...this.state,
        connected: false,
        next: undefined,
        lastFailure: { during: 'session', error },
      })
    }
  }

  private emit(state: ContenderState): void {
    if (this.phase.name !== 'done') this.observer.next(state)
  }

  /** Completes the contender: closed, or a try-once contender's refusal. */
  private complete(why: 'closed' | 'refused'): void {
    if (this.phase.name === 'done') return
    this.finish(why)
    this.observer.complete()
  }

  private fail(error: SemaphoreError): void {
    if (this.phase.name === 'done') return
    const run = this.runOf()
    if (run !== undefined) this.endRun(run, true)
    this.finish({ failed: error.kind })
    this.observer.error(error)
  }

  /** Stops the session loop and leaves the coordinator. Emits nothing. */
  private finish(why: ContenderEnd): void {
    this.phase = { name: 'done' }
    this.telemetry.ended(why, this.scheduler.now())
    this.sessions.stop()
    this.leaveCoordinator()
  }
}
