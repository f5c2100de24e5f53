// Retry-After as seconds or an HTTP date. The delays the retry loops take from it are
// backoff.ts's, specified in backoff.test.ts.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { throttledDelay } from '../../src/consul/backoff.js'
import { parseRetryAfter, retryDelayMs } from '../../src/consul/retry-after.js'

const now = Date.parse('2026-11-25T06:00:00Z')

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
  it("is backoff.ts's throttledDelay, kept here for the effects that still import it", () => {
    assert.equal(retryDelayMs, throttledDelay)
  })
})
