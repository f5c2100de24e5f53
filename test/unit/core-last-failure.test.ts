// The failure a contender is retrying, as the core records it: set by the loop that failed,
// cleared by that loop's next success, and never a reason to move the lease deadline.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { ConsulError } from '../../src/base/consul-error.js'
import {
  initialContenderState,
  type ContenderState,
} from '../../src/core/contender/contender-state-model.js'
import { lastFailureAfter } from '../../src/core/contender/last-failure.js'
import { contenderStep } from '../../src/core/contender/contender-step.js'

/** The state after one step. */
const stateAfter = (...step: Parameters<typeof contenderStep>): ContenderState =>
  contenderStep(...step).state

const throttled: ConsulError = {
  _tag: 'ServerError',
  status: 429,
  body: 'rate limit exceeded',
  request: 'PUT /v1/session/renew/s1',
  retryAfterMs: 30_000,
  message: 'PUT /v1/session/renew/s1: rate limited',
}
const down: ConsulError = { _tag: 'Unreachable', message: 'GET /v1/kv/p/: ECONNREFUSED' }
const options = { prefix: 'p', limit: 1 }

describe('lastFailure', () => {
  it('is set by a renewal failure, which leaves the lease deadline where it was', () => {
    const leased = stateAfter(
      initialContenderState,
      { type: 'session-created', session: 's1', ttlMs: 10_000, sentAt: 0 },
      0,
      options,
    )
    assert.equal(leased.leaseDeadline, 9000)
    const failed = stateAfter(leased, { type: 'renewal-failed', error: throttled }, 5000, options)
    assert.deepEqual(failed.lastFailure, { during: 'renewal', error: throttled })
    assert.equal(failed.leaseDeadline, 9000, 'a 429 never extends the lease')
    const renewed = stateAfter(
      failed,
      { type: 'session-renewed', ttlMs: 10_000, sentAt: 6000 },
      6100,
      options,
    )
    assert.equal(renewed.lastFailure, undefined)
    assert.equal(renewed.leaseDeadline, 15_000)
  })

  it("is cleared only by the same loop's success", () => {
    const watchDown = lastFailureAfter(undefined, {
      type: 'disconnected',
      error: down,
      attempt: 1,
      retryInMs: 100,
    })
    assert.deepEqual(watchDown, { during: 'watch', error: down })
    assert.equal(
      lastFailureAfter(watchDown, { type: 'session-renewed', ttlMs: 1, sentAt: 0 }),
      watchDown,
    )
    assert.equal(
      lastFailureAfter(watchDown, { type: 'snapshot', snapshot: { index: 5n, entries: [] } }),
      undefined,
    )
    const renewalDown = lastFailureAfter(undefined, { type: 'renewal-failed', error: throttled })
    assert.equal(
      lastFailureAfter(renewalDown, { type: 'snapshot', snapshot: { index: 5n, entries: [] } }),
      renewalDown,
    )
    const creating = { during: 'session' as const, error: throttled }
    assert.equal(
      lastFailureAfter(creating, { type: 'session-created', session: 's', ttlMs: 1, sentAt: 0 }),
      undefined,
    )
    assert.equal(lastFailureAfter(creating, { type: 'release-requested' }), creating)
  })
})
