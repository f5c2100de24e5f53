import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { KVEntry } from '../../src/base/kv-snapshot.js'
import { DRAIN_VALUE, drainSessions } from '../../src/core/semaphore/drain-keys.js'
import { SEMAPHORE_FLAGS } from '../../src/base/flags.js'

const text = new TextEncoder()

const entry = (key: string, session: string | undefined, value: string | null): KVEntry => ({
  key,
  value: value === null ? null : text.encode(value),
  flags: SEMAPHORE_FLAGS,
  session,
  lockIndex: session === undefined ? 0n : 1n,
  createIndex: 5n,
  modifyIndex: 5n,
})

describe('drainSessions', () => {
  it('should name the sessions whose own contender key holds the drain value', () => {
    const entries = [
      entry('svc/jobs/.lock', undefined, '{"Limit":2,"Holders":{}}'),
      entry('svc/jobs/d1', 'd1', DRAIN_VALUE),
      entry('svc/jobs/d2', 'd2', DRAIN_VALUE),
      entry('svc/jobs/w1', 'w1', 'host-a:42'),
    ]
    assert.deepEqual(drainSessions(entries, 'svc/jobs'), ['d1', 'd2'])
  })

  it('should not take a key for a drain unless its own session locks it, directly under the prefix', () => {
    const entries = [
      entry('svc/jobs/x1', 'other', DRAIN_VALUE),
      entry('svc/jobs/x2', undefined, DRAIN_VALUE),
      entry('svc/jobs/deep/x3', 'x3', DRAIN_VALUE),
      entry('svc/jobs/x4', 'x4', `${DRAIN_VALUE} `),
      entry('svc/jobs/x5', 'x5', null),
      entry('svc/jobsx/x6', 'x6', DRAIN_VALUE),
    ]
    assert.deepEqual(drainSessions(entries, 'svc/jobs'), [])
  })
})
