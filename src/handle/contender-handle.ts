import * as E from 'fp-ts/lib/Either.js'
import {
  BehaviorSubject,
  Observable,
  asyncScheduler,
  defer,
  finalize,
  type SchedulerLike,
  type Subscriber,
} from 'rxjs'
import type { ConsulClient } from '../consul/client-api.js'
import { borrowDefaultClient, type BorrowedClient } from '../consul/default-client.js'
import type { ConsulError } from '../base/consul-error.js'
import type { ContenderState } from '../core/contender/contender-state-model.js'
import type { TransitionReason } from '../core/events.js'
import { contend, type ContendOptions, type Member } from '../effects/coordinator/contend.js'
import type { ContenderObserver } from '../effects/coordinator/interpreter.js'
import { contenderShelf, type ContenderShelf } from '../effects/session-shelf.js'
import { SemaphoreError, toSemaphoreError } from '../base/semaphore-error.js'
import { serializable } from './serializable-state.js'
import { handleStreams } from './handle-streams.js'
import { slotGuard, type SlotGuard } from './slot-guard.js'
import { sentences } from '../base/sentences.js'

/** What the streams of a handle other than `state$` (such as `leader$`) get from it. */
export interface ContenderLifecycle {
  /** Becomes true on close(): release now, contend no more. */
  readonly closing: BehaviorSubject<boolean>
  /**
   * `use(client)`, holding a reference to the shared default client while it is subscribed: the
   * client given in the options, or the process's shared default one.
   */
  readonly withClient: <T>(use: (client: ConsulClient) => Observable<T>) => Observable<T>
}

/** The public state of any contender: what the handle and its guard read of it. */
export interface HeldState {
  readonly holding: boolean
  readonly reason: TransitionReason | undefined
  readonly session: string | undefined
  readonly fencingToken: bigint | undefined
  readonly leaseDeadline: number | undefined
}

export interface ContenderHandleSpec<S extends HeldState> {
  /** The client from the options, if any. */
  readonly consul: ConsulClient | undefined
  /** The state before anything is known. */
  readonly idle: S
  /**
   * The contender's options (without the client and the release sink, which the handle gives),
   * validated already, when the contender was made.
   */
  readonly options: Omit<ContendOptions, 'client' | 'onRelease'>
  /** The public state of a core state, given the options the contender runs with. */
  readonly toState: (
    core: ContenderState,
    options: Omit<ContendOptions, 'client' | 'onRelease'>,
  ) => S
  /** Whether two states would look the same to a subscriber. */
  readonly same: (a: S, b: S) => boolean
  /** What close() says, after the error's own message, when the release failed. */
  readonly releaseFailedHint: string
  /** The key whose lock by `session` proves that the contender holds (for the fenced write). */
  readonly guardKey: (session: string) => string
  /** The contender's scheduler, whose clock the lease deadline is on; default asyncScheduler. */
  readonly scheduler?: SchedulerLike | undefined
  /**
   * Keep a session given up cleanly on the process's shelf for the next contender with the same
   * session options (a job pool's workers); default false: close() destroys the session before it
   * resolves.
   */
  readonly shelveAlways?: boolean | undefined
}

/** The shared lifecycle of `semaphore(...)` and `leaderElection(...)`. */
export interface ContenderHandle<S extends HeldState> {
  readonly state$: Observable<S>
  readonly holding$: Observable<boolean>
  readonly lifecycle: ContenderLifecycle
  readonly close: () => Promise<void>
  /** The synchronous guard and the fenced write, on the latest state. */
  readonly guard: SlotGuard
  /**
   * Asks the running member for a fresh fencing token (`Member.refence`), or with `ahead` for the
   * next job's while this one runs; for the job pool.
   */
  readonly refence: (ahead?: boolean) => void
}

/**
 * Turns a contender's state stream into the public handle both contender kinds share: `state$`
 * starts with the idle state, keeps the reason of the last transition across sessions, says "not
 * holding" before any error (so `holding$` never ends on true) and errors only with a
 * SemaphoreError; it is shared (the first subscriber starts contending, late subscribers get the
 * current state at once, the last unsubscribe releases). `close()` releases and resolves when
 * every background release has finished.
 *
 * @example
 * const handle = contenderHandle({ consul, idle, states: (l) => contend({ ...options, ...l }), ... })
 * handle.holding$.subscribe(console.log)
 * @returns The handle.
 */
