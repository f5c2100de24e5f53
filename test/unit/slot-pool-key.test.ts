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

  it('should compare other objects by identity', () => {
    const a = poolOf({ prefix: 'key/d', limit: 2, scheduler: asyncScheduler })
    assert.equal(poolOf({ prefix: 'key/d', limit: 2, scheduler: asyncScheduler }), a)
    assert.notEqual(poolOf({ prefix: 'key/d', limit: 2, scheduler: queueScheduler }), a)
  })
})
