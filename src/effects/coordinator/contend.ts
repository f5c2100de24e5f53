import * as E from 'fp-ts/lib/Either.js'
import { Observable, asyncScheduler, finalize, type SchedulerLike } from 'rxjs'
import type { ConsulClient, SessionCreateOptions } from '../../consul/client-api.js'
import type { ConsulError } from '../../base/consul-error.js'
import type { KVSnapshot } from '../../base/kv-snapshot.js'
import type {
  LifeOptions,
  SessionGrant,
  SessionSource,
} from '../../core/contender/contender-life.js'
import { decideOptions } from '../../core/contender/decide-patiently.js'
import { decide as decideSemaphore } from '../../core/semaphore/decide.js'
import type { Decision } from '../../core/events.js'
import type { SemaphoreError } from '../../base/semaphore-error.js'
import type { ResolvedContenderOptions } from '../../options/contender-options.js'
import { contenderTelemetry, type ContenderTelemetry } from '../../telemetry/contender-telemetry.js'
import type { ContenderProtocol, ProtocolMember } from '../protocol/contender-protocol.js'
import { destroySession } from '../release/destroy-session.js'
import { SessionLease, type LeaseEvent } from '../session-lease.js'
import { sessionSignature, type ContenderShelf } from '../session-shelf.js'
import { HeldBack, heldBackTo } from './held-back.js'
import type { ContenderPort, FollowEvent, WriteEvent } from './contender-port.js'
import { adoptSession } from './adopt-session.js'
import { giveUpError } from './give-up-error.js'
import { Interpreter, type ContenderObserver } from './interpreter.js'
import { coordinatorFor, type CoordinatedMember } from './prefix-coordinator.js'

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
 * the port of its client (`consulPort`).
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
  const { port, step } = consulPort(options, scheduler, random)
  const interpreter = new Interpreter(
    port,
    {
      step,
      tryOnce: options.tryOnce === true,
      adoptedSession: options.adoptedSession,
      shelf: options.shelf !== undefined,
      leaseMarginRatio: options.leaseMarginRatio,
      startupTimeoutMs: options.startupTimeoutMs,
      serviceChecks: options.serviceChecks,
      joins: options.protocol.join !== undefined,
      herdFree: options.protocol.herdFree,
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
 * @example
 * const port = consulPort({ ...resolved, client, protocol: semaphoreProtocol, ... }, scheduler)
 * port.session('create').subscribe((created) => console.log(created.session))
 */
export function consulPort(
  options: ContendOptions,
  scheduler: SchedulerLike,
  random: () => number,
): { readonly port: ContenderPort; readonly step: LifeOptions['step'] } {
  const { client, protocol, prefix, shelf } = options
  const permits = options.permits ?? 1
  /** The companions of each session of this contender that has several permits. */
  const companions = new Map<string, readonly string[]>()
  const companionsOf = (session: string): readonly string[] => companions.get(session) ?? NONE
  const registration = coordinatorFor(client, prefix, protocol, {
    waitMs: options.watchWaitMs,
    scheduler: options.scheduler,
  })
  const coordinator = registration.value
  const contender: ProtocolMember = {
    client,
    prefix,
    limit: options.limit,
    followLimit: options.followLimit === true,
    value: options.value,
    fairness: options.fairness,
    tryOnce: options.tryOnce === true,
    scheduler,
    cache: coordinator.cache,
    fresh: coordinator.fresh,
    companionsOf,
    watchesOwnKey: () => coordinator.watchesOwnKey(),
    knowsCurrentLock: () => coordinator.knowsCurrentLock(),
  }
  const request: SessionCreateOptions = {
    name: options.sessionName,
    ttl: options.ttl,
    behavior: protocol.behavior,
    ...(options.lockDelay !== undefined ? { lockDelay: options.lockDelay } : {}),
    ...(options.checks !== undefined ? { nodeChecks: options.checks } : {}),
    ...(options.serviceChecks !== undefined ? { serviceChecks: options.serviceChecks } : {}),
  }
  const signature = sessionSignature(request)
  const telemetry: ContenderTelemetry = contenderTelemetry(options.telemetry, {
    prefix,
    limit: options.limit,
    protocol: protocol.kind,
    client,
    now: scheduler.now(),
  })
  /** The protocol's writer for the running session (one at a time). */
  let performer:
    | { readonly session: string; readonly perform: ReturnType<ContenderProtocol['performer']> }
    | undefined

  /** A session request's answer, with the time its lease runs from. */
  const ask = (
    from: SessionSource,
    signal: AbortSignal,
  ): { answer: Promise<E.Either<unknown, SessionGrant>>; adopted: boolean } => {
    const sentAt = scheduler.now()
    const { ttlMs, adoptedSession } = options
    if (from === 'adopt' && adoptedSession !== undefined) {
      return { answer: adoptSession(client, adoptedSession, signal, sentAt), adopted: true }
    }
    const shelved = from === 'shelf' ? shelf?.take(signature, sentAt) : undefined
    if (shelved !== undefined) {
      const { session } = shelved
      return {
        answer: Promise.resolve(E.right({ session, ttlMs, sentAt: shelved.sentAt })),
        adopted: false,
      }
    }
    const create = () => client.session.create({ ...request, signal })()
    if (permits === 1) {
      const answer = create().then(
        E.map((session: string): SessionGrant => ({ session, ttlMs, sentAt })),
      )
      return { answer, adopted: false }
    }
    // Several permits: a session for each, made together; any failure destroys the others.
    const answer = Promise.all(Array.from({ length: permits }, create)).then((made) => {
      const failed = made.find(E.isLeft)
      const sessions = made.flatMap((one) => (E.isRight(one) ? [one.right] : []))
      if (failed !== undefined) {
        for (const session of sessions) destroyInBackground(session)
        return failed
      }
      const [session = '', ...rest] = sessions
      companions.set(session, rest)
      return E.right<unknown, SessionGrant>({ session, ttlMs, sentAt })
    })
    return { answer, adopted: false }
  }

  /** Destroys a session and its companions, for `close()` to await. */
  const destroyInBackground = (session: string): void => {
    options.onRelease(destroySession({ client, session, scheduler, random }))
  }
  const destroyCompanions = (session: string): void => {
    const made = companions.get(session)
    if (made === undefined) return
    companions.delete(session)
    for (const companion of made) destroyInBackground(companion)
  }

  const step: LifeOptions['step'] = {
    prefix,
    limit: options.limit,
    followLimit: options.followLimit,
    fairness: options.fairness,
    fairnessGraceMs: options.fairnessGraceMs,
    leaseMarginMs: options.leaseMarginMs,
    rideThrough: options.rideThrough,
    scheduler,
    ...(permits > 1 ? { companionsOf } : {}),
    sharedGrace: protocol.sharedGrace(contender),
    decide: protocol.decide(contender),
    refence: protocol.refence?.(contender),
  }
  const held = new HeldBack(scheduler)
  const port: ContenderPort = {
    answers: () => client.network?.answers?.() ?? 0,
    session: (from) =>
      new Observable<SessionGrant>((subscriber) => {
        const controller = new AbortController()
        const { answer, adopted } = ask(from, controller.signal)
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
          const bound = scheduler.schedule(() => controller.abort(), ABANDONED_SESSION_WAIT_MS)
          options.onRelease(
            answer.then((created) => {
              bound.unsubscribe()
              if (E.isLeft(created)) return E.right<ConsulError, void>(undefined)
              const { session } = created.right
              destroyCompanions(session)
              return destroySession({ client, session, scheduler, random })
            }),
          )
        }
      }),
    lease: ({ session, ttlMs, sentAt, leaseMarginMs }) =>
      new Observable<LeaseEvent>((subscriber) => {
        const sessions = [session, ...companionsOf(session)]
        // Several permits hold while every session lives: the lease runs from the oldest of their
        // last renewals, and any one gone or failing is the run's.
        const renewed = sessions.map(() => ({ sentAt, ttlMs }))
        // A companion gone ends the run as its own session gone would; the session, which Consul
        // still has, goes too (no release follows a session gone).
        let companionGone = false
        const leases = sessions.map(
          (one, i) =>
            new SessionLease(
              { client, session: one, ttlMs, createdAt: sentAt, leaseMarginMs, scheduler, random },
              {
                onLease: (event) => {
                  if (event.type === 'session-gone' && i > 0) companionGone = true
                  if (event.type !== 'session-renewed' || sessions.length === 1) {
                    return subscriber.next(event)
                  }
                  renewed[i] = { sentAt: event.sentAt, ttlMs: event.ttlMs }
                  const oldest = renewed.reduce((a, b) => (b.sentAt < a.sentAt ? b : a))
                  subscriber.next({ type: 'session-renewed', ...oldest })
                },
                onLeaseError: (error) => subscriber.error(error),
              },
            ),
        )
        return () => {
          for (const lease of leases) lease.stop()
          // The run is over: its companions go (a release has taken them out of `.lock` first,
          // or the next writer prunes them; their keys go with them).
          destroyCompanions(session)
          if (companionGone) destroyInBackground(session)
        }
      }),
    mayJoin: () => coordinator.mayJoin(contender),
    join: (session) => {
      const join = protocol.join
      if (join === undefined) throw new Error(`the ${protocol.kind} protocol has no join`)
      const done = coordinator.startJoin()
      return join(contender, session).pipe(finalize(done))
    },
    follow: (session, seed) => {
      // The last decision, as two fields, and the options of every decision of this run, made
      // once: a thousand members decide on every snapshot, and each allocation is per member.
      let decidedOn: KVSnapshot | undefined
      let decided: Decision | undefined
      const decide = step.decide ?? decideSemaphore
      const decideWith = decideOptions(session, step)
      const decisionOn = (snapshot: KVSnapshot): Decision => {
        if (decidedOn === snapshot && decided !== undefined) return decided
        const decision = decide(snapshot, decideWith)
        decidedOn = snapshot
        decided = decision
        return decision
      }
      return new Observable<FollowEvent>((subscriber) => {
        held.clear()
        const member: CoordinatedMember = {
          decisionOn,
          // A job pool's worker re-fences on what the prefix shows, and one of several permits
          // is handed no single slot: both watch the prefix.
          alone: shelf === undefined && permits === 1 ? session : undefined,
          onWatch: heldBackTo(held, decisionOn, (event) => subscriber.next(event)),
          onWatchError: (error) => subscriber.error(error),
        }
        coordinator.follow(member, seed)
        return () => {
          // What was held back, and its refresh, end with the run's watch.
          held.clear()
          // A no-op when the coordinator already let every member go (its watch failed).
          coordinator.unfollow(member)
        }
      })
    },
    holdBack: (until) => held.hold(until),
    perform: (session, action) => {
      if (performer?.session !== session) {
        performer = { session, perform: protocol.performer(contender, session) }
      }
      // A protocol's writes answer only with a write's events.
      return performer.perform(action) as Observable<WriteEvent>
    },
    release: (session, { keep, snapshot, renewal }) => {
      const released = protocol.release(contender, session, snapshot, keep)
      options.onRelease(
        released.then((result) => {
          telemetry.released(result)
          if (E.isRight(result) && result.right !== undefined && 'sessionKept' in result.right) {
            shelf?.shelve(signature, { session, ...renewal }, scheduler)
          }
          return E.map((): void => undefined)(result)
        }),
      )
    },
    stepped: (input, state, now) => telemetry.stepped(state, input, now),
    failure: (giveUp): SemaphoreError => giveUpError(giveUp, options, protocol),
    finished: (end, now) => {
      telemetry.ended(end, now)
      registration.release()
    },
  }
  return { port, step }
}
