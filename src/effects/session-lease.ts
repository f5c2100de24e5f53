import * as E from 'fp-ts/lib/Either.js'
import { Observable, asyncScheduler, type SchedulerLike, type Subscription } from 'rxjs'
import { BACKOFF, throttledDelay } from '../consul/backoff.js'
import type { ConsulClient } from '../consul/client-api.js'
import {
  ACL_FAILURES_BEFORE_PERMANENT,
  isAclServerError,
  isTransient,
  persistentAclError,
  type ConsulError,
} from '../consul/errors.js'
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

/** Where a lease reports: each renewal step, and a permanent failure (after which it stops). */
export interface LeaseListener {
  readonly event: (event: LeaseEvent) => void
  readonly error: (error: ConsulError) => void
}

/** The shortest wait between two renewals after a 429/503, however close the deadline. */
const MIN_THROTTLED_RETRY_MS = 250

/**
 * Keeps a session alive: renews it TTL/2 after the last successful renewal was sent (adopting the
 * TTL the server returns), retries a failed renewal every `retryMs` until stopped, and reports
 * each step. A scheduler timer and at most one request in flight: no Observable per session.
 *
 * ```
 *        renew     renew   fails fails  renew answers 404
 * --------r---------r--------f-----f-------g   (then it stops)
 * ```
 *
 * The lease never destroys the session: release does that, in order (CAS out of `.lock`, delete the
 * contender key, destroy). Retries go on past the lease deadline on purpose: the core has dropped
 * `holding` by then, and a renewal that gets through proves the session (and so the slot) was never
 * lost. Stopping aborts the request in flight. A permanent failure (403, bad request) is reported
 * as the typed ConsulError, and so is a 500 naming an ACL problem answered
 * ACL_FAILURES_BEFORE_PERMANENT times in a row (as PermissionDenied: the token was deleted).
 *
 * A 429 or 503 (Consul's rate limits) waits what `Retry-After` asks, but never past the lease: at
 * most half the time left until the lease deadline (and, once that has passed, until Consul's own
 * expiry at twice the TTL), so that a throttled renewal is tried again while it can still save
 * the slot. Nothing but a successful renewal moves the deadline.
 *
 * @example
 * const stop = keepSessionAlive(
 *   { client, session, ttlMs: 15000, createdAt: asyncScheduler.now() },
 *   { event: (e) => console.log(e.type), error: (e) => console.error(e.message) },
 * )
 * @returns A function that stops the lease (idempotent).
 */
export function keepSessionAlive(
  options: SessionLeaseOptions,
  listener: LeaseListener,
): () => void {
  const scheduler = options.scheduler ?? asyncScheduler
  const retryMs = options.retryMs ?? BACKOFF.renewal.initialMs
  const random = options.random ?? Math.random
  const { client, session } = options
  let timer: Subscription | undefined
  let call: AbortController | undefined
  let stopped = false

  const renewAt = (at: number, ttlMs: number, lastSentAt: number, aclInRow: number): void => {
    timer = scheduler.schedule(
      () => {
        timer = undefined
        renew(ttlMs, lastSentAt, aclInRow)
      },
      Math.max(0, at - scheduler.now()),
    )
  }

  const renew = (ttlMs: number, lastSentAt: number, aclInRow: number): void => {
    const sentAt = scheduler.now()
    const controller = new AbortController()
    call = controller
    void client.session
      .renew(session, { signal: controller.signal })()
      .then((result) => {
        if (stopped || call !== controller) return
        call = undefined
        if (E.isLeft(result)) {
          const error = result.left
          if (!isTransient(error)) return stopWith(error)
          const acl = isAclServerError(error) ? aclInRow + 1 : 0
          if (isAclServerError(error) && acl >= ACL_FAILURES_BEFORE_PERMANENT) {
            return stopWith(persistentAclError(error, acl))
          }
          listener.event({ type: 'renewal-failed', error })
          if (stopped) return
          const now = scheduler.now()
          const deadline = leaseDeadline(lastSentAt, ttlMs, {
            leaseMarginMs: options.leaseMarginMs,
          })
          // Consul drops a session 2 × TTL after its last renewal: past our deadline, that is
          // what is left to save.
          const target = now < deadline ? deadline : lastSentAt + 2 * ttlMs
          const capMs = Math.max(MIN_THROTTLED_RETRY_MS, (target - now) / 2)
          return renewAt(
            now + throttledDelay(error, retryMs, capMs, random),
            ttlMs,
            lastSentAt,
            acl,
          )
        }
        if (result.right === null) {
          stopped = true
          return listener.event({ type: 'session-gone' })
        }
        const serverTtlMs = result.right.ttlMs ?? ttlMs
        listener.event({ type: 'session-renewed', ttlMs: serverTtlMs, sentAt })
        if (!stopped) renewAt(sentAt + serverTtlMs / 2, serverTtlMs, sentAt, 0)
      })
  }

  const stop = (): void => {
    stopped = true
    timer?.unsubscribe()
    timer = undefined
    call?.abort()
    call = undefined
  }
  const stopWith = (error: ConsulError): void => {
    stop()
    listener.error(error)
  }

  renewAt(options.createdAt + options.ttlMs / 2, options.ttlMs, options.createdAt, 0)
  return stop
}

/**
 * `keepSessionAlive` as an Observable: renewal events while subscribed; completes after
 * `session-gone`, errors with a permanent failure; unsubscribing stops the lease.
 *
 * @example
 * sessionLease({ client, session, ttlMs: 15000, createdAt: asyncScheduler.now() })
 *   .subscribe((event) => console.log(event.type))
 * @returns Renewal events.
 */
export function sessionLease(options: SessionLeaseOptions): Observable<LeaseEvent> {
  return new Observable<LeaseEvent>((subscriber) =>
    keepSessionAlive(options, {
      event: (event) => {
        subscriber.next(event)
        if (event.type === 'session-gone') subscriber.complete()
      },
      error: (error) => subscriber.error(error),
    }),
  )
}
