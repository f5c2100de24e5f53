import * as E from 'fp-ts/lib/Either.js'
import {
  Observable,
  asyncScheduler,
  type SchedulerAction,
  type SchedulerLike,
  type Subscription,
} from 'rxjs'
import { BACKOFF, throttledDelay } from '../base/backoff.js'
import type { ConsulClient, SessionInfo } from '../consul/client-api.js'
import type { ConsulError } from '../base/consul-error.js'
import { judgeFailure } from '../base/failure-verdict.js'
import { leaseDeadline } from '../core/contender/lease-deadline.js'
import type { ContenderEvent } from '../core/events.js'

/** The renewal events of a session lease (a subset of ContenderEvent). */
export type LeaseEvent = Extract<
  ContenderEvent,
  { type: 'session-renewed' | 'renewal-failed' | 'session-gone' }
>

export interface SessionLeaseOptions {
  readonly client: ConsulClient
  readonly session: string
  /** The session's TTL in ms (what it was created with). */
  readonly ttlMs: number
  /** Scheduler time at which the create request was sent: the lease runs from there. */
  readonly createdAt: number
  /** Delay between renewal retries after a transient failure. Default: the `renewal` policy's. */
  readonly retryMs?: number
  /** The core's lease margin (see `leaseDeadline`); default 10 % of the TTL. */
  readonly leaseMarginMs?: number | undefined
  readonly scheduler?: SchedulerLike | undefined
  /** Source of the jitter of throttled retries, in [0, 1); default Math.random. */
  readonly random?: (() => number) | undefined
}

/**
 * Where a lease reports: each renewal step, and a permanent failure (after which it stops). A
 * subscriber of `LeaseEvent`s is one as it is.
 */
export interface LeaseListener {
  readonly next: (event: LeaseEvent) => void
  readonly error: (error: ConsulError) => void
}

/** The shortest wait between two renewals after a 429/503, however close the deadline. */
const MIN_THROTTLED_RETRY_MS = 250

/**
 * Keeps a session alive: renews it TTL/2 after the last successful renewal was sent (adopting the
 * TTL the server returns), retries a failed renewal every `retryMs` until stopped, and reports
 * each step to its listener. One scheduler timer and at most one request in flight, and no closure
 * per session: a process with ten thousand contenders keeps ten thousand of these, so what the
 * next renewal needs to know is kept in the lease's own fields, and the timer's work is one
 * function for every lease.
 *
 * ```
 *        renew     renew   fails fails  renew answers 404
 * --------r---------r--------f-----f-------g   (then it stops)
 * ```
 *
 * The lease never destroys the session: release does that, in order (CAS out of `.lock`, delete the
 * contender key, destroy). Retries go on past the lease deadline on purpose: the core has dropped
 * `holding` by then, and a renewal that gets through proves the session (and so the slot) was never
 * lost. Stopping aborts the request in flight. A failure is judged by `judgeFailure`: a permanent
 * one (403, bad request, or a 500 naming an ACL problem ACL_FAILURES_BEFORE_PERMANENT times in a
 * row, as PermissionDenied: the token was deleted) is reported as the typed ConsulError.
 *
 * A 429 or 503 (Consul's rate limits) waits what `Retry-After` asks, but never past the lease: at
 * most half the time left until the lease deadline (and, once that has passed, until Consul's own
 * expiry at twice the TTL), so that a throttled renewal is tried again while it can still save
 * the slot. Nothing but a successful renewal moves the deadline.
 *
 * @example
 * const lease = new SessionLease(
 *   { client, session, ttlMs: 15000, createdAt: asyncScheduler.now() },
 *   { next: (e) => console.log(e.type), error: (e) => console.error(e.message) },
 * )
 * // ... later
 * lease.stop()
 */
export class SessionLease {
  private readonly client: ConsulClient
  private readonly session: string
  private readonly leaseMarginMs: number | undefined
  private readonly retryMs: number | undefined
  private readonly random: (() => number) | undefined
  private readonly scheduler: SchedulerLike
  private timer: Subscription | undefined = undefined
  private call: AbortController | undefined = undefined
  private stopped = false
  /** When the last successful renewal (or the create) was sent, and the TTL it runs on. */
  private sentAt: number
  private ttlMs: number
  /** The ACL-naming 500s in a row so far (`judgeFailure`). */
  private aclInRow = 0

