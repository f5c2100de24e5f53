// The library's retry delays (src/shared/backoff.ts): each named policy's formula, the jitter's
// bounds under an injected random source, the growth of the ceiling with the attempts and its cap,
// the pacing after a 429/503 (Retry-After) and the caller's extra cap.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  BACKOFF,
  MAX_RETRY_AFTER_MS,
  RELEASE_THROTTLE_CAP_MS,
  THROTTLED_MIN_MS,
  backoffDelay,
  throttledDelay,
  type BackoffPolicy,
} from '../../src/base/backoff.js'
import type { ConsulError } from '../../src/base/consul-error.js'
import {
  DEFAULT_BACKOFF_INITIAL_MS,
  DEFAULT_BACKOFF_MAX_MS,
} from '../../src/consul/watch-prefix.js'
import { lockDelayBackoffMs } from '../../src/effects/protocol/leader-key-performer.js'
import { seededRandom } from '../support/seeded-random.js'

const serverError = (status: number, retryAfterMs?: number): ConsulError => ({
  _tag: 'ServerError',
  status,
  body: 'rate limit exceeded, try again later or against a different server',
  request: 'GET /v1/kv/p',
  message: 'GET /v1/kv/p: rate limited',
  ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
})
const unreachable: ConsulError = { _tag: 'Unreachable', message: 'down' }

/** The highest value a random source in [0, 1) can give. */
const almostOne = 1 - Number.EPSILON
const always = (value: number) => () => value
/** A random source that gives `values` in turn (and fails the test if asked for more). */
const inTurn = (...values: number[]) => {
  let next = 0
  return () => {
    const value = values[next++]
    assert.ok(value !== undefined, `asked for random number ${next}, only ${values.length} given`)
    return value
  }
}
/** `backoffDelay` for attempts 1..n. */
const delays = (policy: BackoffPolicy, n: number, random: () => number): number[] =>
  Array.from({ length: n }, (_, i) => backoffDelay(policy, i + 1, { random }))
const ceilingOf = (policy: BackoffPolicy, attempt: number): number =>
  Math.min(policy.maxMs, policy.initialMs * 2 ** (attempt - 1))

describe('BACKOFF: each policy keeps the delays its loop waited before the module', () => {
  it('watch: 250 ms doubling to 10 s, full jitter (the watch defaults)', () => {
    assert.deepEqual(
      delays(BACKOFF.watch, 8, always(0.5)),
      [125, 250, 500, 1000, 2000, 4000, 5000, 5000],
    )
    assert.deepEqual(delays(BACKOFF.watch, 3, always(0)), [0, 0, 0])
    assert.equal(DEFAULT_BACKOFF_INITIAL_MS, 250)
    assert.equal(DEFAULT_BACKOFF_MAX_MS, 10_000)
  })

  it("session: 250 ms doubling to 10 s, the upper half jittered (contend's start-over)", () => {
    assert.deepEqual(
      delays(BACKOFF.session, 8, always(0)),
      [125, 250, 500, 1000, 2000, 4000, 5000, 5000],
    )
    assert.deepEqual(
      delays(BACKOFF.session, 8, always(0.5)),
      [187.5, 375, 750, 1500, 3000, 6000, 7500, 7500],
    )
  })

  it('renewal and recheck: a fixed second, whatever the attempt and the random source', () => {
    for (const policy of [BACKOFF.renewal, BACKOFF.recheck]) {
      assert.deepEqual(delays(policy, 4, always(0)), [1000, 1000, 1000, 1000], policy.name)
      assert.deepEqual(delays(policy, 4, always(almostOne)), [1000, 1000, 1000, 1000], policy.name)
    }
  })

  it("write: 200 ms first (retryTransient's 100 ms × 2 ** attempt from attempt 1), doubling to 2 s, the upper half jittered", () => {
    assert.deepEqual(delays(BACKOFF.write, 6, always(0)), [100, 200, 400, 800, 1000, 1000])
    assert.deepEqual(delays(BACKOFF.write, 6, always(0.5)), [150, 300, 600, 1200, 1500, 1500])
  })

  it('release: 100 ms doubling, no jitter', () => {
    assert.deepEqual(delays(BACKOFF.release, 5, always(0.5)), [100, 200, 400, 800, 800])
  })

  it('releaseCas: a few ms, 5 doubling to 50, full jitter', () => {
    assert.deepEqual(delays(BACKOFF.releaseCas, 6, always(0.5)), [2.5, 5, 10, 20, 25, 25])
  })

  it('lockDelay: 250 ms doubling to 1 s, up to a quarter off; lockDelayBackoffMs in whole ms', () => {
    assert.deepEqual(delays(BACKOFF.lockDelay, 4, always(0)), [187.5, 375, 750, 750])
    assert.deepEqual(delays(BACKOFF.lockDelay, 4, always(0.5)), [218.75, 437.5, 875, 875])
    assert.deepEqual(
      [1, 2, 3, 4].map((n) => lockDelayBackoffMs(n, always(0))),
      [188, 375, 750, 750],
    )
    assert.deepEqual(
      [1, 2, 3, 4].map((n) => lockDelayBackoffMs(n, always(almostOne))),
      [250, 500, 1000, 1000],
    )
  })
})

