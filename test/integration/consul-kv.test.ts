// The KV calls of the Consul client against a real agent: get, list, put, delete, txn, with exact
// uint64 flags and indexes.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { SEMAPHORE_FLAGS } from '../../src/base/flags.js'
import { agentSuite } from '../support/agent-suite.js'
import { failure, ok, utf8 } from './consul-test-kit.js'
import { suiteScope, testPrefix } from '../support/tracked.js'

describe('Consul KV calls', () => {
  // Registered above agentSuite(), so the prefix goes before the client and the agent close.
  const suite = suiteScope()
  const agent = agentSuite({ env: {} })
  const prefix = testPrefix(suite, () => agent.url, 'consul-kv')

  it('gets null for a missing key', async () => {
    assert.equal(await ok(agent.client.kv.get(`${prefix}/missing`)), null)
  })

  it('puts a value and gets it back with its indexes', async () => {
    const key = `${prefix}/plain`
    assert.equal(await ok(agent.client.kv.put(key, 'hello')), true)
    const entry = await ok(agent.client.kv.get(key))
    assert.equal(entry?.key, key)
    assert.equal(utf8(entry?.value), 'hello')
    assert.equal(entry?.flags, 0n)
    assert.equal(entry?.lockIndex, 0n)
    assert.equal(entry?.session, undefined)
    assert.equal(typeof entry?.modifyIndex, 'bigint')
    assert.ok((entry?.createIndex ?? 0n) >= 1n)
  })

  it('stores an empty or null value as null, and bytes as bytes', async () => {
    await ok(agent.client.kv.put(`${prefix}/empty`, null))
    assert.equal((await ok(agent.client.kv.get(`${prefix}/empty`)))?.value, null)
    const bytes = new Uint8Array([0, 255, 10, 13, 128])
    await ok(agent.client.kv.put(`${prefix}/bytes`, bytes))
    assert.deepEqual((await ok(agent.client.kv.get(`${prefix}/bytes`)))?.value, bytes)
  })

  it('writes flags 16210313421097356768 and reads back exactly 16210313421097356768n, through get, list and txn', async () => {
    const key = `${prefix}/flags/semaphore`
    assert.equal(SEMAPHORE_FLAGS, 16210313421097356768n)
    assert.equal(await ok(agent.client.kv.put(key, 'x', { flags: 16210313421097356768n })), true)
    assert.equal((await ok(agent.client.kv.get(key)))?.flags, 16210313421097356768n)
    const listed = await ok(agent.client.kv.list(`${prefix}/flags/`))
    assert.equal(listed.entries[0]?.flags, 16210313421097356768n)
    const txn = await ok(agent.client.kv.txn([{ verb: 'get', key }]))
    assert.ok(txn.committed)
    assert.equal(txn.results[0]?.flags, 16210313421097356768n)

    // and written through a txn, the largest uint64 too
    const viaTxn = `${prefix}/flags/txn`
    const written = await ok(
      agent.client.kv.txn([
        { verb: 'set', key: viaTxn, value: null, flags: 18446744073709551615n },
      ]),
    )
    assert.ok(written.committed)
    assert.equal((await ok(agent.client.kv.get(viaTxn)))?.flags, 18446744073709551615n)
  })

  it('lists a prefix sorted by key, with the index of the answer', async () => {
    const dir = `${prefix}/list`
    await ok(agent.client.kv.put(`${dir}/b`, '2'))
    await ok(agent.client.kv.put(`${dir}/a`, '1'))
    const snapshot = await ok(agent.client.kv.list(`${dir}/`))
    assert.deepEqual(
      snapshot.entries.map((e) => e.key),
      [`${dir}/a`, `${dir}/b`],
    )
    const highest = snapshot.entries.reduce((m, e) => (e.modifyIndex > m ? e.modifyIndex : m), 0n)
    assert.equal(snapshot.index, highest)
  })

  it('lists an empty prefix as no entries with the index from the header', async () => {
    const snapshot = await ok(agent.client.kv.list(`${prefix}/nothing-here/`))
    assert.deepEqual(snapshot.entries, [])
    assert.ok(snapshot.index >= 1n)
  })

  it('answers cas with true or false, and cas=0 creates only', async () => {
    const key = `${prefix}/cas`
    assert.equal(await ok(agent.client.kv.put(key, 'v1', { cas: 0n })), true)
    assert.equal(await ok(agent.client.kv.put(key, 'v2', { cas: 0n })), false)
    const entry = await ok(agent.client.kv.get(key))
    assert.equal(
      await ok(agent.client.kv.put(key, 'v3', { cas: (entry?.modifyIndex ?? 0n) + 1000n })),
      false,
    )
    assert.equal(await ok(agent.client.kv.put(key, 'v3', { cas: entry?.modifyIndex ?? 0n })), true)
    assert.equal(utf8((await ok(agent.client.kv.get(key)))?.value), 'v3')
  })

  it('acquires and releases a key with a session', async () => {
    const key = `${prefix}/lock`
    const session = await ok(agent.client.session.create({ ttl: '15s', lockDelay: 0 }))
    try {
      assert.equal(await ok(agent.client.kv.put(key, 'me', { acquire: session, flags: 7n })), true)
      const held = await ok(agent.client.kv.get(key))
      assert.equal(held?.session, session)
      assert.equal(held?.lockIndex, 1n)
      const other = await ok(agent.client.session.create({ ttl: '15s', lockDelay: 0 }))
      try {
        assert.equal(await ok(agent.client.kv.put(key, 'them', { acquire: other })), false)
        assert.equal(await ok(agent.client.kv.put(key, 'them', { release: other })), false)
      } finally {
        await ok(agent.client.session.destroy(other))
      }
      assert.equal(await ok(agent.client.kv.put(key, 'me', { release: session, flags: 7n })), true)
      const released = await ok(agent.client.kv.get(key))
      assert.equal(released?.session, undefined)
      assert.equal(released?.flags, 7n)
    } finally {
      await ok(agent.client.session.destroy(session))
    }
  })

  it('deletes a key, with cas, and a tree with recurse', async () => {
    const key = `${prefix}/del/one`
    await ok(agent.client.kv.put(key, 'x'))
    const entry = await ok(agent.client.kv.get(key))
    assert.equal(
      await ok(agent.client.kv.delete(key, { cas: (entry?.modifyIndex ?? 0n) + 1000n })),
      false,
    )
    assert.equal(await ok(agent.client.kv.delete(key, { cas: entry?.modifyIndex ?? 0n })), true)
    assert.equal(await ok(agent.client.kv.get(key)), null)
    await ok(agent.client.kv.put(`${prefix}/del/tree/a`, 'x'))
    await ok(agent.client.kv.put(`${prefix}/del/tree/b/c`, 'x'))
    assert.equal(await ok(agent.client.kv.delete(`${prefix}/del/tree`, { recurse: true })), true)
    assert.deepEqual((await ok(agent.client.kv.list(`${prefix}/del/`))).entries, [])
  })

  it('encodes each key segment and keeps the slashes, for keys with spaces, %, ?, # and quotes', async () => {
    const key = `${prefix}/odd/a b%20c?d=e#f/"Flags":1,ü`
    assert.equal(await ok(agent.client.kv.put(key, 'odd', { flags: 3n })), true)
    const entry = await ok(agent.client.kv.get(key))
    assert.equal(entry?.key, key)
    assert.equal(entry?.flags, 3n)
    const listed = await ok(agent.client.kv.list(`${prefix}/odd/`))
    assert.deepEqual(
      listed.entries.map((e) => [e.key, e.flags]),
      [[key, 3n]],
    )
  })

  it('refuses a leading /, an empty segment and an empty key before sending anything', async () => {
    for (const key of ['/abs', `${prefix}//x`, '', `${prefix}/../x`]) {
      const error = await failure(agent.client.kv.put(key, 'x'))
      assert.equal(error._tag, 'BadRequest')
      assert.ok(
        error._tag === 'BadRequest' && error.rejectedBeforeSending === true && error.status === 0,
      )
    }
    const both = await failure(agent.client.kv.put(`${prefix}/x`, 'x', { cas: 0n, acquire: 'abc' }))
    assert.match(both.message, /at most one of cas, acquire, release/)
    const wipe = await failure(agent.client.kv.delete('', { recurse: true }))
    assert.match(wipe.message, /the key is empty/)
    const negative = await failure(agent.client.kv.put(`${prefix}/x`, 'x', { flags: -1n }))
    assert.match(negative.message, /flags -1 is not a uint64/)
    // index=0 never blocks: a caller sending it has lost track of the index.
    const zero = await failure(agent.client.kv.list(`${prefix}/`, { index: 0n, waitMs: 1000 }))
    assert.match(zero.message, /blocking index 0 is not in 1\.\.2\^64-1/)
  })

  it('commits a txn of several verbs, or rolls it back with the failed operation', async () => {
    const a = `${prefix}/txn/a`
    const b = `${prefix}/txn/b`
    const committed = await ok(
      agent.client.kv.txn([
        { verb: 'set', key: a, value: new TextEncoder().encode('A'), flags: 1n },
        { verb: 'cas', key: b, value: null, index: 0n },
        { verb: 'get', key: a },
      ]),
    )
    assert.ok(committed.committed)
    assert.deepEqual(
      committed.results.map((r) => [r.key, utf8(r.value)]),
      [
        [a, null],
        [b, null],
        [a, 'A'],
      ],
    )
    const entryA = committed.results[2]
    const rolledBack = await ok(
      agent.client.kv.txn([
        { verb: 'set', key: b, value: new TextEncoder().encode('never') },
        { verb: 'check-index', key: a, index: (entryA?.modifyIndex ?? 0n) + 1000n },
      ]),
    )
    assert.equal(rolledBack.committed, false)
    assert.ok(!rolledBack.committed)
    assert.equal(rolledBack.errors[0]?.opIndex, 1)
    assert.match(rolledBack.errors[0]?.what ?? '', /index/)
    assert.equal((await ok(agent.client.kv.get(b)))?.value, null, 'the set was rolled back')

    const deleted = await ok(
      agent.client.kv.txn([
        { verb: 'delete-cas', key: a, index: entryA?.modifyIndex ?? 0n },
        { verb: 'delete', key: b },
      ]),
    )
    assert.ok(deleted.committed)
    assert.deepEqual(deleted.results, [])
    assert.equal(await ok(agent.client.kv.get(a)), null)
  })

  it('applies the consistency modes on reads', async () => {
    const key = `${prefix}/consistency`
    await ok(agent.client.kv.put(key, 'c'))
    for (const consistency of ['consistent', 'stale', 'default'] as const) {
      assert.equal(utf8((await ok(agent.client.kv.get(key, { consistency })))?.value), 'c')
      assert.equal((await ok(agent.client.kv.list(key, { consistency }))).entries.length, 1)
    }
  })
})
