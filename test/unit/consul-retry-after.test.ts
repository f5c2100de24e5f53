// Retry pacing after Consul asks to slow down: Retry-After as seconds or an HTTP date, and the
// delay the retry loops take from it (never shorter than asked, jittered, capped).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { ConsulError } from '../../src/consul/errors.js'
import {
  MAX_RETRY_AFTER_MS,
  parseRetryAfter,
  retryDelayMs,
  THROTTLED_MIN_MS,
} from '../../src/consul/retry-after.js'

const now = Date.parse('2026-11-25T06:00:00Z')

const serverError = (status: number, retryAfterMs?: number): ConsulError => ({
  _tag: 'ServerError',
  status,
  body: 'rate limit exceeded, try again later or against a different server',
  request: 'GET /v1/kv/p',
  message: 'GET /v1/kv/p: rate limited',
  ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
})

describe('parseRetryAfter', () => {
  it('reads delay-seconds', () => {
    assert.equal(parseRetryAfter('30', now), 30_000)
    assert.equal(parseRetryAfter(' 2 ', now), 2000)
    assert.equal(parseRetryAfter('0', now), 0)
  })

  it('reads an HTTP date (IMF-fixdate, RFC 850, asctime) as the time left until it', () => {
    assert.equal(parseRetryAfter('Wed, 25 Nov 2026 06:00:30 GMT', now), 30_000)
    assert.equal(parseRetryAfter('Wednesday, 25-Nov-26 06:01:00 GMT', now), 60_000)
    assert.equal(parseRetryAfter('Wed Nov 25 06:00:05 2026', now), 5000)
  })

  it('answers 0 for a date in the past', () => {
    assert.equal(parseRetryAfter('Tue, 24 Nov 2026 06:00:00 GMT', now), 0)
  })

  it('takes the first of a repeated header', () => {
    assert.equal(parseRetryAfter(['3', '60'], now), 3000)
  })

  it('ignores what is neither (absent, empty, negative, fractional, words, a bare date)', () => {
    for (const value of [undefined, '', '   ', '-5', '1.5', 'soon', '2026-11-25', '5s', []]) {
      assert.equal(parseRetryAfter(value, now), undefined, JSON.stringify(value))
    }
  })

  it('keeps an absurd number finite', () => {
    const ms = parseRetryAfter('9'.repeat(40), now)
    assert.ok(ms !== undefined && Number.isFinite(ms) && ms <= Number.MAX_SAFE_INTEGER)
  })
})

describe('retryDelayMs', () => {
  const unreachable: ConsulError = { _tag: 'Unreachable', message: 'down' }

  it("keeps the caller's backoff for failures that are not throttling (500, reset)", () => {
    assert.equal(
      retryDelayMs(serverError(500, 30_000), 123, 60_000, () => 0.5),
      123,
    )
    assert.equal(
      retryDelayMs(unreachable, 77, 60_000, () => 0.5),
      77,
    )
  })

  it('waits at least Retry-After after a 429 or a 503, plus up to a quarter of jitter', () => {
    for (const status of [429, 503]) {
      assert.equal(
        retryDelayMs(serverError(status, 2000), 100, 60_000, () => 0),
        2000,
      )
      assert.equal(
        retryDelayMs(serverError(status, 2000), 100, 60_000, () => 0.999),
        2499.5,
      )
    }
  })

  it('waits at least THROTTLED_MIN_MS after a 429 without Retry-After', () => {
    assert.equal(
      retryDelayMs(serverError(429), 100, 60_000, () => 0),
      THROTTLED_MIN_MS,
    )
  })

  it('keeps a longer backoff than Retry-After asks', () => {
    assert.equal(
      retryDelayMs(serverError(429, 1000), 8000, 60_000, () => 0),
      8000,
    )
  })

  it('caps an absurd Retry-After, and honours a cap below it (a lease deadline)', () => {
    const hour = serverError(429, 3_600_000)
    assert.equal(
      retryDelayMs(hour, 100, MAX_RETRY_AFTER_MS, () => 0.5),
      MAX_RETRY_AFTER_MS,
    )
    assert.equal(
      retryDelayMs(serverError(503, 30_000), 100, 2500, () => 0.5),
      2500,
    )
  })
})
