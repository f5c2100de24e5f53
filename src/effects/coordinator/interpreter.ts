import {
  Observable,
  asyncScheduler,
  defaultIfEmpty,
  take,
  type SchedulerAction,
  type SchedulerLike,
  type Subscription,
} from 'rxjs'
import type { KVSnapshot } from '../../base/kv-snapshot.js'
import {
  lifeStep,
  unstarted,
  type ContenderLife,
  type LifeCommand,
  type LifeInput,
  type LifeOptions,
  type LifeTimer,
  type SessionGrant,
} from '../../core/contender/contender-life.js'
import type { ContenderAction, ContenderState } from '../../core/contender/contender-state-model.js'
import type { SemaphoreError } from '../../base/semaphore-error.js'
import type { ContenderPort } from './contender-port.js'

/** Where a contender's states go: the core's state after each event, across sessions. */
export interface ContenderObserver {
  readonly next: (state: ContenderState) => void
  /** A prefix problem or a permanent failure; nothing follows. */
  readonly error: (error: SemaphoreError) => void
  /** The contender was closed (and its release started), or a try-once contender gave up. */
  readonly complete: () => void
}

/** The calls a contender has out, at most one of each. */
type CallKind = 'session' | 'lease' | 'join' | 'follow' | 'write'

/**
 * One call of the interpreter's port, as the observer of its Observable: it hands what the call
 * says to its interpreter. One object per call, with its methods on the prototype: the calls of a
 * waiting contender (its lease, its watch) are out for its whole life, thousands of times over in
 * a process.
 */
class Call {
  /** What the call's subscribe returned, once it returned (unless it ended first). */
  subscription: Subscription | undefined = undefined
  ended = false

  constructor(
    private readonly interpreter: Interpreter,
    readonly kind: CallKind,
    /** A write's action, for `written` when it completes. */
    readonly action?: ContenderAction,
  ) {}

  next(value: unknown): void {
    this.interpreter.answered(this, value)
  }

  error(error: unknown): void {
    this.interpreter.failed(this, error)
  }

  complete(): void {
    this.interpreter.completed(this)
  }
}

/** A timer's work: one module-level function for every timer (its state says whose, which). */
function fireTimer(
  this: SchedulerAction<{ readonly interpreter: Interpreter; readonly name: LifeTimer }>,
  state?: { readonly interpreter: Interpreter; readonly name: LifeTimer },
): void {
  state?.interpreter.fired(state.name)
}

/**
 * The one interpreter of a contender's machine (`lifeStep`): it feeds each input through the
 * machine, one at a time (an input that arrives while a step is carried out waits its turn), and
 * carries out the commands on its port and its scheduler: it subscribes the calls the machine
 * asks for and unsubscribes them when it no longer wants them, sets and clears its timers, and
 * tells the observer. It decides nothing: which call, when, and what follows an answer is the
 * machine's.
 *
 * ```
 * port answers, timers, close()/stop()/refence() ─► lifeStep ─► commands ─► port calls, timers
 *                                                    └─► emit ─► observer.next(state)
 * ```
 *
 * @example
 * const interpreter = new Interpreter(port, lifeOptions, scheduler, observer)
 * interpreter.start()
 * // ... later
 * interpreter.close()
 */
export class Interpreter {
  private life: ContenderLife = unstarted
  private readonly inbox: LifeInput[] = []
  // One field per kind: a contender is thousands of times in a process, and a Map costs more.
  private readonly calls: Record<CallKind, Call | undefined> = {
    session: undefined,
    lease: undefined,
    join: undefined,
    follow: undefined,
    write: undefined,
  }
  private readonly timers: Record<LifeTimer, Subscription | undefined> = {
    startup: undefined,
    retry: undefined,
    wake: undefined,
  }

  constructor(
    private readonly port: ContenderPort,
    private readonly options: LifeOptions,
    private readonly scheduler: SchedulerLike,
    private readonly observer: ContenderObserver,
  ) {}

  /** Asks for the first session. */
  start(): void {
    this.input({ type: 'start', answers: this.port.answers() })
  }

  /** Releases now and contends no more; completes the observer once the release started. */
  close(): void {
    this.input({ type: 'close' })
  }

  /** Nobody listens any more: releases in the background and tells the observer nothing more. */
  stop(): void {
    this.input({ type: 'stop' })
  }

  /**
   * The job this holder served has ended and another job of its process waits: the write that
   * gives the next one a fresh fencing token (or the token written ahead). With `ahead`, a job has
   * just started and another waits: the next one's token may be written now. Nothing when it
   * does not hold.
   */
  refence(ahead = false): void {
    this.input(ahead ? { type: 'refence', ahead } : { type: 'refence' })
  }

  private input(input: LifeInput): void {
    this.inbox.push(input)
    if (this.inbox.length > 1) return
    try {
      for (let next = this.inbox[0]; next !== undefined; next = this.inbox[0]) {
        const step = lifeStep(this.life, next, this.scheduler.now(), this.options)
        this.life = step.life
        step.commands.forEach((command) => this.carryOut(command))
        this.inbox.shift()
      }
    } finally {
      this.inbox.length = 0
    }
  }

