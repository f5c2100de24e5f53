import { defaultMaxListeners, setMaxListeners } from 'node:events'
import * as E from 'fp-ts/lib/Either.js'
import {
  Observable,
  asyncScheduler,
  finalize,
  type SchedulerLike,
  type Subscriber,
  type Unsubscribable,
} from 'rxjs'
import type { ConsulClient, SessionCreateOptions } from '../../consul/client-api.js'
import type { ConsulError } from '../../base/consul-error.js'
import type { KVSnapshot, WatchEvent } from '../../base/kv-snapshot.js'
import type {
  GiveUp,
  LifeOptions,
  RunRelease,
  SessionGrant,
  SessionSource,
} from '../../core/contender/contender-life.js'
import type { ContenderInput } from '../../core/contender/contender-input.js'
import type { ContenderAction, ContenderState } from '../../core/contender/contender-state-model.js'
import { decideOptions } from '../../core/contender/decide-patiently.js'
import { decide as decideSemaphore, type DecideOptions } from '../../core/semaphore/decide.js'
import type { ViewCache } from '../../core/semaphore/view-cache.js'
import type { Decision, Handed } from '../../core/events.js'
import { SemaphoreError } from '../../base/semaphore-error.js'
import { agentTxnLimit } from '../../consul/txn-limit.js'
import type { ResolvedContenderOptions } from '../../options/contender-options.js'
import {
  contenderTelemetry,
  type ContenderEnd,
  type ContenderTelemetry,
} from '../../telemetry/contender-telemetry.js'
import type { ContenderProtocol, ProtocolMember } from '../protocol/contender-protocol.js'
import { destroySession } from '../release/destroy-session.js'
import { SessionLease, type LeaseEvent, type SessionLeaseOptions } from '../session-lease.js'
import { sessionSignature, type ContenderShelf } from '../session-shelf.js'
import { HeldBack, followWatch, type FollowSink } from './held-back.js'
import type { ContenderPort, FollowEvent, WriteEvent } from './contender-port.js'
import { adoptSession } from './adopt-session.js'
import { giveUpError } from './give-up-error.js'
import { Interpreter, type ContenderObserver } from './interpreter.js'
import {
  coordinatorFor,
  type CoordinatedMember,
  type PrefixCoordinator,
} from './prefix-coordinator.js'
import type { Borrowed } from '../registry.js'
import type { FreshLock } from '../fresh-lock.js'

/**
 * How long a contender that ends (closed, stopped, failed) waits for the answer to the session
 * request it has in flight, to destroy the session it makes (ms): as long as a client waits for
 * any answer by default (`requestTimeoutMs`). Past it the request is aborted, and a session
 * Consul may have made regardless expires by its TTL.
 */
export const ABANDONED_SESSION_WAIT_MS = 10_000

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
   * Slots taken at once (semaphore only; default 1): each run creates permits − 1 companion
   * sessions beside its own, renews and destroys them with it, and never keeps them on a shelf.
   */
  readonly permits?: number | undefined
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
   * refusal (`tryOnceRefused`) or failure instead of waiting or retrying. Once it has held, it
   * behaves as any contender.
   */
  readonly tryOnce?: boolean | undefined
  /**
   * Where the process's idle sessions wait (`contenderShelf`; the handle gives one only to a job
   * pool's worker): the contender takes one made with its session options instead of creating
   * one, and, released after close() with a clean outcome, keeps its session there instead of
   * destroying it. Without it, every session is created and destroyed by its contender.
   */
  readonly shelf?: ContenderShelf | undefined
}

/** What a handle holds of a running contender (see `Interpreter`). */
export type Member = Pick<Interpreter, 'close' | 'stop' | 'refence'>

const NONE: readonly string[] = []

/** How often a waiter far back in the queue steps on a snapshot that changes nothing for it (ms). */
const WAITER_REFRESH_MS = 1000

