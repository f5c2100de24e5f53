// Contenders' own keys taken at once on one client (src/effects/protocol/own-key-batch.ts), on the
// in-memory Consul double: which requests reach the agent, and what each caller is answered.
import assert from 'node:assert/strict'
import { afterEach, beforeEach, describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import { lastValueFrom } from 'rxjs'
import { HOLDER_FLAGS, SEMAPHORE_FLAGS } from '../../src/base/flags.js'
import type { ContenderAction } from '../../src/core/contender/contender-state-model.js'
import type { ConsulClient } from '../../src/consul/client-api.js'
import { takeKey, type OwnKey } from '../../src/effects/protocol/own-key-batch.js'
import { semaphorePerformer } from '../../src/effects/protocol/semaphore-performer.js'
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
    return { key: `${prefix}/${id}`, value: name, flags, session: id, mayExist: false }
  }
  const take = (write: OwnKey, signal = new AbortController().signal) =>
    takeKey(client, write)(signal)()
  const writes = () =>
    double
      .calls()
      .filter((c) => c.method === 'kv.put' || c.method === 'kv.txn')
      .map((c) => `${c.method} ${c.args}`)
  /** The keys a transaction wrote (each is checked absent, then locked). */
  const keysOf = (call: { readonly keys: readonly string[] } | undefined): string[] => [
    ...new Set(call?.keys ?? []),
  ]
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
      keysOf(sent[1]),
      [b, c, d].map((w) => (w as OwnKey).key),
    )
    for (const w of [a, b, c, d]) assert.equal(lockedBy((w as OwnKey).key), (w as OwnKey).session)
    assert.deepEqual(
      double.entries(`${prefix}/`).map((e) => e.flags),
      [flags, flags, flags, flags],
      'each key with its flags',
    )
  })

  it("gives a key whose lock the transaction refused the plain write's answer, and takes the others after", async () => {
    const [a, b, c, d] = await Promise.all(['a', 'b', 'c', 'd'].map(ownKey))
    // c's session is gone: its lock in the transaction fails.
    const gone = c as OwnKey
    assert.ok(E.isRight(await client.session.destroy(gone.session)()))
    const gate = double.hold('kv.put', { when: (call) => call.keys[0] === (a as OwnKey).key })
    const first = take(a as OwnKey)
    await gate.reached
    const rest = [b, c, d].map((w) => take(w as OwnKey))
    gate.release()
    const answers = await Promise.all([first, ...rest])
    assert.deepEqual([answers[0], answers[1], answers[3]], [true, true, true].map(E.right))
    const refused = answers[2]
    assert.ok(refused !== undefined && E.isLeft(refused), 'c: the plain write fails')
    assert.equal(refused.left._tag, 'ServerError')
    assert.match(refused.left.message, /invalid session/)
    assert.equal(lockedBy(gone.key), undefined, 'the refused key is not written')
    for (const w of [a, b, d]) assert.equal(lockedBy((w as OwnKey).key), (w as OwnKey).session)
    const txns = double.calls().filter((call) => call.method === 'kv.txn')
    assert.deepEqual(
      txns.map((call) => call.answer),
      ['rolled back', 'ok'],
      `the refused key out, the others again: ${writes().join(' | ')}`,
    )
    assert.deepEqual(
      keysOf(txns[1]),
      [b, d].map((w) => (w as OwnKey).key),
    )
    assert.deepEqual(
      double
        .calls()
        .filter((call) => call.method === 'kv.put' && call.keys[0] === gone.key)
        .map((call) => call.answer),
      ['ServerError'],
      'the refused key went again alone, as the plain write',
    )
  })

  it('leaves a key that may exist and does as it is, answered taken; writes it where it is absent', async () => {
    const [a, b, c] = await Promise.all(['a', 'b', 'c'].map(ownKey))
    const held = a as OwnKey
    assert.deepEqual(await take(held), E.right(true))
    // A release marks a's key as a holder's: a write of it that may meet it must not undo that.
    double.put(held.key, 'marked', { flags: 7n })
    const marked = double.entries(`${prefix}/`).find((e) => e.key === held.key)
    assert.deepEqual(await take({ ...held, mayExist: true }), E.right(true))
    assert.deepEqual(
      double.entries(`${prefix}/`).find((e) => e.key === held.key),
      marked,
      'left as it was',
    )
    // The same in a transaction with others: the key that exists is taken, the others written.
    const gate = double.hold('kv.txn')
    const first = take({ ...(b as OwnKey), mayExist: true })
    await gate.reached
    const rest = [{ ...held, mayExist: true }, c as OwnKey].map((w) => take(w))
    gate.release()
    assert.deepEqual(await Promise.all([first, ...rest]), [true, true, true].map(E.right))
    assert.deepEqual(
      double.entries(`${prefix}/`).find((e) => e.key === held.key),
      marked,
      'still as it was',
    )
    assert.equal(lockedBy((c as OwnKey).key), (c as OwnKey).session)
    assert.deepEqual(
      double
        .calls()
        .filter((call) => call.method === 'kv.put' || call.method === 'kv.txn')
        .map((call) => `${call.method} ${call.answer ?? ''}`),
      ['kv.put ok', 'kv.txn rolled back', 'kv.txn ok', 'kv.txn rolled back', 'kv.put ok'],
      `a, then a and b alone, then [a, c]: a found; c, a first write, alone: ${writes().join(' | ')}`,
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
      ['kv.put ok', `kv.txn ${refused._tag}`, 'kv.txn ok', 'kv.txn ok'],
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

  it('sends at most 64 operations in one transaction (a key that may exist takes two), the rest in the next', async () => {
    const keys = await Promise.all(Array.from({ length: 70 }, (_, i) => ownKey(`k${i}`)))
    const gate = double.hold('kv.put')
    const first = take(keys[0] as OwnKey)
    await gate.reached
    // Ten that may exist (two operations each), then first writes (one each).
    const rest = keys.slice(1).map((w, i) => take(i < 10 ? { ...w, mayExist: true } : w))
    gate.release()
    const answers = await Promise.all([first, ...rest])
    assert.ok(answers.every((answer) => E.isRight(answer) && answer.right))
    const sent = double
      .calls()
      .filter((call) => call.method === 'kv.put' || call.method === 'kv.txn')
    assert.deepEqual(
      sent.map((call) => `${call.method} ${keysOf(call).length}`),
      ['kv.put 1', 'kv.txn 54', 'kv.txn 15'],
    )
  })
})

describe("a session's own key, written by the semaphore's performer", () => {
  let double: ConsulDouble
  beforeEach(() => {
    double = createConsulDouble()
  })
  afterEach(async () => {
    await double.close()
  })

  const notContending = { type: 'NotContending' } as unknown as ContenderAction
  const keyWrites = () =>
    double
      .calls()
      .filter((c) => c.method === 'kv.put' || c.method === 'kv.txn')
      .map((c) => `${c.method} ${c.answer ?? ''}`)

  for (const keyMayExist of [false, true]) {
    it(`writes it plainly only the first time, and only for a session it created (keyMayExist ${keyMayExist}); never over a key marked meanwhile`, async () => {
      const created = await double.client.session.create({ name: 'w', ttl: '60s' })()
      assert.ok(E.isRight(created))
      const session = created.right
      const perform = semaphorePerformer({
        client: double.client,
        prefix,
        session,
        value: 'w',
        keyMayExist,
      })
      await lastValueFrom(perform(notContending), { defaultValue: undefined })
      // A release marks the key as a holder's; the contender, on a snapshot from before its
      // write, asks for its key again.
      const key = `${prefix}/${session}`
      double.put(key, 'w', { flags: HOLDER_FLAGS })
      const marked = double.entries(`${prefix}/`).find((e) => e.key === key)
      await lastValueFrom(perform(notContending), { defaultValue: undefined })
      assert.deepEqual(
        double.entries(`${prefix}/`).find((e) => e.key === key),
        marked,
        'the marked key is left as it was',
      )
      assert.deepEqual(keyWrites(), [keyMayExist ? 'kv.txn ok' : 'kv.put ok', 'kv.txn rolled back'])
    })
  }
})
