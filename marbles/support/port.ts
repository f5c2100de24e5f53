/**
 * A port of marbles for the production interpreter (`src/effects/coordinator/interpreter.ts`):
 * each call the machine asks for is an Observable the spec gives (cold or hot marbles), so a spec
 * sees, in subscription marbles, each call start and stop, as RxJS's own operator specs do.
 */
import { NEVER, type Observable, type SchedulerLike } from 'rxjs'
import type { ConsulClient } from '../../src/consul/client-api.js'
import type { KVSnapshot } from '../../src/base/kv-snapshot.js'
import type { LifeOptions, RunRelease } from '../../src/core/contender/contender-life.js'
import type {
  ContenderPort,
  CreatedSession,
  WriteEvent,
} from '../../src/effects/coordinator/contender-port.js'
import { giveUpError } from '../../src/effects/coordinator/give-up-error.js'
import { contenderStates } from '../../src/effects/coordinator/interpreter.js'
import type { LeaseEvent } from '../../src/effects/session-lease.js'
import { problemError } from '../../src/base/semaphore-error.js'
import type { ContenderState } from '../../src/core/contender/contender-state-model.js'
import type { ContenderEvent } from '../../src/core/events.js'
import { prefix } from './scenario.js'

/** The calls a spec gives; each defaults to one that never answers. */
export interface MarbleCalls {
  /** The session's answer (a marble of `never` for one that never comes). */
  readonly session?: () => Observable<CreatedSession>
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
export const session = (sentAt = 0): CreatedSession => ({ session: 'me', ttlMs: 1000, sentAt })

/** Each release the interpreter started, and when. */
export interface Released {
  readonly session: string
  readonly release: RunRelease
  readonly at: number
}

/**
 * A contender's states on a port of marbles: the production interpreter, with `calls` for its
 * Consul and `options` over a contender of `prefix` with limit 1 and no jitter.
 */
export function interpreted(
  scheduler: SchedulerLike,
  calls: MarbleCalls,
  options: Partial<Omit<LifeOptions, 'step'>> & {
    readonly step?: Partial<LifeOptions['step']>
  } = {},
): { readonly states: Observable<ContenderState>; readonly released: Released[] } {
  const released: Released[] = []
  const port: ContenderPort = {
    answers: () => 0,
    session: calls.session ?? (() => NEVER),
    lease: (calls.lease ?? (() => NEVER)) as () => Observable<LeaseEvent>,
    mayJoin: calls.mayJoin ?? (() => false),
    join: calls.join ?? (() => NEVER),
    follow: (calls.follow ?? (() => NEVER)) as ContenderPort['follow'],
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
  const life: LifeOptions = {
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
  return { states: contenderStates(port, life, scheduler), released }
}