  private carryOut(command: LifeCommand): void {
    const { port } = this
    switch (command.type) {
      case 'create-session':
        return this.call(new Call(this, 'session'), port.session(command.from))
      case 'lease':
        return this.call(new Call(this, 'lease'), port.lease(command))
      case 'join':
        return this.call(
          new Call(this, 'join'),
          port.join(command.session).pipe(defaultIfEmpty(undefined), take(1)),
        )
      case 'follow':
        return this.call(new Call(this, 'follow'), port.follow(command.session, command.seed))
      case 'write':
        return this.call(
          new Call(this, 'write', command.action),
          port.perform(command.session, command.action),
        )
      case 'cancel-write':
        return this.cancel('write')
      case 'timer':
        return this.setTimer(command.name, command.at)
      case 'hold-back':
        return port.holdBack(command.until)
      case 'end-run':
        if (command.release !== false) port.release(command.session, command.release)
        for (const call of ['lease', 'join', 'follow', 'write'] as const) this.cancel(call)
        return this.setTimer('wake', undefined)
      case 'emit':
        return this.observer.next(command.state)
      case 'stepped':
        return port.stepped(command.input, command.state, this.scheduler.now())
      case 'finish':
        return this.finish(command)
    }
  }

  /** Starts a call, in place of the one of its kind; it is forgotten once it ends. */
  private call(call: Call, source: Observable<unknown>): void {
    const { kind } = call
    this.cancel(kind)
    const subscription = source.subscribe(call)
    // A call may end before subscribe() returns (an answer already known).
    if (call.ended) return
    call.subscription = subscription
    this.calls[kind] = call
  }

  private cancel(kind: CallKind): void {
    this.calls[kind]?.subscription?.unsubscribe()
    this.calls[kind] = undefined
  }

  /** @internal A call's answer, as its machine's input. */
  answered(call: Call, value: unknown): void {
    switch (call.kind) {
      case 'session':
        return this.input({
          type: 'session',
          ...(value as SessionGrant),
          mayJoin: this.port.mayJoin(),
        })
      case 'join':
        return this.input({ type: 'joined', seed: value as KVSnapshot | undefined })
      default:
        // The lease's, the watch's and the write's events are the machine's inputs as they are.
        return this.input(value as LifeInput)
    }
  }

  /** @internal A call that failed (the join fails quietly: the machine goes on without it). */
  failed(call: Call, error: unknown): void {
    this.ended(call)
    if (call.kind === 'session') return this.input({ type: 'session-failed', error })
    if (call.kind !== 'join') this.input({ type: 'run-failed', error })
  }

  /** @internal A call that completed: only a write's completion is news (`written`). */
  completed(call: Call): void {
    this.ended(call)
    if (call.action !== undefined) this.input({ type: 'written', action: call.action })
  }

  private ended(call: Call): void {
    call.ended = true
    if (this.calls[call.kind] === call) this.calls[call.kind] = undefined
  }

  private setTimer(name: LifeTimer, at: number | undefined): void {
    this.timers[name]?.unsubscribe()
    this.timers[name] = undefined
    if (at === undefined) return
    const delay = Math.max(0, at - this.scheduler.now())
    this.timers[name] = this.scheduler.schedule(fireTimer, delay, { interpreter: this, name })
  }

  /** @internal A timer fired (the timer's work): it is fed to the machine. */
  fired(name: LifeTimer): void {
    this.timers[name] = undefined
    this.input(this.due(name))
  }

  private due(name: LifeTimer): LifeInput {
    switch (name) {
      case 'wake':
        return { type: 'wake' }
      case 'startup':
        return { type: 'startup-due', answers: this.port.answers() }
      case 'retry':
        return { type: 'retry-due' }
    }
  }

  private finish(command: Extract<LifeCommand, { type: 'finish' }>): void {
    for (const call of Object.keys(this.calls) as CallKind[]) this.cancel(call)
    for (const name of Object.keys(this.timers) as LifeTimer[]) this.setTimer(name, undefined)
    const { outcome } = command
    const error = typeof outcome === 'string' ? undefined : this.port.failure(outcome)
    this.port.finished(
      error === undefined ? (outcome as 'closed' | 'refused') : { failed: error.kind },
      this.scheduler.now(),
    )
    if (command.quiet) return
    if (error === undefined) this.observer.complete()
    else this.observer.error(error)
  }
}

/**
 * A contender's states as an Observable: the interpreter on `port`, started on subscribe and
 * stopped on unsubscribe. What the marble specs run, on a port of marbles.
 *
 * @example
 * contenderStates(port, lifeOptions, scheduler).subscribe((state) => console.log(state.holding))
 */
export function contenderStates(
  port: ContenderPort,
  options: LifeOptions,
  scheduler: SchedulerLike = asyncScheduler,
): Observable<ContenderState> {
  return new Observable<ContenderState>((subscriber) => {
    const interpreter = new Interpreter(port, options, scheduler, {
      next: (state) => subscriber.next(state),
      error: (error) => subscriber.error(error),
      complete: () => subscriber.complete(),
    })
    interpreter.start()
    return () => interpreter.stop()
  })
}
