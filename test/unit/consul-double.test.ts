// The in-memory Consul double (test/support/consul-double.ts) in virtual time: its own controls
// (gates, injected failures, operator writes, expiry, the call log). The behaviour it shares with
// a real agent is proven by the scenario table, which runs here and in
// test/integration/consul-double-parity.test.ts.
import assert from 'node:assert/strict'
import { afterEach, beforeEach, describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import { VirtualTimeScheduler } from 'rxjs'
import {
  advanceBy,
  autoAdvance,
  createConsulDouble,
  unreachable,
  type ConsulDouble,
} from '../support/consul-double.js'
import { CONSUL_SCENARIOS } from '../support/consul-scenarios.js'
import { failure, ok } from '../integration/consul-test-kit.js'

describe('the Consul double passes the shared scenario table, in virtual time', () => {
  for (const scenario of CONSUL_SCENARIOS) {
    it(scenario.name, { timeout: 20_000 }, async () => {
      const scheduler = new VirtualTimeScheduler()
      const double = createConsulDouble({ scheduler })
      const stop = autoAdvance(scheduler)
      try {
        await scenario.run(() => double.connect(), {
          prefix: 'rxsem-test/double',
          now: () => scheduler.now(),
        })
      } finally {
        stop()
        await double.close()
      }
      assert.deepEqual(scheduler.actions, [], 'closing the double left no timer scheduled')
    })
  }
})

describe('the Consul double: controls', () => {
  let scheduler: VirtualTimeScheduler
  let double: ConsulDouble
  beforeEach(() => {
    scheduler = new VirtualTimeScheduler()
    double = createConsulDouble({ scheduler })
  })
  afterEach(async () => {
    await double.close()
  })

  it('holds a write until the test releases it, so that another client writes first', async () => {
    const a = double.client
    const b = double.connect('b')
    const gate = double.hold('kv.put', { when: (call) => call.client === 'client' })
    const first = a.kv.put('p/.lock', 'a', { cas: 0n })()
    const held = await gate.reached
    assert.equal(held.args, 'p/.lock?cas=0')
    assert.equal(await ok(b.kv.put('p/.lock', 'b', { cas: 0n })), true)
    gate.release()
    assert.equal(await ok(() => first), false)
    assert.deepEqual(
      double.entries('p/').map((e) => Buffer.from(e.value ?? []).toString()),
      ['b'],
    )
  })

  it('answers an injected failure without applying the call, or after applying it', async () => {
    double.fail('kv.put', unreachable('PUT /v1/kv/'))
    assert.equal((await failure(double.client.kv.put('p/k', 'x')))._tag, 'Unreachable')
    assert.deepEqual(double.entries('p/'), [])
    double.fail('kv.put', unreachable('PUT /v1/kv/'), { applied: true })
    assert.equal((await failure(double.client.kv.put('p/k', 'x')))._tag, 'Unreachable')
    assert.equal(double.entries('p/').length, 1)
    assert.equal(await ok(double.client.kv.put('p/k', 'y')), true, 'only the next call fails')
  })

  it('expires a TTL session at twice its TTL on the scheduler, and on demand', async () => {
    const id = await ok(double.client.session.create({ ttl: '10s' }))
    await advanceBy(scheduler, 19_999)
    assert.equal(double.sessions().length, 1)
    await advanceBy(scheduler, 1)
    assert.equal(double.sessions().length, 0)
    const other = await ok(double.client.session.create({ ttl: '10s' }))
    assert.equal(double.expireSession(other), true)
    assert.equal(await ok(double.client.session.renew(other)), null)
    assert.equal(await ok(double.client.session.renew(id)), null)
  })

  it('answers a blocking list at the end of its wait in virtual time', async () => {
    const stop = autoAdvance(scheduler)
    try {
      await ok(double.client.kv.put('p/k', 'x'))
      const { index } = await ok(double.client.kv.list('p/'))
      const answer = await double.client.kv.list('p/', { index, waitMs: 30_000 })()
      assert.ok(E.isRight(answer))
      assert.equal(answer.right.index, index)
      assert.equal(scheduler.now(), 30_000)
    } finally {
      stop()
    }
  })

  it('logs every call with its client, method, summary and virtual time', async () => {
    await advanceBy(scheduler, 5)
    await ok(double.connect('b').kv.get('p/k'))
    assert.deepEqual(
      double.calls().map((c) => [c.client, c.method, c.args, c.at, c.answer]),
      [['b', 'kv.get', 'p/k', 5, 'ok']],
    )
  })
})
