import type { Observable } from 'rxjs'
import type { KVSnapshot, WatchEvent } from '../../base/kv-snapshot.js'
import type {
  GiveUp,
  RunRelease,
  SessionGrant,
  SessionSource,
} from '../../core/contender/contender-life.js'
import type { ContenderInput, DecidedSnapshot } from '../../core/contender/contender-input.js'
import type { ContenderAction, ContenderState } from '../../core/contender/contender-state-model.js'
import type { ContenderEvent, Decision, Handed } from '../../core/events.js'
import type { SemaphoreError } from '../../base/semaphore-error.js'
import type { ContenderEnd } from '../../telemetry/contender-telemetry.js'
import type { LeaseEvent } from '../session-lease.js'

/** What a write answers: a CAS's result, a retry, its session gone, a renewal made. */
export type WriteEvent = Exclude<
  ContenderEvent,
  { readonly type: 'session-created' | 'release-requested' }
>

/**
 * What `follow` hands the machine: the watch's events, decided, and at the end of a hold the last
 * snapshot held back.
 */
export type FollowEvent =
  | (WatchEvent & { readonly decision?: Decision | undefined })
  | Handed
  | { readonly type: 'refresh-due'; readonly held: DecidedSnapshot }

/**
 * Everything the interpreter of a contender calls: Consul (through its client, its prefix's
 * coordinator and its protocol), and what listens. Every call is an Observable, subscribed when
 * the machine asks for it and unsubscribed when it no longer wants it; so the marble specs give
 * the interpreter a port of marbles and see each call start and stop.
 */
export interface ContenderPort {
  /** How many answers the client has had from its agent (the start-up timeout's first contact). */
  readonly answers: () => number
  /** One session, from where the machine says; an error is a failure to judge. */
  readonly session: (from: SessionSource) => Observable<SessionGrant>
  /** The renewals of a run's session; an error is a permanent failure of the lease. */
  readonly lease: (
    lease: SessionGrant & { readonly leaseMarginMs: number | undefined },
  ) => Observable<LeaseEvent>
  /** Whether a new run may join in one transaction now. */
  readonly mayJoin: () => boolean
  /** The join: the prefix as the transaction left it (or nothing). */
  readonly join: (session: string) => Observable<KVSnapshot | undefined>
  /**
   * The prefix's watch events, each snapshot with this run's decision on it, from `seed`; less
   * those held back (`holdBack`), of which the last is handed over as `refresh-due` at the end of
   * the hold. Unsubscribed, it drops what it kept and its refresh.
   */
  readonly follow: (session: string, seed: KVSnapshot | undefined) => Observable<FollowEvent>
  /**
   * Hold back the snapshots that leave the run's waiter far back, until `until` (`holdsBack`),
   * in place of the last hold: what that one kept is dropped, with its refresh.
   */
  readonly holdBack: (until: number | undefined) => void
  /** One write of a run: its answers as events; it completes when the write is over. */
  readonly perform: (session: string, action: ContenderAction) => Observable<WriteEvent>
  /** Starts the release of a run's slot in the background. */
  readonly release: (session: string, release: RunRelease) => void
  /** Each step, for the telemetry. */
  readonly stepped: (input: ContenderInput, state: ContenderState, now: number) => void
  /** The public error of a contender that gave up. */
  readonly failure: (giveUp: GiveUp) => SemaphoreError
  /** The contender is done: nothing of it runs any more. */
  readonly finished: (end: ContenderEnd, now: number) => void
}