describe('backoffDelay', () => {
  it('stays within [ceiling × (1 − jitter), ceiling] for any value of the injected random', () => {
    const random = seededRandom(23)
    for (const policy of Object.values(BACKOFF)) {
      for (let attempt = 1; attempt <= 12; attempt++) {
        const ceiling = ceilingOf(policy, attempt)
        for (const r of [0, almostOne, ...Array.from({ length: 50 }, random)]) {
          const ms = backoffDelay(policy, attempt, { random: always(r) })
          const where = `${policy.name}, attempt ${attempt}, random ${r}: ${ms} ms`
          assert.ok(ms >= ceiling * (1 - policy.jitter) && ms <= ceiling, where)
        }
      }
    }
  })

  it('spans the jitter: the lowest random gives the floor, the highest the ceiling', () => {
    for (const policy of Object.values(BACKOFF)) {
      const ceiling = ceilingOf(policy, 3)
      assert.equal(backoffDelay(policy, 3, { random: always(0) }), ceiling * (1 - policy.jitter))
      const top = backoffDelay(policy, 3, { random: always(almostOne) })
      assert.ok(ceiling - top < 1e-9, `${policy.name}: ${top} of ${ceiling}`)
    }
  })

  it('doubles the ceiling with each failure in a row, then holds it at maxMs', () => {
    const policy: BackoffPolicy = {
      name: 'test',
      initialMs: 10,
      maxMs: 100,
      jitter: 0,
      throttleCapMs: 1000,
    }
    assert.deepEqual(delays(policy, 7, always(0.3)), [10, 20, 40, 80, 100, 100, 100])
  })

  it('takes attempt 0 or below as the first', () => {
    assert.equal(backoffDelay(BACKOFF.release, 0), 100)
    assert.equal(backoffDelay(BACKOFF.release, -3), 100)
  })

  it('stays finite after thousands of failures in a row, also with no first delay', () => {
    assert.equal(backoffDelay(BACKOFF.write, 5000, { random: always(0) }), 1000)
    const immediate = { ...BACKOFF.watch, initialMs: 0 }
    assert.equal(backoffDelay(immediate, 2000, { random: always(0.5) }), 0)
  })

  it('uses Math.random without an injected source, within the same bounds', () => {
    const ms = backoffDelay(BACKOFF.write, 2)
    assert.ok(ms >= 200 && ms <= 400, `${ms}`)
  })

  it("keeps the policy's own delay for failures that are not throttling (500, reset)", () => {
    const random = always(0.5)
    assert.equal(backoffDelay(BACKOFF.write, 1, { random, error: serverError(500, 30_000) }), 150)
    assert.equal(backoffDelay(BACKOFF.write, 1, { random, error: unreachable }), 150)
  })

  it('waits at least Retry-After after a 429 or 503, plus up to a quarter of jitter', () => {
    for (const status of [429, 503]) {
      const error = serverError(status, 3000)
      assert.equal(backoffDelay(BACKOFF.write, 1, { random: always(0), error }), 3000)
      // The first number jitters the policy's own delay, the second the Retry-After.
      assert.equal(backoffDelay(BACKOFF.write, 1, { random: inTurn(0, 0.5), error }), 3375)
    }
  })

  it('waits at least THROTTLED_MIN_MS after a throttled answer without Retry-After', () => {
    const error = serverError(503)
    assert.equal(backoffDelay(BACKOFF.releaseCas, 1, { random: always(0), error }), 1000)
    assert.equal(THROTTLED_MIN_MS, 1000)
  })

  it("keeps the policy's delay when it is longer than Retry-After asks", () => {
    const error = serverError(429, 1000)
    assert.equal(backoffDelay(BACKOFF.session, 8, { random: inTurn(0, 0), error }), 5000)
  })

  it("caps a long Retry-After at the policy's throttleCapMs", () => {
    const hour = serverError(429, 3_600_000)
    assert.equal(backoffDelay(BACKOFF.write, 1, { error: hour }), MAX_RETRY_AFTER_MS)
    assert.equal(backoffDelay(BACKOFF.release, 1, { error: hour }), RELEASE_THROTTLE_CAP_MS)
  })

  it("honours the caller's capMs below everything else, Retry-After and own delay alike", () => {
    const error = serverError(429, 10_000)
    assert.equal(backoffDelay(BACKOFF.renewal, 1, { error, capMs: 2500 }), 2500)
    assert.equal(backoffDelay(BACKOFF.watch, 8, { random: always(0.5), capMs: 3000 }), 3000)
    assert.equal(backoffDelay(BACKOFF.write, 1, { random: always(0), capMs: 60_000 }), 100)
  })

  it('answers 0, never a negative delay, for a cap already passed (a lease deadline behind)', () => {
    assert.equal(backoffDelay(BACKOFF.renewal, 1, { capMs: -500 }), 0)
  })
})

