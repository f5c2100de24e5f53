import * as E from 'fp-ts/lib/Either.js'
import { Observable, asyncScheduler, concat, of, throwError, timer, type SchedulerLike } from 'rxjs'
import { mergeMap } from 'rxjs/operators'
import type { ConsulClient } from '../consul/client-api.js'
import {
  ACL_FAILURES_BEFORE_PERMANENT,
  isAclServerError,
  isTransient,
  persistentAclError,
} from '../consul/errors.js'
import { retryDelayMs } from '../consul/retry-after.js'
import { leaseDeadline } from '../core/contender/lease-deadline.js'
import type { ContenderEvent } from '../core/events.js'
import { fromCall } from './from-call.js'

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
  /** Delay between renewal retries after a transient failure. Default 1000 ms. */
  readonly retryMs?: number
  /** The core's lease margin (see `leaseDeadline`); default 10 % of the TTL. */
  readonly leaseMarginMs?: number | undefined
  readonly scheduler?: SchedulerLike
  /** Source of the jitter of throttled retries, in [0, 1); default Math.random. */
  readonly random?: () => number
}

/** The shortest wait between two renewals after a 429/503, however close the deadline. */
const MIN_THROTTLED_RETRY_MS = 250

/**
 * Keeps a session alive: renews it TTL/2 after the last successful renewal was sent (adopting the
 * TTL the server returns), retries a failed renewal every `retryMs` for as long as it is
 * subscribed, and reports each step.
 *
 * ```
 *        renew     renew   fails fails  renew answers 404
 * --------r---------r--------f-----f-------g|
 * ```
 *
 * The lease never destroys the session: release does that, in order (CAS out of `.lock`, delete the
 * contender key, destroy). Retries go on past the lease deadline on purpose: the core has dropped
 * `holding` by then, and a renewal that gets through proves the session (and so the slot) was never
 * lost. Unsubscribing aborts the request in flight. A permanent failure (403, bad request) ends the
 * stream with the typed ConsulError, and so does a 500 naming an ACL problem answered
 * ACL_FAILURES_BEFORE_PERMANENT times in a row (as PermissionDenied: the token was deleted).
 *
 * A 429 or 503 (Consul's rate limits) waits what `Retry-After` asks, but never past the lease: at
 * most half the time left until the lease deadline (and, once that has passed, until Consul's own
 * expiry at twice the TTL), so that a throttled renewal is tried again while it can still save
 * the slot. Nothing but a successful renewal moves the deadline.
 *
 * @example
 * sessionLease({ client, session, ttlMs: 15000, createdAt: asyncScheduler.now() })
 *   .subscribe((event) => console.log(event.type))
 * @returns Renewal events; completes after `session-gone`.
 */
export function sessionLease(options: SessionLeaseOptions): Observable<LeaseEvent> {
  const scheduler = options.scheduler ?? asyncScheduler
  const retryMs = options.retryMs ?? 1000
  const { client, session } = options

  const random = options.random ?? Math.random

  /** The wait before retrying a failed renewal: `retryMs`, or what a throttled answer asks. */
  const retryIn = (
    error: Parameters<typeof retryDelayMs>[0],
    lastSentAt: number,
    ttlMs: number,
  ) => {
    const now = scheduler.now()
    const deadline = leaseDeadline(lastSentAt, ttlMs, { leaseMarginMs: options.leaseMarginMs })
    // Consul drops a session 2 × TTL after its last renewal: past our deadline, that is what is
    // left to save.
    const target = now < deadline ? deadline : lastSentAt + 2 * ttlMs
    const capMs = Math.max(MIN_THROTTLED_RETRY_MS, (target - now) / 2)
    return retryDelayMs(error, retryMs, capMs, random)
  }

  const renewAfter = (
    ttlMs: number,
    lastSentAt: number,
    delayMs: number,
    aclInRow: number,
  ): Observable<LeaseEvent> =>
    timer(Math.max(0, delayMs), scheduler).pipe(
      mergeMap(() => {
        const sentAt = scheduler.now()
        return fromCall((signal) => client.session.renew(session, { signal })).pipe(
          mergeMap((result): Observable<LeaseEvent> => {
            if (E.isLeft(result)) {
              const error = result.left
              if (!isTransient(error)) return throwError(() => error)
              const acl = isAclServerError(error) ? aclInRow + 1 : 0
              if (isAclServerError(error) && acl >= ACL_FAILURES_BEFORE_PERMANENT) {
                return throwError(() => persistentAclError(error, acl))
              }
              return concat(
                of<LeaseEvent>({ type: 'renewal-failed', error }),
                renewAfter(ttlMs, lastSentAt, retryIn(error, lastSentAt, ttlMs), acl),
              )
            }
            if (result.right === null) return of<LeaseEvent>({ type: 'session-gone' })
            const serverTtlMs = result.right.ttlMs ?? ttlMs
            return concat(
              of<LeaseEvent>({ type: 'session-renewed', ttlMs: serverTtlMs, sentAt }),
              renewAfter(serverTtlMs, sentAt, sentAt + serverTtlMs / 2 - scheduler.now(), 0),
            )
          }),
        )
      }),
    )

  return renewAfter(
    options.ttlMs,
    options.createdAt,
    options.createdAt + options.ttlMs / 2 - scheduler.now(),
    0,
  )
}