  constructor(
    options: SessionLeaseOptions,
    private readonly listener: LeaseListener,
  ) {
    this.client = options.client
    this.session = options.session
    this.leaseMarginMs = options.leaseMarginMs
    this.retryMs = options.retryMs
    this.random = options.random
    this.scheduler = options.scheduler ?? asyncScheduler
    this.sentAt = options.createdAt
    this.ttlMs = options.ttlMs
    this.renewAt(this.sentAt + this.ttlMs / 2)
  }

  /** Stops renewing and aborts the request in flight (idempotent). */
  stop(): void {
    this.stopped = true
    this.timer?.unsubscribe()
    this.timer = undefined
    this.call?.abort()
    this.call = undefined
  }

  private renewAt(at: number): void {
    this.timer = this.scheduler.schedule(renewNow, Math.max(0, at - this.scheduler.now()), this)
  }

  /** Sends a renewal (called by the timer). */
  renew(): void {
    this.timer = undefined
    const sentAt = this.scheduler.now()
    const controller = new AbortController()
    this.call = controller
    void this.client.session
      .renew(this.session, { signal: controller.signal })()
      .then((result) => {
        if (this.stopped || this.call !== controller) return
        this.call = undefined
        if (E.isRight(result)) return this.renewed(result.right, sentAt)
        this.failed(result.left)
      })
  }

  private renewed(info: SessionInfo | null, sentAt: number): void {
    if (info === null) {
      this.stopped = true
      return this.listener.next({ type: 'session-gone' })
    }
    const ttlMs = info.ttlMs ?? this.ttlMs
    this.sentAt = sentAt
    this.ttlMs = ttlMs
    this.aclInRow = 0
    this.listener.next({ type: 'session-renewed', ttlMs, sentAt })
    if (!this.stopped) this.renewAt(sentAt + ttlMs / 2)
  }

  private failed(error: ConsulError): void {
    const verdict = judgeFailure(error, this.aclInRow)
    if (verdict.verdict === 'permanent') return this.stopWith(verdict.error)
    this.aclInRow = verdict.aclInRow
    this.listener.next({ type: 'renewal-failed', error })
    if (this.stopped) return
    const now = this.scheduler.now()
    const { sentAt, ttlMs } = this
    const deadline = leaseDeadline(sentAt, ttlMs, { leaseMarginMs: this.leaseMarginMs })
    // Consul drops a session 2 × TTL after its last renewal: past our deadline, that is what is
    // left to save.
    const target = now < deadline ? deadline : sentAt + 2 * ttlMs
    const capMs = Math.max(MIN_THROTTLED_RETRY_MS, (target - now) / 2)
    const retryMs = this.retryMs ?? BACKOFF.renewal.initialMs
    const delay = throttledDelay(error, retryMs, capMs, this.random ?? Math.random)
    this.renewAt(now + delay)
  }

  private stopWith(error: ConsulError): void {
    this.stop()
    this.listener.error(error)
  }
}

/** The timer's work: one module-level function for every lease (its state says which). */
function renewNow(this: SchedulerAction<SessionLease>, lease?: SessionLease): void {
  lease?.renew()
}

/**
 * `SessionLease` as an Observable: renewal events while subscribed; completes after
 * `session-gone`, errors with a permanent failure; unsubscribing stops the lease.
 *
 * @example
 * sessionLease({ client, session, ttlMs: 15000, createdAt: asyncScheduler.now() })
 *   .subscribe((event) => console.log(event.type))
 * @returns Renewal events.
 */
export function sessionLease(options: SessionLeaseOptions): Observable<LeaseEvent> {
  return new Observable<LeaseEvent>((subscriber) => {
    const lease = new SessionLease(options, {
      next: (event) => {
        subscriber.next(event)
        if (event.type === 'session-gone') subscriber.complete()
      },
      error: (error) => subscriber.error(error),
    })
    return () => lease.stop()
  })
}