/**
 * One contender (of a semaphore, or of a leader election, by `options.protocol`), from session to
 * slot and back, until it is closed or stopped: its machine (`lifeStep`) run by the interpreter on
 * the port of its client (`ConsulPort`).
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
export function contend(given: ContendOptions, observer: ContenderObserver): Member {
  // Companions are made and destroyed with their run: sessions of several permits are never kept.
  const options = (given.permits ?? 1) > 1 ? { ...given, shelf: undefined } : given
  const scheduler = options.scheduler ?? asyncScheduler
  const random = options.random ?? Math.random
  const port = new ConsulPort(options, scheduler, random)
  const interpreter = new Interpreter(
    port,
    {
      step: port.step,
      tryOnce: options.tryOnce === true,
      adoptedSession: options.adoptedSession,
      shelf: options.shelf !== undefined,
      leaseMarginRatio: options.leaseMarginRatio,
      startupTimeoutMs: options.startupTimeoutMs,
      serviceChecks: options.serviceChecks,
      joins: options.protocol.join !== undefined,
      // Both protocols queue (the semaphore's contender keys, the leader lock's waiter keys), so a
      // waiter far back steps only on the snapshots that concern it (`holdsBack`).
      herdFree: true,
      // 1 to 2 s, so that a thousand waiters of a process do not all refresh on one snapshot.
      refreshMs: WAITER_REFRESH_MS * (1 + random()),
      random,
    },
    scheduler,
    observer,
  )
  interpreter.start()
  return interpreter
}

/**
 * The port of a contender on a real client: its sessions (created, taken from the shelf, or
 * adopted), their leases, its prefix's coordinator (the join, the one watch and the decision on
 * each snapshot), its protocol's writes and release, and its telemetry. Every call is an
 * Observable: unsubscribed, it stops; a session request unsubscribed before it answered is
 * abandoned (awaited in the background, at most ABANDONED_SESSION_WAIT_MS, and the session it
 * makes destroyed through `onRelease`).
 *
 * It is the contender its protocol writes for too (`ProtocolMember`). One object whose methods
 * are on its prototype, with what it needs of the options copied into its fields: a process runs
 * thousands of contenders, and a closure per call, or the whole options kept per contender, is
 * paid thousands of times.
 *
 * @example
 * const port = new ConsulPort({ ...resolved, client, protocol: semaphoreProtocol, ... }, scheduler, Math.random)
 * port.session('create').subscribe((created) => console.log(created.session))
 */
export class ConsulPort implements ContenderPort, ProtocolMember {
  readonly client: ConsulClient
  readonly prefix: string
  readonly limit: number
  readonly followLimit: boolean
  readonly value: string
  readonly fairness: boolean
  readonly tryOnce: boolean
  readonly cache: ViewCache
  readonly fresh: FreshLock
  /** The per-session step's options, for the contender's machine. */
  readonly step: LifeOptions['step']
  private readonly protocol: ContenderProtocol
  private readonly shelf: ContenderShelf | undefined
  private readonly permits: number
  private readonly ttlMs: number
  private readonly adoptedSession: string | undefined
  /**
   * The last session this port created, while it has not joined with it: its own key cannot be
   * in Consul before its first write (`keyMayExist`).
   */
  private createdSession: string | undefined
  private readonly startupTimeoutMs: number
  private readonly leaseMarginMs: number
  private readonly onRelease: ContendOptions['onRelease']
  private readonly coordinator: Borrowed<PrefixCoordinator>
  /** What a session of this contender is created with. */
  private readonly request: SessionCreateOptions
  private readonly telemetry: ContenderTelemetry
  /** The snapshots held back from the running session's waiter (`holdBack`). */
  private readonly held: HeldBack
  /** The companions of each session of this contender that has several permits. */
  private companions: Map<string, readonly string[]> | undefined = undefined
  /** The protocol's writer for the running session (one at a time). */
  private performer:
    | { readonly session: string; readonly perform: ReturnType<ContenderProtocol['performer']> }
    | undefined = undefined

