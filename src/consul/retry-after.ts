/**
 * `Retry-After`, the header with which Consul (or a proxy before it) asks the client to slow down:
 * a 429 (rate limit on reads, or the client agent's `rpc_rate`) or a 503 (rate limit on writes that
 * must reach the leader). Pure: the time comes from the caller. The retry loops' delays, this
 * header's included, are `backoff.ts`'s.
 */

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

// The pacing after a 429/503 lives in backoff.ts (`throttledDelay`, MAX_RETRY_AFTER_MS). These
// names stay here only while contend.ts and session-lease.ts import them from this file.
export { MAX_RETRY_AFTER_MS, throttledDelay as retryDelayMs } from './backoff.js'
