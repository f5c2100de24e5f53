/**
 * Pacing of retries after Consul asked the client to slow down: a 429 (rate limit on reads, or the
 * client agent's `rpc_rate`) or a 503 (rate limit on writes that must reach the leader), with or
 * without a `Retry-After` header. Pure: time and randomness come from the caller.
 */
import { isThrottled, type ConsulError } from './errors.js'

const HTTP_DATE_DAY = /^(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)/i

/**
 * `Retry-After` (RFC 9110 §10.2.3) as a delay in ms from `nowMs`: delay-seconds (`30`) or an
 * HTTP-date (`Wed, 21 Oct 2026 07:28:00 GMT`, also the obsolete RFC 850 and asctime forms). A
 * date in the past is 0. Anything else (empty, negative, fractional, words) is undefined.
 *
 * @example
 * parseRetryAfter('30', Date.now()) // 30000
 * @param value - The header as Node gives it (a repeated header: the first one counts).
 * @param nowMs - The wall-clock time the answer arrived, in ms since the epoch.
 * @returns The delay in ms, or undefined.
 */
export function parseRetryAfter(
  value: string | readonly string[] | undefined,
  nowMs: number,
): number | undefined {
  const text = (typeof value === 'string' ? value : value?.[0])?.trim()
  if (text === undefined || text === '') return undefined
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, Number.MAX_SAFE_INTEGER)
  if (!HTTP_DATE_DAY.test(text)) return undefined
  const at = Date.parse(text)
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs)
}

/**
 * 60 s: the longest wait a `Retry-After` can impose on a retry loop of this library. A longer one
 * is more likely a misconfigured proxy than a plan, and a contender that waits longer looks hung.
 */
export const MAX_RETRY_AFTER_MS = 60_000

/**
 * The least wait after a 429 or 503 that named no delay: a rate-limited server is not helped by
 * the 100-250 ms first retry that suits a dropped connection.
 */
export const THROTTLED_MIN_MS = 1000

/**
 * How long to wait before the next try after `error`, given what the caller's own backoff says
 * for this attempt (`backoffMs`). Other failures keep `backoffMs`. A 429 or 503 waits at least
 * its `Retry-After` (or THROTTLED_MIN_MS without one), plus up to a quarter more of jitter so that
 * clients told the same delay do not come back in the same instant; never more than `capMs` (an
 * absurd Retry-After, or the lease deadline of a renewal, wins over what the server asked).
 *
 * @example
 * timer(retryDelayMs(error, backoff(attempt), 10_000, Math.random))
 * @param error - The failure to retry.
 * @param backoffMs - The caller's backoff for this attempt, jitter included.
 * @param capMs - The longest acceptable wait.
 * @param random - Source of the jitter, in [0, 1).
 * @returns The delay in ms.
 */
export function retryDelayMs(
  error: ConsulError,
  backoffMs: number,
  capMs: number,
  random: () => number = Math.random,
): number {
  if (!isThrottled(error)) return backoffMs
  const asked = Math.max(backoffMs, error.retryAfterMs ?? THROTTLED_MIN_MS)
  return Math.max(0, Math.min(capMs, asked * (1 + random() / 4)))
}