describe('throttledDelay', () => {
  it("keeps the caller's backoff for failures that are not throttling (500, reset)", () => {
    assert.equal(throttledDelay(serverError(500, 30_000), 123, 60_000, always(0.5)), 123)
    assert.equal(throttledDelay(unreachable, 77, 60_000, always(0.5)), 77)
  })

  it('waits at least Retry-After after a 429 or a 503, plus up to a quarter of jitter', () => {
    for (const status of [429, 503]) {
      assert.equal(throttledDelay(serverError(status, 2000), 100, 60_000, always(0)), 2000)
      assert.equal(throttledDelay(serverError(status, 2000), 100, 60_000, always(0.999)), 2499.5)
    }
  })

  it('waits at least THROTTLED_MIN_MS after a 429 without Retry-After', () => {
    assert.equal(throttledDelay(serverError(429), 100, 60_000, always(0)), THROTTLED_MIN_MS)
  })

  it('keeps a longer backoff than Retry-After asks', () => {
    assert.equal(throttledDelay(serverError(429, 1000), 8000, 60_000, always(0)), 8000)
  })

  it('caps an absurd Retry-After, and honours a cap below it (a lease deadline)', () => {
    const hour = serverError(429, 3_600_000)
    assert.equal(throttledDelay(hour, 100, MAX_RETRY_AFTER_MS, always(0.5)), MAX_RETRY_AFTER_MS)
    assert.equal(throttledDelay(serverError(503, 30_000), 100, 2500, always(0.5)), 2500)
  })
})
