// What a revoke key says, and who it names: its value read leniently (the key's presence is the
// request), the holder it names found by the prefix's view only for a key right under
// `<prefix>/.lock.revoke/`, and a holder's decision carrying it.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import type { KVEntry } from '../../src/base/kv-snapshot.js'
import { SEMAPHORE_FLAGS } from '../../src/base/flags.js'
import { revokeKey } from '../../src/core/keys/revoke-key.js'
import {
  encodeRevokeRequest,
  readRevokeRequest,
  sameRevokeRequest,
} from '../../src/core/revoke/revoke-request.js'
import { decide } from '../../src/core/semaphore/decide.js'
import { prefixView } from '../../src/core/semaphore/prefix-view.js'

const utf8 = new TextEncoder()

const entry = (key: string, value: string | Uint8Array | null, session?: string): KVEntry => ({
  key,
  value: typeof value === 'string' ? utf8.encode(value) : value,
  flags: 0n,
  session,
  lockIndex: session === undefined ? 0n : 1n,
  createIndex: 5n,
  modifyIndex: 5n,
})

const prefix = 'svc/jobs'
const snapshot = (...extra: KVEntry[]) => ({
  index: 9n,
  entries: [
    {
      ...entry(`${prefix}/.lock`, JSON.stringify({ Limit: 2, Holders: { a: true, b: true } })),
      flags: SEMAPHORE_FLAGS,
    },
    { ...entry(`${prefix}/a`, null, 'a'), flags: SEMAPHORE_FLAGS },
    { ...entry(`${prefix}/b`, null, 'b'), flags: SEMAPHORE_FLAGS },
    ...extra,
  ].sort((x, y) => (x.key < y.key ? -1 : 1)),
})

describe('revoke requests', () => {
  it('names its key under <prefix>/.lock.revoke/, joined as Go joins keys', () => {
    assert.equal(revokeKey('svc/jobs/', 'a'), 'svc/jobs/.lock.revoke/a')
    assert.equal(revokeKey('svc//jobs', 'a'), 'svc/jobs/.lock.revoke/a')
  })

  it('reads back what it wrote: the grace and the reason', () => {
    const written = encodeRevokeRequest({ graceMs: 30_000, reason: 'deploy' })
    assert.deepEqual(readRevokeRequest(entry('k', written)), { graceMs: 30_000, reason: 'deploy' })
    const bare = encodeRevokeRequest({ graceMs: undefined, reason: undefined })
    assert.equal(new TextDecoder().decode(bare), '{}')
    assert.deepEqual(readRevokeRequest(entry('k', bare)), { graceMs: undefined, reason: undefined })
  })

  it('takes any value as a request with no details: empty, not JSON, not UTF-8, wrong types, a negative grace', () => {
    for (const value of [
      null,
      '',
      'please',
      '[1]',
      '{"graceMs":"30s","reason":7}',
      '{"graceMs":-1}',
      new Uint8Array([0xff, 0xfe]),
    ]) {
      assert.deepEqual(
        readRevokeRequest(entry('k', value)),
        { graceMs: undefined, reason: undefined },
        `value ${String(value)}`,
      )
    }
  })

  it('gives the same object for the same entry, so that a state that did not change is not new', () => {
    const same = entry('k', encodeRevokeRequest({ graceMs: 1000, reason: 'x' }))
    assert.equal(readRevokeRequest(same), readRevokeRequest(same))
    assert.ok(sameRevokeRequest({ graceMs: 1, reason: 'x' }, { graceMs: 1, reason: 'x' }))
    assert.ok(!sameRevokeRequest({ graceMs: 1, reason: 'x' }, { graceMs: 2, reason: 'x' }))
    assert.ok(!sameRevokeRequest({ graceMs: undefined, reason: undefined }, undefined))
    assert.ok(sameRevokeRequest(undefined, undefined))
  })

  it('finds in a prefix’s view only the keys right under <prefix>/.lock.revoke/, locked or not', () => {
    const view = prefixView(
      snapshot(
        entry(`${prefix}/.lock.revoke/a`, '{}', 'evictor'),
        entry(`${prefix}/.lock.revoke/b`, '{}'),
        entry(`${prefix}/.lock.revoke/c/deeper`, '{}', 'evictor'),
        entry(`${prefix}/.lock.revoked/c`, '{}', 'evictor'),
        entry(`svc/jobs2/.lock.revoke/c`, '{}', 'evictor'),
      ),
      { prefix, limit: 2 },
    )
    assert.ok(E.isRight(view))
    assert.deepEqual([...view.right.revokes.keys()].sort(), ['a', 'b'])
    // The requests are not contenders: the holders and the queue are as without them.
    assert.deepEqual(view.right.view.liveHolders, ['a', 'b'])
    assert.deepEqual(view.right.view.waiting, [])
  })

  it('puts the request on the decision of the holder it names, and on no other', () => {
    const asked = snapshot(
      entry(`${prefix}/.lock.revoke/a`, encodeRevokeRequest({ graceMs: 5000, reason: 'r' }), 'e'),
    )
    const a = decide(asked, { prefix, session: 'a', limit: 2 })
    const b = decide(asked, { prefix, session: 'b', limit: 2 })
    assert.equal(a.type, 'Held')
    assert.deepEqual(a.type === 'Held' ? a.revokeRequested : 'not held', {
      graceMs: 5000,
      reason: 'r',
    })
    assert.equal(b.type === 'Held' ? b.revokeRequested : 'not held', undefined)
    assert.ok(!('revokeRequested' in b), 'absent rather than undefined on a holder nobody asked')
  })
})
