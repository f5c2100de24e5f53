// Contenders' own keys taken at once on one client (src/effects/protocol/own-key-batch.ts), on the
// in-memory Consul double: which requests reach the agent, and what each caller is answered.
import assert from 'node:assert/strict'
import { afterEach, beforeEach, describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import { SEMAPHORE_FLAGS } from '../../src/base/flags.js'
import type { ConsulClient } from '../../src/consul/client-api.js'
import { takeKey, type OwnKey } from '../../src/effects/protocol/own-key-batch.js'
import {
  createConsulDouble,
  httpFailure,
  unreachable,
  type ConsulDouble,
} from '../support/consul-double.js'

const prefix = 'svc/batched'
const flags = BigInt(SEMAPHORE_FLAGS) + 1n

describe('own keys taken at once on one client', () => {
  let double: ConsulDouble
  let client: ConsulClient
  beforeEach(() => {
    double = createConsulDouble()
    client = double.client
  })
  afterEach(async () => {
    await double.close()
  })

  const session = async (name: string): Promise<string> => {
    const created = await client.session.create({ name, ttl: '60s' })()
    assert.ok(E.isRight(created))
    return created.right
  }
  const ownKey = async (name: string): Promise<OwnKey> => {
    const id = await session(name)
    return { key: `${prefix}/${id}`, value: name, flags, session: id }
  }
  const take = (write: OwnKey, signal = new AbortController().signal) =>
    takeKey(client, write)(signal)()
  const writes = () =>
    double
      .calls()
      .filter((c) => c.method === 'kv.put' || c.method === 'kv.txn')
      .map((c) => `${c.method} ${c.args}`)
  const lockedBy = (key: string): string | undefined =>
    double.entries(`${prefix}/`).find((e) => e.key === key)?.session

  it('sends a key asked for while none is in flight at once, as a plain ?acquire= write', async () => {
    const a = await ownKey('a')
    assert.deepEqual(await take(a), E.right(true))
    assert.deepEqual(
      double
        .calls()
        .filter((c) => c.method === 'kv.put' || c.method === 'kv.txn')
        .map((c) => c.method),
      ['kv.put'],
    )
    assert.equal(lockedBy(a.key), a.session)
  })

  it('sends the keys asked for while one is in flight in one transaction, each answered true', async () => {
    const [a, b, c, d] = await Promise.all(['a', 'b', 'c', 'd'].map(ownKey))
    const gate = double.hold('kv.put')
    const first = take(a as OwnKey)
    await gate.reached
    const rest = [b, c, d].map((w) => take(w as OwnKey))
    gate.release()
    assert.deepEqual(await Promise.all([first, ...rest]), [true, true, true, true].map(E.right))
    const sent = double
      .calls()
      .filter((call) => call.method === 'kv.put' || call.method === 'kv.txn')
    assert.deepEqual(
      sent.map((call) => call.method),
      ['kv.put', 'kv.txn'],
      `one write, then one transaction: ${writes().join(' | ')}`,
    )
    assert.deepEqual(
      sent[1]?.keys,
      [b, c, d].map((w) => (w as OwnKey).key),
    )
    for (const w of [a, b, c, d]) assert.equal(lockedBy((w as OwnKey).key), (w as OwnKey).session)
    assert.deepEqual(
      double.entries(`${prefix}/`).map((e) => e.flags),
      [flags, flags, flags, flags],
      'each key with its flags',
    )
  })

  it('answers false for a key Consul refuses in the transaction, and takes the others after', async () => {
    const [a, b, c, d] = await Promise.all(['a', 'b', 'c', 'd'].map(ownKey))
    // c's key is another session's already: its lock in the transaction fails.
    const thief = await session('thief')
    const stolen = c as OwnKey
    assert.deepEqual(await client.kv.put(stolen.key, 'thief', { acquire: thief })(), E.right(true))
    const gate = double.hold('kv.put', { when: (call) => call.keys[0] === (a as OwnKey).key })
    const first = take(a as OwnKey)
    await gate.reached
    const rest = [b, c, d].map((w) => take(w as OwnKey))
    gate.release()
    assert.deepEqual(await Promise.all([first, ...rest]), [true, true, false, true].map(E.right))
    assert.equal(lockedBy(stolen.key), thief, 'the refused key is left as it was')
    for (const w of [a, b, d]) assert.equal(lockedBy((w as OwnKey).key), (w as OwnKey).session)
    const txns = double.calls().filter((call) => call.method === 'kv.txn')
    assert.deepEqual(
      txns.map((call) => call.answer),
      ['rolled back', 'ok'],
      `the refused key out, the others again: ${writes().join(' | ')}`,
    )
    assert.deepEqual(
      txns[1]?.keys,
      [b, d].map((w) => (w as OwnKey).key),
    )
    assert.deepEqual(
      double
        .calls()
        .filter((call) => call.method === 'kv.put' && call.keys[0] === stolen.key)
        .map((call) => call.answer),
      ['ok', 'false'],
      "the thief's write, then the refused key again alone, as a plain write: its caller's answer",
    )
  })

  it('sends each key of a transaction refused as a whole for another reason than a transient one alone', async () => {
    const [a, b, c] = await Promise.all(['a', 'b', 'c'].map(ownKey))
    const gate = double.hold('kv.put')
    const first = take(a as OwnKey)
    await gate.reached
    const refused = httpFailure(413, 'Request body too large')
    double.fail('kv.txn', refused)
    const rest = [b, c].map((w) => take(w as OwnKey))
    gate.release()
    assert.deepEqual(await Promise.all([first, ...rest]), [true, true, true].map(E.right))
    assert.deepEqual(
      double
        .calls()
        .filter((call) => call.method === 'kv.put' || call.method === 'kv.txn')
        .map((call) => `${call.method} ${call.answer ?? ''}`),
      ['kv.put ok', `kv.txn ${refused._tag}`, 'kv.put ok', 'kv.put ok'],
    )
  })

  it("gives every key of a transaction that failed the request's error, unwritten", async () => {
    const [a, b, c] = await Promise.all(['a', 'b', 'c'].map(ownKey))
    const gate = double.hold('kv.put')
    const first = take(a as OwnKey)
    await gate.reached
    double.fail('kv.txn', unreachable('PUT /v1/txn'))
    const rest = [b, c].map((w) => take(w as OwnKey))
    gate.release()
    assert.deepEqual(await first, E.right(true))
    const answers = await Promise.all(rest)
    for (const answer of answers) {
      assert.ok(E.isLeft(answer))
      assert.equal(answer.left._tag, 'Unreachable')
    }
    assert.equal(lockedBy((b as OwnKey).key), undefined)
    assert.equal(lockedBy((c as OwnKey).key), undefined)
  })

  it('does not write the key of a caller that gave up while it waited', async () => {
    const [a, b, c] = await Promise.all(['a', 'b', 'c'].map(ownKey))
    const gate = double.hold('kv.put')
    const first = take(a as OwnKey)
    await gate.reached
    const gaveUp = new AbortController()
    void take(b as OwnKey, gaveUp.signal)
    const kept = take(c as OwnKey)
    gaveUp.abort()
    gate.release()
    assert.deepEqual(await Promise.all([first, kept]), [true, true].map(E.right))
    assert.equal(lockedBy((b as OwnKey).key), undefined, 'the key of the one that gave up')
    assert.equal(lockedBy((c as OwnKey).key), (c as OwnKey).session)
    assert.deepEqual(
      double
        .calls()
        .filter((call) => call.method === 'kv.put')
        .map((call) => call.keys[0]),
      [(a as OwnKey).key, (c as OwnKey).key],
      'c alone, as a plain write',
    )
  })

  it('sends at most 64 keys in one transaction, the rest in the next', async () => {
    const keys = await Promise.all(Array.from({ length: 70 }, (_, i) => ownKey(`k${i}`)))
    const gate = double.hold('kv.put')
    const first = take(keys[0] as OwnKey)
    await gate.reached
    const rest = keys.slice(1).map((w) => take(w))
    gate.release()
    const answers = await Promise.all([first, ...rest])
    assert.ok(answers.every((answer) => E.isRight(answer) && answer.right))
    const sent = double
      .calls()
      .filter((call) => call.method === 'kv.put' || call.method === 'kv.txn')
    assert.deepEqual(
      sent.map((call) => `${call.method} ${call.keys.length}`),
      ['kv.put 1', 'kv.txn 64', 'kv.txn 5'],
    )
  })
})
