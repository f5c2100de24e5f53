import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { LOCK_FLAGS, SEMAPHORE_FLAGS } from '../../src/base/flags.js'
import {
  decideLeaderKey,
  leaderKeyDecider,
  readLeaderKey,
} from '../../src/core/leader-key/decide-leader-key.js'
import { expectType } from '../support/expect-decision.js'
import { bytes, lockEntry, snapshotOf, text } from '../../marbles/support/snapshot.js'

const prefix = 'svc/leader'
const options = { prefix, session: 'me', value: 'node-a' }

/** `<prefix>/.lock` as Go's Lock writes it: LOCK_FLAGS, held by `session` (or free). */
const lockKeyEntry = (session: string | undefined, modifyIndex: bigint, value = 'v') =>
  lockEntry(prefix, value, modifyIndex, { flags: LOCK_FLAGS, session, lockIndex: 1n })

describe('decideLeaderKey', () => {
  it('should try to acquire a missing key with its value, cas 0 and an empty view', () => {
    const d = expectType(decideLeaderKey(snapshotOf([]), options), 'TryAcquire')
    assert.equal(text(d.body), 'node-a')
    assert.equal(d.cas, 0n)
    assert.deepEqual(d.view, {
      limit: 1,
      shape: undefined,
      lockIndex: 0n,
      liveHolders: [],
      deadHolders: [],
      waiting: [],
      sharedHolders: [],
      nextTurn: undefined,
    })
  })

  it('should try to acquire a free key, carrying its ModifyIndex as cas', () => {
    const d = expectType(
      decideLeaderKey(snapshotOf([lockKeyEntry(undefined, 42n)]), options),
      'TryAcquire',
    )
    assert.equal(d.cas, 42n)
    assert.equal(d.view.lockIndex, 42n)
    assert.deepEqual(d.view.liveHolders, [])
  })

  it('should write byte values as they are', () => {
    const value = new Uint8Array([0xff, 0x00, 0x41])
    const d = expectType(decideLeaderKey(snapshotOf([]), { ...options, value }), 'TryAcquire')
    assert.deepEqual(d.body, value)
  })

  it('should hold when the key names its session', () => {
    const d = expectType(decideLeaderKey(snapshotOf([lockKeyEntry('me', 50n)]), options), 'Held')
    assert.deepEqual(d.view.liveHolders, ['me'])
    assert.equal(d.view.lockIndex, 50n)
  })

  it('should wait, with no rank and no free slot, when another session holds the key', () => {
    const d = expectType(decideLeaderKey(snapshotOf([lockKeyEntry('other', 50n)]), options), 'Wait')
    assert.equal(d.rank, undefined)
    assert.equal(d.freeSlots, 0)
    assert.deepEqual(d.view.liveHolders, ['other'])
  })

  it("should report a Conflict on a semaphore's .lock", () => {
    const semaphoreLock = lockEntry(prefix, '{"Limit":3,"Holders":{}}', 9n, {
      flags: SEMAPHORE_FLAGS,
    })
    const d = expectType(decideLeaderKey(snapshotOf([semaphoreLock]), options), 'Conflict')
    assert.equal(d.key, `${prefix}/.lock`)
    assert.equal(d.flags, SEMAPHORE_FLAGS)
  })

  it('should report a Conflict on a key without flags, as Go refuses it, even when free', () => {
    const byHand = lockEntry(prefix, 'x', 9n, { flags: 0n })
    expectType(decideLeaderKey(snapshotOf([byHand]), options), 'Conflict')
  })

  it('should report a Conflict on a key without flags held by its own session', () => {
    const byHand = lockEntry(prefix, 'x', 9n, { flags: 0n, session: 'me' })
    expectType(decideLeaderKey(snapshotOf([byHand]), options), 'Conflict')
  })

  it('should ignore other keys under the prefix (never NotContending)', () => {
    const other = lockEntry(prefix, 'x', 3n, { key: `${prefix}/me`, flags: 0n, session: 'me' })
    expectType(decideLeaderKey(snapshotOf([other]), options), 'TryAcquire')
  })

  it('should ignore the semaphore options when used as the decide step', () => {
    const step = leaderKeyDecider('node-a')
    const d = step(snapshotOf([]), { prefix, session: 'me', limit: 7, fairness: true })
    assert.equal(expectType(d, 'TryAcquire').view.limit, 1)
  })
})

describe('readLeaderKey', () => {
  it('should name nobody for a missing key', () => {
    assert.equal(readLeaderKey(snapshotOf([]), prefix), null)
  })

  it('should name nobody for a free key', () => {
    assert.equal(readLeaderKey(snapshotOf([lockKeyEntry(undefined, 4n)]), prefix), null)
  })

  it('should name the session and the UTF-8 value of a held key', () => {
    assert.deepEqual(readLeaderKey(snapshotOf([lockKeyEntry('a', 4n, 'nœud-a')]), prefix), {
      session: 'a',
      value: 'nœud-a',
    })
  })

  it('should give a null value for an empty value, as `consul lock` writes it', () => {
    const entry = lockEntry(prefix, null, 4n, { flags: LOCK_FLAGS, session: 'a' })
    assert.deepEqual(readLeaderKey(snapshotOf([entry]), prefix), { session: 'a', value: null })
  })

  it('should give a null value for bytes that are not UTF-8', () => {
    const entry = { ...lockKeyEntry('a', 4n), value: new Uint8Array([0xff, 0xfe]) }
    assert.deepEqual(readLeaderKey(snapshotOf([entry]), prefix), { session: 'a', value: null })
  })

  it('should name nobody for a held key that is not a lock', () => {
    const entry = lockEntry(prefix, 'x', 4n, { flags: 0n, session: 'a', value: bytes('x') })
    assert.equal(readLeaderKey(snapshotOf([entry]), prefix), null)
  })
})
