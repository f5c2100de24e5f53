// Which withSlot calls share a job pool: the same client, prefix and options, compared by value
// for plain values and by identity for everything else.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { asyncScheduler, queueScheduler } from 'rxjs'
import { slotPool } from '../../src/recipes/slot-pool.js'
import type { SemaphoreOptions } from '../../src/options/contender-options.js'

const none = (): void => undefined
const poolOf = (options: SemaphoreOptions) => slotPool(options, none)

describe('slotPool: which calls share a pool', () => {
  it('should share one pool for the same options in any order, a trailing slash of the prefix aside', () => {
    const a = poolOf({ prefix: 'key/a', limit: 3, ttl: '15s' })
    assert.equal(poolOf({ ttl: '15s', limit: 3, prefix: 'key/a/' }), a)
    assert.equal(poolOf({ prefix: 'key/a', limit: 3, ttl: '15s', value: undefined }), a)
  })

  it('should keep calls apart that differ in a plain value', () => {
    const a = poolOf({ prefix: 'key/b', limit: 3 })
    assert.notEqual(poolOf({ prefix: 'key/b', limit: 4 }), a)
    assert.notEqual(poolOf({ prefix: 'key/b2', limit: 3 }), a)
    assert.notEqual(poolOf({ prefix: 'key/b', limit: 3, fairness: false }), a)
  })

  it('should compare plain objects and arrays by value, their keys in any order', () => {
    const a = poolOf({
      prefix: 'key/c',
      limit: 2,
      serviceChecks: [{ id: 'web', namespace: 'ns1' }],
    })
    assert.equal(
      poolOf({ prefix: 'key/c', limit: 2, serviceChecks: [{ namespace: 'ns1', id: 'web' }] }),
      a,
    )
    assert.notEqual(
      poolOf({ prefix: 'key/c', limit: 2, serviceChecks: [{ id: 'db', namespace: 'ns1' }] }),
      a,
    )
  })

  it('should tell apart two calls with the same array whose content changed in between', () => {
    const serviceChecks = [{ id: 'web' }]
    const a = poolOf({ prefix: 'key/e', limit: 2, serviceChecks })
    assert.equal(poolOf({ prefix: 'key/e', limit: 2, serviceChecks }), a)
    serviceChecks[0] = { id: 'db' }
    assert.notEqual(poolOf({ prefix: 'key/e', limit: 2, serviceChecks }), a)
  })

  it('should find the pool of the options before last, whatever came in between', () => {
    const a = poolOf({ prefix: 'key/f', limit: 2 })
    const b = poolOf({ prefix: 'key/f', limit: 5 })
    assert.notEqual(b, a)
    assert.equal(poolOf({ limit: 2, prefix: 'key/f/' }), a)
    assert.equal(poolOf({ prefix: 'key/f', limit: 5 }), b)
  })

  it("should make the pool with the semaphore's options only, not the job's own", () => {
    const pool = slotPool(
      { prefix: 'key/g', limit: 2, waitTimeout: '5s' } as SemaphoreOptions,
      none,
    ) as unknown as { options: Record<string, unknown> }
    assert.deepEqual(pool.options, { prefix: 'key/g', limit: 2 })
  })

  it('should compare other objects by identity', () => {
    const a = poolOf({ prefix: 'key/d', limit: 2, scheduler: asyncScheduler })
    assert.equal(poolOf({ prefix: 'key/d', limit: 2, scheduler: asyncScheduler }), a)
    assert.notEqual(poolOf({ prefix: 'key/d', limit: 2, scheduler: queueScheduler }), a)
  })
})
