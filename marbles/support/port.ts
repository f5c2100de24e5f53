/**
 * A port of marbles for the production interpreter (`src/effects/coordinator/interpreter.ts`):
 * each call the machine asks for is an Observable the spec gives (cold or hot marbles), so a spec
 * sees, in subscription marbles, each call start and stop, as RxJS's own operator specs do.
 */
import {
  NEVER,
  Observable,
  Subject,
  asyncScheduler,
  defer,
  distinctUntilChanged,
  filter,
  map,
  take,
  takeWhile,
  type OperatorFunction,
  type SchedulerLike,
} from 'rxjs'
import type { ConsulClient } from '../../src/consul/client-api.js'
import type { KVSnapshot, WatchEvent } from '../../src/base/kv-snapshot.js'
import type {
  LifeOptions,
  RunRelease,
  SessionGrant,
} from '../../src/core/contender/contender-life.js'
import type { RefenceInput } from '../../src/core/contender/contender-input.js'
import type {
  ContenderAction,
  ContenderState,
  ContenderStateOptions,
} from '../../src/core/contender/contender-state-model.js'
import type { ContenderEvent, Handed } from '../../src/core/events.js'
import type { ContenderPort, WriteEvent } from '../../src/effects/coordinator/contender-port.js'
import { giveUpError } from '../../src/effects/coordinator/give-up-error.js'
import { HeldBack, heldBackBy } from '../../src/effects/coordinator/held-back.js'
import { decideByRank } from '../../src/core/contender/decide-patiently.js'
import { Interpreter, contenderStates } from '../../src/effects/coordinator/interpreter.js'
import type { LeaseEvent } from '../../src/effects/session-lease.js'
import { problemError } from '../../src/base/semaphore-error.js'
import { prefix } from './scenario.js'

/** The calls a spec gives; each defaults to one that never answers. */
export interface MarbleCalls {
  /** The session's answer (a marble of `never` for one that never comes). */
  readonly session?: () => Observable<SessionGrant>
  /** The lease's events. */
  readonly lease?: () => Observable<ContenderEvent>
  readonly mayJoin?: () => boolean
  readonly join?: () => Observable<KVSnapshot | undefined>
  /** The watch's events (a spec's marbles of `ContenderEvent`s hold only those). */
  readonly follow?: () => Observable<ContenderEvent>
  /** A write's answers. */
  readonly perform?: () => Observable<ContenderEvent>
}

/** The session every spec's contender gets: 'me', a TTL of 1000 ms, sent at 0. */
export const session = (sentAt = 0): SessionGrant => ({ session: 'me', ttlMs: 1000, sentAt })

/** Each release the interpreter started, and when. */
export interface Released {
  readonly session: string
  readonly release: RunRelease
  readonly at: number
}

/** A spec's options: the life's, and the per-session step's (over `prefix`, limit 1). */
export type SpecOptions = Partial<Omit<LifeOptions, 'step'>> & {
  readonly step?: Partial<LifeOptions['step']>
}

/**
 * The port of `calls`, recording each release in `released`; its follow decides and holds back
 * snapshots as production's does (`heldBackBy`).
 */
function marblePort(
  scheduler: SchedulerLike,
  calls: MarbleCalls,
  released: Released[],
  step: LifeOptions['step'],
): { -readonly [K in keyof ContenderPort]: ContenderPort[K] } {
  const held = new HeldBack(scheduler)
  const follow = calls.follow ?? (() => NEVER)
  return {
    answers: () => 0,
    session: calls.session ?? (() => NEVER),
    lease: (calls.lease ?? (() => NEVER)) as () => Observable<LeaseEvent>,
    mayJoin: calls.mayJoin ?? (() => false),
    join: calls.join ?? (() => NEVER),
    follow: (session) =>
      defer(() => {
        held.clear()
        return follow() as Observable<WatchEvent | Handed>
      }).pipe(heldBackBy(held, (snapshot) => decideByRank(snapshot, session, step))),
    holdBack: (until) => held.hold(until),
    perform: (calls.perform ?? (() => NEVER)) as () => Observable<WriteEvent>,
    release: (session, release) => void released.push({ session, release, at: scheduler.now() }),
    stepped: () => undefined,
    failure: (giveUp) =>
      giveUpError(
        giveUp,
        { client: {} as ConsulClient, prefix, startupTimeoutMs: 100, leaseMarginMs: 100 },
        { problemError },
      ),
    finished: () => undefined,
  }
}

/** The life's options: `options` over a contender of `prefix` with limit 1 and no jitter. */
function lifeOptions(scheduler: SchedulerLike, options: SpecOptions): LifeOptions {
  return {
    tryOnce: false,
    adoptedSession: undefined,
    shelf: false,
    leaseMarginRatio: undefined,
    startupTimeoutMs: Infinity,
    serviceChecks: undefined,
    joins: false,
    herdFree: false,
    refreshMs: 100,
    random: () => 0,
    ...options,
    step: { prefix, limit: 1, fairness: false, scheduler, ...options.step },
  }
}

/**
 * A contender's states on a port of marbles: the production interpreter, with `calls` for its
 * Consul and `options` over a contender of `prefix` with limit 1, no fairness and no jitter.
 */
export function interpreted(
  scheduler: SchedulerLike,
  calls: MarbleCalls,
  options: SpecOptions = {},
): { readonly states: Observable<ContenderState>; readonly released: Released[] } {
  const released: Released[] = []
  const life = lifeOptions(scheduler, options)
  const port = marblePort(scheduler, calls, released, life.step)
  return { states: contenderStates(port, life, scheduler), released }
}

