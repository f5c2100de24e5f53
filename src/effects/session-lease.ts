import * as E from 'fp-ts/lib/Either.js'
import { Observable, asyncScheduler, concat, of, throwError, timer, type SchedulerLike } from 'rxjs'
import { mergeMap } from 'rxjs/operators'
import type { ConsulClient } from '../consul/client-api.js'
import { isTransient } from '../consul/errors.js'
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
  readonly scheduler?: SchedulerLike
}

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
 * stream with the typed ConsulError.
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

  const renewAfter = (ttlMs: number, delayMs: number): Observable<LeaseEvent> =>
    timer(Math.max(0, delayMs), scheduler).pipe(
      mergeMap(() => {
        const sentAt = scheduler.now()
        return fromCall((signal) => client.session.renew(session, { signal })).pipe(
          mergeMap((result): Observable<LeaseEvent> => {
            if (E.isLeft(result)) {
              if (!isTransient(result.left)) return throwError(() => result.left)
              return concat(
                of<LeaseEvent>({ type: 'renewal-failed', error: result.left }),
                renewAfter(ttlMs, retryMs),
              )
            }
            if (result.right === null) return of<LeaseEvent>({ type: 'session-gone' })
            const serverTtlMs = result.right.ttlMs ?? ttlMs
            return concat(
              of<LeaseEvent>({ type: 'session-renewed', ttlMs: serverTtlMs, sentAt }),
              renewAfter(serverTtlMs, sentAt + serverTtlMs / 2 - scheduler.now()),
            )
          }),
        )
      }),
    )

  return renewAfter(options.ttlMs, options.createdAt + options.ttlMs / 2 - scheduler.now())
}