export function contenderHandle<S extends HeldState>(
  spec: ContenderHandleSpec<S>,
): ContenderHandle<S> {
  const closing = new BehaviorSubject(false)
  // Made with the first release: most handles of a process wait, and have none.
  let releases: Set<Promise<E.Either<ConsulError, void>>> | undefined

  // Without a client in the options, the handle holds one reference to the process's default
  // client while it has users: running subscriptions and background releases. With none left it
  // gives the reference back; the client then stays open for a short idle grace, so the next
  // tenure reuses it, and is closed after it. Nothing of an idle client keeps the process alive.
  let borrowed: BorrowedClient | undefined
  let users = 0
  let returned: Promise<void> = Promise.resolve()
  const use = (): (() => void) => {
    if (spec.consul !== undefined) return () => undefined
    if (users === 0) borrowed = borrowDefaultClient()
    users++
    let done = false
    return () => {
      if (done) return
      done = true
      if (--users > 0 || borrowed === undefined) return
      // Never rejects: nothing may await it (close() is optional), so a failure here must not
      // become an unhandled rejection; the pool is forgotten either way.
      returned = borrowed.release().catch(() => undefined)
      borrowed = undefined
    }
  }
  const client = (): ConsulClient => {
    const running = spec.consul ?? borrowed?.client
    if (running === undefined) throw new Error('contenderHandle: no client outside a subscription')
    return running
  }
  const withClient = <T>(run: (client: ConsulClient) => Observable<T>): Observable<T> =>
    defer(() => {
      const done = use()
      try {
        // Let go a microtask later, as the states' teardown does: a stream resubscribed in the
        // same turn keeps the default client rather than closing and reopening it.
        return run(client()).pipe(finalize(() => queueMicrotask(done)))
      } catch (error) {
        done()
        throw error
      }
    })

  // Hands each background release to the handle, so close() can await it.
  const onRelease = (release: Promise<E.Either<ConsulError, void>>): void => {
    const done = use()
    // Releases resolve to an Either; the catch only keeps a bug from becoming an unhandled
    // rejection.
    ;(releases ??= new Set()).add(
      release
        .catch((error: unknown) =>
          E.left<ConsulError>({ _tag: 'Unreachable', message: String(error), cause: error }),
        )
        .finally(done),
    )
  }
  const lifecycle: ContenderLifecycle = { closing, withClient }

  // close() keeps its promise on every client: when it resolves, Consul holds no session of the
  // contender, whatever the process does next (`process.exit()` included). Only a job pool's
  // workers, which the pool closes and opens again within milliseconds while jobs keep coming,
  // keep a session given up cleanly on the process's shelf for the pool's next worker; on the
  // default client a kept session holds that client open until it is taken or destroyed.
  const shelfOf = (running: ConsulClient): ContenderShelf | undefined =>
    spec.shelveAlways !== true
      ? undefined
      : spec.consul === undefined
        ? contenderShelf(running, {
            hold: () => {
              const held = borrowDefaultClient()
              return () => void held.release().catch(() => undefined)
            },
          })
        : contenderShelf(running)

  // The latest state of the running contender, renewals included, for the guard.
  const latest: Latest<S> = { current: undefined }
  const guard = slotGuard({
    current: () => latest.current,
    guardKey: spec.guardKey,
    client,
    now: () => (spec.scheduler ?? asyncScheduler).now(),
  })

  // The running contender (`state$` is shared: one at a time), for close().
  let running: Member | undefined
  // One Observable, no operator chain: a thousand waiting contenders are a thousand members and
  // their subscribers, nothing more (see the bench's subscribers per contender).
  const states = new Observable<S>((subscriber) => {
    const observer = new StatesObserver(spec, subscriber, latest)
    observer.push(spec.idle)
    if (closing.value) {
      subscriber.complete()
      return undefined
    }
    const done = use()
    let run: Member | undefined
    try {
      const { options } = spec
      const consul = client()
      run = contend(
        { ...options, client: consul, onRelease, shelf: options.shelf ?? shelfOf(consul) },
        observer,
      )
      running = run
    } catch (error) {
      // A contender that cannot start (its coordinator, its telemetry) fails as a SemaphoreError.
      subscriber.error(toSemaphoreError(error))
    }
    return () => {
      if (run !== undefined) {
        if (running === run) running = undefined
        run.stop()
      }
      latest.current = undefined
      // The member's stop hands its release to onRelease during this same teardown; letting go
      // a microtask later makes sure that release holds the client first.
      queueMicrotask(done)
    }
  })
  const { state$, holding$ } = handleStreams(states)

  return {
    state$,
    holding$,
    lifecycle,
    guard,
    refence: (ahead) => running?.refence(ahead),
    close: async () => {
      closing.next(true)
      running?.close()
      const results = await Promise.all(releases ?? NO_RELEASES)
      releases?.clear()
      // Giving back the default client resolves at once (its close, after the idle grace, is in
      // the background); awaited all the same, so that close() ends after it.
      await returned
      const failed = results.find(E.isLeft)
      if (failed && E.isLeft(failed)) {
        throw new SemaphoreError(
          'ReleaseFailed',
          sentences(`releasing failed: ${failed.left.message}`, spec.releaseFailedHint),
          { cause: failed.left },
        )
      }
    },
  }
}

const NO_RELEASES: readonly Promise<E.Either<ConsulError, void>>[] = []

/** The latest state of a handle's running contender (undefined when none runs). */
interface Latest<S> {
  current: S | undefined
}

/**
 * Where a handle's running contender tells its states: each core state made public
 * (`spec.toState`), told to the subscriber of the handle's states unless it looks the same as the
 * last one, and kept as the latest for the guard. One object per run, with its methods on the
 * prototype.
 */
class StatesObserver<S extends HeldState> implements ContenderObserver {
  /** The last state told to the subscriber. */
  private last: S | undefined = undefined

  constructor(
    private readonly spec: ContenderHandleSpec<S>,
    private readonly subscriber: Subscriber<S>,
    private readonly latest: Latest<S>,
  ) {}

  push(state: S): void {
    this.latest.current = state
    const { last } = this
    if (last !== undefined && this.spec.same(last, state)) return
    // Every state emitted is made here: one place gives them all their toJSON.
    this.last = serializable(state)
    this.subscriber.next(state)
  }

  next(core: ContenderState): void {
    this.push(this.spec.toState(core, this.spec.options))
  }

  error(error: SemaphoreError): void {
    this.subscriber.error(error)
  }

  complete(): void {
    this.subscriber.complete()
  }
}