  constructor(
    options: ContendOptions,
    readonly scheduler: SchedulerLike,
    private readonly random: () => number,
  ) {
    const { client, protocol, prefix } = options
    this.client = client
    this.prefix = prefix
    this.limit = options.limit
    this.followLimit = options.followLimit === true
    this.value = options.value
    this.fairness = options.fairness
    this.tryOnce = options.tryOnce === true
    this.protocol = protocol
    this.shelf = options.shelf
    this.permits = options.permits ?? 1
    this.ttlMs = options.ttlMs
    this.adoptedSession = options.adoptedSession
    this.startupTimeoutMs = options.startupTimeoutMs
    this.leaseMarginMs = options.leaseMarginMs
    this.onRelease = options.onRelease
    this.coordinator = coordinatorFor(client, prefix, protocol, {
      waitMs: options.watchWaitMs,
      scheduler: options.scheduler,
    })
    this.cache = this.coordinator.value.cache
    this.fresh = this.coordinator.value.fresh
    this.request = {
      name: options.sessionName,
      ttl: options.ttl,
      behavior: protocol.behavior,
      ...(options.lockDelay !== undefined ? { lockDelay: options.lockDelay } : {}),
      ...(options.checks !== undefined ? { nodeChecks: options.checks } : {}),
      ...(options.serviceChecks !== undefined ? { serviceChecks: options.serviceChecks } : {}),
    }
    this.telemetry = contenderTelemetry(options.telemetry, {
      prefix,
      limit: options.limit,
      protocol: protocol.kind,
      client,
      now: scheduler.now(),
    })
    this.held = new HeldBack(scheduler)
    this.step = {
      prefix,
      limit: options.limit,
      followLimit: options.followLimit,
      fairness: options.fairness,
      fairnessGraceMs: options.fairnessGraceMs,
      leaseMarginMs: options.leaseMarginMs,
      rideThrough: options.rideThrough,
      scheduler,
      ...(this.permits > 1
        ? { companionsOf: (session: string) => this.companionsOf(session) }
        : {}),
      sharedGrace: protocol.sharedGrace(this),
      decide: protocol.decide(this),
      refence: protocol.refence?.(this),
    }
  }

  /** The companions of one of its sessions (none with one permit). */
  companionsOf(session: string): readonly string[] {
    return this.companions?.get(session) ?? NONE
  }

  keyMayExist(session: string): boolean {
    return session !== this.createdSession
  }

  watchesOwnKey(): boolean {
    return this.coordinator.value.watchesOwnKey()
  }

  knowsCurrentLock(): boolean {
    return this.coordinator.value.knowsCurrentLock()
  }

  acquiring(): (answered: KVSnapshot | undefined) => void {
    return this.coordinator.value.acquiring()
  }

  answers(): number {
    return this.client.network?.answers?.() ?? 0
  }

  session(from: SessionSource): Observable<SessionGrant> {
    return new Observable<SessionGrant>((subscriber) => {
      const controller = new AbortController()
      // A request of several permits creates a session for each at once, each call listening to
      // this one signal: that many listeners are expected, not a leak for Node to warn about.
      if (this.permits >= defaultMaxListeners) setMaxListeners(this.permits + 1, controller.signal)
      const { answer, adopted } = this.ask(from, controller.signal)
      let answered = false
      void answer.then((created) => {
        answered = true
        if (E.isLeft(created)) return subscriber.error(created.left)
        subscriber.next(created.right)
        subscriber.complete()
      })
      return () => {
        if (answered) return
        // An adopted session is never destroyed: its renewal in flight only needs stopping.
        if (adopted) return controller.abort()
        const { scheduler, client, random } = this
        const bound = scheduler.schedule(() => controller.abort(), ABANDONED_SESSION_WAIT_MS)
        this.onRelease(
          answer.then((created) => {
            bound.unsubscribe()
            if (E.isLeft(created)) return E.right<ConsulError, void>(undefined)
            const { session } = created.right
            this.destroyCompanions(session)
            return destroySession({ client, session, scheduler, random })
          }),
        )
      }
    })
  }

  lease(
    grant: SessionGrant & { readonly leaseMarginMs: number | undefined },
  ): Observable<LeaseEvent> {
    const { session, ttlMs, sentAt } = grant
    const companions = this.companionsOf(session)
    if (companions.length === 0) {
      // One session: its lease tells the subscriber itself, and is all its teardown keeps.
      return new Observable<LeaseEvent>((subscriber) =>
        stopping(new SessionLease(this.leaseOptions(session, grant), subscriber)),
      )
    }
    return new Observable<LeaseEvent>((subscriber) => {
      const sessions = [session, ...companions]
      // Several permits hold while every session lives: the lease runs from the oldest of their
      // last renewals, and any one gone or failing is the run's.
      const renewed = sessions.map(() => ({ sentAt, ttlMs }))
      // A companion gone ends the run as its own session gone would; the session, which Consul
      // still has, goes too (no release follows a session gone).
      let companionGone = false
      const leases = sessions.map(
        (one, i) =>
          new SessionLease(this.leaseOptions(one, grant), {
            next: (event) => {
              if (event.type === 'session-gone' && i > 0) companionGone = true
              if (event.type !== 'session-renewed') return subscriber.next(event)
              renewed[i] = { sentAt: event.sentAt, ttlMs: event.ttlMs }
              const oldest = renewed.reduce((a, b) => (b.sentAt < a.sentAt ? b : a))
              subscriber.next({ type: 'session-renewed', ...oldest })
            },
            error: (error) => subscriber.error(error),
          }),
      )
      return () => {
        for (const lease of leases) lease.stop()
        // The run is over: its companions go (a release has taken them out of `.lock` first,
        // or the next writer prunes them; their keys go with them).
        this.destroyCompanions(session)
        if (companionGone) this.destroyInBackground(session)
      }
    })
  }

