import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { prefixView } from '../../src/core/semaphore/prefix-view.js'
import { refenceKept, refencing, type Refencing } from '../../src/core/semaphore/refencing.js'
import { HOLDER_FLAGS } from '../../src/base/flags.js'
import { contenderEntry, lockEntry, snapshotOf } from '../../marbles/support/snapshot.js'

const prefix = 'svc/lock'
const holder = (session: string, index: bigint) =>
  contenderEntry(prefix, session, 3n, { flags: HOLDER_FLAGS, modifyIndex: index })
const decidedOn = snapshotOf([
  holder('a', 10n),
  holder('me', 20n),
  lockEntry(prefix, '{"Limit":2,"Holders":{"a":true,"me":true}}', 20n),
])
/** The Refence `me` decides on `decidedOn` (nobody waits). */
const write = refencing(
  decidedOn,
  { prefix, session: 'me', limit: 2 },
  prefixView(decidedOn, { prefix, limit: 2 }),
) as Extract<Refencing, { type: 'Refence' }>

describe('refenceKept: whether a committed Refence kept the slot, from the .lock it read', () => {
  it('should keep it when .lock moved on (another holder handed its slot over) but still lists the holder at the same limit', () => {
    assert.equal(write.type, 'Refence')
    const movedOn = lockEntry(prefix, '{"Limit":2,"Holders":{"b":true,"me":true}}', 35n)
    assert.equal(refenceKept(write, 'me', movedOn), true)
  })

  it('should not keep it when .lock no longer lists the holder (pruned or evicted meanwhile)', () => {
    const without = lockEntry(prefix, '{"Limit":2,"Holders":{"a":true,"b":true}}', 35n)
    assert.equal(refenceKept(write, 'me', without), false)
  })

  it('should not keep it when the limit changed since the decision: the next snapshot decides', () => {
    const lowered = lockEntry(prefix, '{"Limit":1,"Holders":{"a":true,"me":true}}', 35n)
    assert.equal(refenceKept(write, 'me', lowered), false)
  })

  it('should not keep it when .lock is gone or cannot be read', () => {
    assert.equal(refenceKept(write, 'me', undefined), false)
    assert.equal(refenceKept(write, 'me', lockEntry(prefix, '{"Limit":2,"Holders":', 35n)), false)
    assert.equal(refenceKept(write, 'me', lockEntry(prefix, '', 35n)), false)
  })
})
