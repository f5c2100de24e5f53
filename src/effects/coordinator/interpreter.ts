import {
  Observable,
  asyncScheduler,
  defaultIfEmpty,
  take,
  type Observer,
  type SchedulerLike,
  Subscription,
} from 'rxjs'
import {
  lifeStep,
  unstarted,
  type ContenderLife,
  type LifeCommand,
  type LifeInput,
  type LifeOptions,
  type LifeTimer,
} from '../../core/contender/contender-life.js'
import type { ContenderState } from '../../core/contender/contender-state-model.js'
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
type Call = 'session' | 'lease' | 'join' | 'follow' | 'write'

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
  private readonly calls: Record<Call, Subscription | undefined> = {
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
        return this.call('session', port.session(command.from), {
          next: (created) => this.input({ type: 'session', ...created, mayJoin: port.mayJoin() }),
          error: (error: unknown) => this.input({ type: 'session-failed', error }),
        })
      case 'lease':
        return this.call('lease', port.lease(command), {
          next: (event) => this.input(event),
          error: (error: unknown) => this.input({ type: 'run-failed', error }),
        })
      case 'join':
        return this.call(
          'join',
          port.join(command.session).pipe(defaultIfEmpty(undefined), take(1)),
          { next: (seed) => this.input({ type: 'joined', seed }) },
        )
      case 'follow':
        return this.call('follow', port.follow(command.session, command.seed), {
          next: (event) => this.input(event),
          error: (error: unknown) => this.input({ type: 'run-failed', error }),
        })
      case 'write': {
        const { action } = command
        return this.call('write', port.perform(command.session, action), {
          next: (event) => this.input(event),
          error: (error: unknown) => this.input({ type: 'run-failed', error }),
          complete: () => this.input({ type: 'written', action }),
        })
      }
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
  private call<T>(
    kind: Call,
    source: Observable<T>,
    observer: Partial<Observer<T>> & { readonly next: (value: T) => void },
  ): void {
    this.cancel(kind)
    // A call may end before subscribe() returns (an answer already known).
    const subscription = new Subscription()
    let ended = false
    const end = (): void => {
      ended = true
      if (this.calls[kind] === subscription) this.calls[kind] = undefined
    }
    subscription.add(
      source.subscribe({
        next: observer.next,
        error: (error: unknown) => {
          end()
          observer.error?.(error)
        },
        complete: () => {
          end()
          observer.complete?.()
        },
      }),
    )
    if (!ended) this.calls[kind] = subscription
  }

  private cancel(kind: Call): void {
    this.calls[kind]?.unsubscribe()
    this.calls[kind] = undefined
  }

  private setTimer(name: LifeTimer, at: number | undefined): void {
    this.timers[name]?.unsubscribe()
    this.timers[name] = undefined
    if (at === undefined) return
    const fire = (): void => {
      this.timers[name] = undefined
      this.input(this.due(name))
    }
    this.timers[name] = this.scheduler.schedule(fire, Math.max(0, at - this.scheduler.now()))
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
    for (const call of Object.keys(this.calls) as Call[]) this.cancel(call)
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