  /** The options of the lease of one of a run's sessions. */
  private leaseOptions(
    session: string,
    { ttlMs, sentAt, leaseMarginMs }: SessionGrant & { readonly leaseMarginMs: number | undefined },
  ): SessionLeaseOptions {
    const { client, scheduler, random } = this
    return { client, session, ttlMs, createdAt: sentAt, leaseMarginMs, scheduler, random }
  }

  mayJoin(): boolean {
    return this.coordinator.value.mayJoin(this)
  }

  join(session: string): Observable<KVSnapshot | undefined> {
    const join = this.protocol.join
    if (join === undefined) throw new Error(`the ${this.protocol.kind} protocol has no join`)
    // The join writes the key: whatever became of it, the key may be there now.
    if (session === this.createdSession) this.createdSession = undefined
    const done = this.coordinator.value.startJoin()
    return join(this, session).pipe(finalize(done))
  }

  follow(session: string, seed: KVSnapshot | undefined): Observable<FollowEvent> {
    // The options of every decision of this run, made once: a thousand members decide on every
    // snapshot, and each allocation is per member.
    const decideWith = decideOptions(session, this.step)
    // A job pool's worker re-fences on what the prefix shows, and one of several permits is
    // handed no single slot: both watch the prefix.
    const alone = this.shelf === undefined && this.permits === 1 ? session : undefined
    return new Observable<FollowEvent>((subscriber) => {
      const { held } = this
      held.clear()
      const decide = this.step.decide ?? decideSemaphore
      const coordinator = this.coordinator.value
      const member = new FollowingMember(decide, decideWith, alone, held, coordinator, subscriber)
      coordinator.follow(member, seed)
      // Unsubscribed, the member leaves the watch.
      return member
    })
  }

  holdBack(until: number | undefined): void {
    this.held.hold(until)
  }

  perform(session: string, action: ContenderAction): Observable<WriteEvent> {
    if (this.performer?.session !== session) {
      this.performer = { session, perform: this.protocol.performer(this, session) }
    }
    // A protocol's writes answer only with a write's events.
    return this.performer.perform(action) as Observable<WriteEvent>
  }

  release(session: string, { keep, snapshot, renewal }: RunRelease): void {
    const released = this.protocol.release(this, session, snapshot, keep)
    this.onRelease(
      released.then((result) => {
        this.telemetry.released(result)
        if (E.isRight(result) && result.right !== undefined && 'sessionKept' in result.right) {
          this.shelf?.shelve(
            sessionSignature(this.request),
            { session, ...renewal },
            this.scheduler,
          )
        }
        return E.map((): void => undefined)(result)
      }),
    )
  }

  stepped(input: ContenderInput, state: ContenderState, now: number): void {
    this.telemetry.stepped(state, input, now)
  }

  failure(giveUp: GiveUp): SemaphoreError {
    const { prefix, client, startupTimeoutMs, leaseMarginMs, protocol } = this
    return giveUpError(giveUp, { prefix, client, startupTimeoutMs, leaseMarginMs }, protocol)
  }

  finished(end: ContenderEnd, now: number): void {
    this.telemetry.ended(end, now)
    this.coordinator.release()
  }

