// Whom an operator's raise of the limit wakes (`waitersToWake`): the waiters it admits, in line
// order, that are this library's contenders of one permit.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { CONTENDER_FLAGS, HOLDER_FLAGS } from '../../src/base/flags.js'
import { waitersToWake } from '../../src/core/semaphore/wake-waiters.js'
import { contenderEntry, lockEntry, snapshotOf } from '../../marbles/support/snapshot.js'

const prefix = 'svc/jobs'
const ours = (session: string, createIndex: bigint) =>
  contenderEntry(prefix, session, createIndex, { flags: CONTENDER_FLAGS })
const go = (session: string, createIndex: bigint) => contenderEntry(prefix, session, createIndex)
const queue = snapshotOf([
  lockEntry(prefix, '{"Limit":2,"Holders":{"h1":true,"h2":true}}', 50n),
  contenderEntry(prefix, 'h1', 1n, { flags: HOLDER_FLAGS }),
  contenderEntry(prefix, 'h2', 2n, { flags: HOLDER_FLAGS }),
  ours('w0', 10n),
  go('g1', 11n),
  ours('w2', 12n),
  ours('w3', 13n),
])
const woken = (limit: number) =>
  waitersToWake(queue, prefix, limit).map((e) => e.key.slice(prefix.length + 1))

describe('waitersToWake', () => {
  it('wakes the waiters of ours the new limit admits, in line order, and not a Go waiter', () => {
    assert.deepEqual(woken(4), ['w0'], 'w0 and g1 admitted; g1 watches the prefix itself')
    assert.deepEqual(woken(5), ['w0', 'w2'])
    assert.deepEqual(woken(9), ['w0', 'w2', 'w3'])
  })

  it('wakes none when the limit admits no one', () => {
    assert.deepEqual(woken(2), [])
    assert.deepEqual(woken(1), [], 'a lowering')
  })
})