/**
 * What Consul and the user say to a contender, on one timeline: a session (`session-created`), the
 * watch's events, the lease's, a write's answers, the user's close() (`release-requested`) and a
 * pool's refence().
 */
export type Said = ContenderEvent | RefenceInput

/** Options of `contending`: the step's (as a contender's), and the life's. */
export type ContendingOptions = Partial<ContenderStateOptions> &
  Partial<Omit<LifeOptions, 'step' | 'tryOnce'>> & {
    /** A log of each write the interpreter subscribed, and when it let it go. */
    readonly writes?: WriteLog[]
    /** Each release the interpreter started. */
    readonly released?: Released[]
    /** A write's answers by its action, in place of the timeline's `cas-result`s and `retry`s. */
    readonly perform?: (action: ContenderAction) => Observable<ContenderEvent>
  }

/** One write the interpreter made: its action's type, when it started and when it stopped. */
export interface WriteLog {
  readonly type: string
  readonly from: number
  to?: number
}

/** `perform`, logging in `writes` when each write starts and when the interpreter lets it go. */
function logWrites(
  perform: ContenderPort['perform'],
  writes: WriteLog[],
  scheduler: SchedulerLike,
): ContenderPort['perform'] {
  return (session, action) =>
    new Observable<WriteEvent>((writer) => {
      const log: WriteLog = { type: action.type, from: scheduler.now() }
      writes.push(log)
      const inner = perform(session, action).subscribe(writer)
      return () => {
        inner.unsubscribe()
        log.to = scheduler.now()
      }
    })
}

/**
 * The production interpreter of a contender, told what happens by one timeline of `Said` (what
 * Consul says, when): each event goes to the call that carries it in production, at its frame.
 *
 * - `session-created` answers the session request out (none out: it is lost);
 * - `snapshot` and `disconnected` are the watch's: they reach the contender only once its
 *   session's run follows the prefix (nothing before its session);
 * - `session-renewed`, `renewal-failed` and `session-gone` are its lease's;
 * - `cas-result` and `retry` answer the write in flight and end it; with no write in flight they
 *   are lost, as an answer to a cancelled request is;
 * - `release-requested` is the user's close(), `refence` a pool's refence().
 *
 * The states are the interpreter's: nothing before its session, and they complete once a close()
 * ended the run (not when the timeline completes); an error of the timeline is passed on.
 *
 * @example
 * cold('c-w-k').pipe(contending({ prefix, limit: 1 }))
 */
export function contending(
  options: ContendingOptions = {},
): OperatorFunction<Said, ContenderState> {
  const { writes, released = [], tryOnce, perform: answer, ...rest } = options
  return (said) =>
    new Observable<ContenderState>((subscriber) => {
      const scheduler = rest.scheduler ?? asyncScheduler
      const consul = new Subject<Said>()
      const kind = <T extends Said['type']>(...types: T[]) =>
        consul.pipe(filter((e): e is Extract<Said, { type: T }> => types.includes(e.type as T)))
      const calls: MarbleCalls = {
        session: () =>
          kind('session-created').pipe(
            take(1),
            map(({ session, ttlMs, sentAt }) => ({ session, ttlMs, sentAt })),
          ),
        follow: () => kind('snapshot', 'disconnected', 'handed'),
        lease: () => kind('session-renewed', 'renewal-failed', 'session-gone'),
        // A write ends with its answer.
        perform: () => kind('cas-result', 'retry').pipe(takeWhile(() => false, true)),
      }
      const { prefix: p = prefix, limit = 1, ...step } = rest
      const life = lifeOptions(scheduler, {
        ...rest,
        tryOnce: tryOnce === true,
        // As a contender's: fairness on unless the spec turns it off.
        step: { ...step, prefix: p, limit, fairness: rest.fairness, scheduler },
      })
      const port = marblePort(scheduler, calls, released, life.step)
      const perform: ContenderPort['perform'] =
        answer === undefined
          ? port.perform
          : (_session, action) => answer(action) as Observable<WriteEvent>
      port.perform = writes === undefined ? perform : logWrites(perform, writes, scheduler)
      const interpreter = new Interpreter(port, life, scheduler, subscriber)
      interpreter.start()
      const feed = said.subscribe({
        next: (event) => {
          if (event.type === 'release-requested') interpreter.close()
          else if (event.type === 'refence') interpreter.refence(event.ahead === true)
          else consul.next(event)
        },
        error: (error: unknown) => subscriber.error(error),
      })
      return () => {
        feed.unsubscribe()
        interpreter.stop()
      }
    })
}

/** Whether the contender of `contending(options)` holds: each change once. */
export function holds(options: ContendingOptions = {}): OperatorFunction<Said, boolean> {
  return (said) =>
    said.pipe(
      contending(options),
      map((state) => state.holding),
      distinctUntilChanged(),
    )
}

/**
 * What the contender of `contending(options)` does, as one letter per change: H holds, T tries
 * to acquire, W waits, x anything else (no session yet, joining).
 */
export function stepsOf(options: ContendingOptions = {}): OperatorFunction<Said, string> {
  return (said) =>
    said.pipe(
      contending(options),
      map((s) =>
        s.holding
          ? 'H'
          : s.decision?.type === 'TryAcquire'
            ? 'T'
            : s.decision?.type === 'Wait'
              ? 'W'
              : 'x',
      ),
      distinctUntilChanged(),
    )
}