  /** A session request's answer, with the time its lease runs from. */
  private ask(
    from: SessionSource,
    signal: AbortSignal,
  ): { answer: Promise<E.Either<unknown, SessionGrant>>; adopted: boolean } {
    const { client, scheduler, shelf, ttlMs, adoptedSession, permits } = this
    const sentAt = scheduler.now()
    if (from === 'adopt' && adoptedSession !== undefined) {
      return { answer: adoptSession(client, adoptedSession, signal, sentAt), adopted: true }
    }
    const shelved =
      from === 'shelf' ? shelf?.take(sessionSignature(this.request), sentAt) : undefined
    if (shelved !== undefined) {
      const { session } = shelved
      return {
        answer: Promise.resolve(E.right({ session, ttlMs, sentAt: shelved.sentAt })),
        adopted: false,
      }
    }
    const create = () => client.session.create({ ...this.request, signal })()
    if (permits === 1) {
      const answer = create().then(
        E.map((session: string): SessionGrant => {
          this.createdSession = session
          return { session, ttlMs, sentAt }
        }),
      )
      return { answer, adopted: false }
    }
    // Several permits: a session for each, made together, once the grant is known to fit the
    // agent's transactions; any failure destroys the others.
    const answer = grantFits(client, permits, signal).then(async (fits) => {
      if (E.isLeft(fits)) return fits
      const made = await Promise.all(Array.from({ length: permits }, create))
      const failed = made.find(E.isLeft)
      const sessions = made.flatMap((one) => (E.isRight(one) ? [one.right] : []))
      if (failed !== undefined) {
        for (const session of sessions) this.destroyInBackground(session)
        return failed
      }
      const [session = '', ...rest] = sessions
      this.createdSession = session
      ;(this.companions ??= new Map()).set(session, rest)
      return E.right<unknown, SessionGrant>({ session, ttlMs, sentAt })
    })
    return { answer, adopted: false }
  }

  /** Destroys a session, for `close()` to await. */
  private destroyInBackground(session: string): void {
    const { client, scheduler, random } = this
    this.onRelease(destroySession({ client, session, scheduler, random }))
  }

  /** Destroys the companions of a session, for `close()` to await. */
  private destroyCompanions(session: string): void {
    const made = this.companions?.get(session)
    if (made === undefined) return
    this.companions?.delete(session)
    for (const companion of made) this.destroyInBackground(companion)
  }
}

/**
 * A run's place in its prefix's coordinator: its decision on each snapshot (made once per
 * snapshot), and the watch's events handed to the run's follow, less those its waiter holds back
 * (`followWatch`). One object per run, with its methods on the prototype.
 */
class FollowingMember implements CoordinatedMember, FollowSink, Unsubscribable {
  // The last decision, as two fields: the coordinator asks for it, and the run steps on it.
  private decidedOn: KVSnapshot | undefined = undefined
  private decided: Decision | undefined = undefined

  constructor(
    private readonly decide: (snapshot: KVSnapshot, options: DecideOptions) => Decision,
    private readonly decideWith: DecideOptions,
    readonly alone: string | undefined,
    private readonly held: HeldBack,
    private readonly coordinator: PrefixCoordinator,
    private readonly subscriber: Subscriber<FollowEvent>,
  ) {}

  /** The run's follow ends: the member leaves the watch. */
  unsubscribe(): void {
    // What was held back, and its refresh, end with the run's watch.
    this.held.clear()
    // A no-op when the coordinator already let every member go (its watch failed).
    this.coordinator.unfollow(this)
  }

  decisionOn(snapshot: KVSnapshot): Decision {
    if (this.decidedOn === snapshot && this.decided !== undefined) return this.decided
    const decision = this.decide(snapshot, this.decideWith)
    this.decidedOn = snapshot
    this.decided = decision
    return decision
  }

  onWatch(event: WatchEvent | Handed): void {
    followWatch(this.held, this, event)
  }

  onWatchError(error: unknown): void {
    this.subscriber.error(error)
  }

  next(event: FollowEvent): void {
    this.subscriber.next(event)
  }
}

/**
 * Whether the grant of a request of `permits` fits its agent's transactions: one transaction of
 * permits + 2 operations (its key's check, a lock per companion, the CAS of `.lock`, its key's
 * rewrite). Up to 64 operations, which every version takes, it answers at once; beyond, the
 * agent's limit decides (`agentTxnLimit`, asked once per client), and a grant that cannot fit is
 * the contender's failure, SemaphoreError('InvalidOptions'), before any session is made.
 */
async function grantFits(
  client: ConsulClient,
  permits: number,
  signal: AbortSignal,
): Promise<E.Either<unknown, void>> {
  const needed = permits + 2
  const limit = await agentTxnLimit(client, needed, { signal })()
  if (E.isLeft(limit)) return limit
  if (needed <= limit.right.ops) return E.right(undefined)
  return E.left(
    new SemaphoreError(
      'InvalidOptions',
      `a request of ${permits} permits takes them in one transaction of ${needed} operations: ` +
        `${limit.right.why}. Ask for at most ${limit.right.ops - 2} permits on this agent (a ` +
        'writer of a read-write lock asks for maxReaders). No session was made.',
    ),
  )
}

/** A teardown that stops `lease`, and keeps nothing else. */
function stopping(lease: SessionLease): () => void {
  return () => lease.stop()
}
