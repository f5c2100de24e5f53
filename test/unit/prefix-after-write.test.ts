// prefixAfterWrite: the prefix as a transaction of one write and a `get-tree` read it.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import type { KVEntry } from '../../src/base/kv-snapshot.js'
import type { ConsulError } from '../../src/base/consul-error.js'
import { prefixAfterWrite } from '../../src/effects/protocol/prefix-after-write.js'

const entry = (key: string, modifyIndex: bigint, value: string | null = 'v'): KVEntry => ({
  key,
  value: value === null ? null : new TextEncoder().encode(value),
  flags: 0n,
  session: undefined,
  lockIndex: 0n,
  createIndex: 1n,
  modifyIndex,
})

describe('prefixAfterWrite', () => {
  it('reads the tree after the write, at the index of the write (the largest ModifyIndex)', () => {
    // lock of .lock (its value left out), then the tree: .lock again, a waiter key, an older key.
    const results = [
      entry('svc/.lock', 42n, null),
      entry('svc/.lock', 42n),
      entry('svc/.queue/b', 40n),
      entry('svc/other', 7n),
    ]
    const seen = prefixAfterWrite({ committed: true, results })
    assert.deepEqual(seen, { index: 42n, entries: results.slice(1) })
    assert.deepEqual(prefixAfterWrite(E.right({ committed: true, results })), seen)
  })

  it('reads nothing from a rollback, a failure, or a tree that came back empty', () => {
    const rolledBack = { committed: false as const, errors: [{ opIndex: 0, what: 'lock is held' }] }
    assert.equal(prefixAfterWrite(rolledBack), undefined)
    const timeout: ConsulError = {
      _tag: 'Timeout',
      message: 'no answer within 10000 ms',
      timeoutMs: 10_000,
    }
    assert.equal(prefixAfterWrite(E.left(timeout)), undefined)
    assert.equal(
      prefixAfterWrite({ committed: true, results: [entry('svc/.lock', 3n, null)] }),
      undefined,
    )
  })
})
