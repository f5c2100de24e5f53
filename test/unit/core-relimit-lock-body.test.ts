import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import { LOCK_FLAGS } from '../../src/base/flags.js'
import { relimitLockBody } from '../../src/core/lock-body/relimit-lock-body.js'
import { lockEntry, text } from '../../marbles/support/snapshot.js'

const prefix = 'svc/jobs'
const key = `${prefix}/.lock`

describe('relimitLockBody', () => {
  it('should keep every holder (dead ones too) and the shape read, and CAS on the ModifyIndex', () => {
    const entry = lockEntry(prefix, '{"Limit":2,"Holders":["a","dead"]}', 40n)
    const write = relimitLockBody(entry, key, 3)
    assert.ok(E.isRight(write))
    assert.equal(text(write.right.body), '{"Limit":3,"Holders":["a","dead"]}')
    assert.deepEqual([write.right.cas, write.right.previous, write.right.holders], [40n, 2, 2])
  })

  it("should lower a limit under its holders without removing any (they finish; Go's shape kept)", () => {
    const entry = lockEntry(prefix, '{"Limit":3,"Holders":{"a":true,"b":true,"c":true}}', 41n)
    const write = relimitLockBody(entry, key, 1)
    assert.ok(E.isRight(write))
    assert.equal(text(write.right.body), '{"Limit":1,"Holders":{"a":true,"b":true,"c":true}}')
    assert.equal(write.right.holders, 3)
  })

  it('should create a .lock with no holders where there is none (cas 0)', () => {
    const write = relimitLockBody(undefined, key, 4)
    assert.ok(E.isRight(write))
    assert.equal(text(write.right.body), '{"Limit":4,"Holders":{}}')
    assert.deepEqual(
      [write.right.cas, write.right.previous, write.right.holders],
      [0n, undefined, 0],
    )
  })

  it('should never write over a .lock of another tool or one it cannot read', () => {
    const leader = lockEntry(prefix, 'node-a', 42n, { flags: LOCK_FLAGS })
    assert.deepEqual(
      E.mapLeft((p: { type: string }) => p.type)(relimitLockBody(leader, key, 2)),
      E.left('Conflict'),
    )
    const corrupt = lockEntry(prefix, '{"Limit":2,', 43n)
    assert.deepEqual(
      E.mapLeft((p: { type: string }) => p.type)(relimitLockBody(corrupt, key, 2)),
      E.left('CorruptLock'),
    )
  })

  it('should refuse a limit that is not a positive integer', () => {
    assert.throws(() => relimitLockBody(undefined, key, 0), RangeError)
    assert.throws(() => relimitLockBody(undefined, key, 1.5), RangeError)
  })
})
