// The in-memory Consul double (test/support/consul-double.ts) in virtual time: its own controls
// (gates, injected failures, operator writes, expiry, the call log). The behaviour it shares with
// a real agent is proven by the scenario table, which runs here and in
// test/integration/consul-double-parity.test.ts.
import assert from 'node:assert/strict'
import { afterEach, beforeEach, describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import { VirtualTimeScheduler } from 'rxjs'
import { TestScheduler } from 'rxjs/testing'
import type { WatchEvent } from '../../src/base/kv-snapshot.js'
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

  it('lets a test answer a held call with an error, unapplied', async () => {
    const gate = double.hold('kv.put')
    const put = double.client.kv.put('p/k', 'x')()
    await gate.reached
    gate.fail(unreachable('PUT /v1/kv/'))
    const answer = await put
    assert.ok(E.isLeft(answer) && answer.left._tag === 'Unreachable')
    assert.deepEqual(double.entries('p/'), [])
  })

  it('answers Aborted to a held call or a blocking list whose caller aborts, or whose client closes; other clients go on', async () => {
    const caller = new AbortController()
    const gate = double.hold('kv.put')
    const held = double.client.kv.put('p/k', 'x', { signal: caller.signal })()
    await gate.reached
    caller.abort()
    assert.equal((await failure(() => held))._tag, 'Aborted')
    gate.release()
    const closing = double.connect('closing')
    const list = closing.kv.list('p/', { index: 99n, waitMs: 60_000 })()
    const stillHeld = double.hold('kv.put', { when: (call) => call.client === 'closing' })
    const put = closing.kv.put('p/k', 'x')()
    await stillHeld.reached
    await closing.close()
    for (const answer of [await list, await put]) {
      assert.ok(E.isLeft(answer) && answer.left._tag === 'Aborted')
      assert.match(answer.left.message, /the client is closed/)
    }
    assert.equal((await failure(closing.kv.get('p/k')))._tag, 'Aborted')
    assert.equal(await ok(double.client.kv.put('p/k', 'y')), true)
    assert.deepEqual(scheduler.actions, [], "the blocking list's timer is gone")
  })

  it('runs the TSDoc example: a held txn loses to the write that landed first', async () => {
    const stop = autoAdvance(scheduler)
    try {
      const a = double.client
      const b = double.connect('b')
      const gate = double.hold('kv.txn', { when: (call) => call.client === 'client' })
      const first = a.kv.txn([{ verb: 'cas', key: 'p/.lock', value: null, index: 0n }])()
      await gate.reached
      await ok(b.kv.put('p/.lock', 'b', { cas: 0n }))
      gate.release()
      const answer = await ok(() => first)
      assert.ok(!answer.committed)
      assert.match(answer.errors[0]?.what ?? '', /index is stale/)
    } finally {
      stop()
    }
  })

  it('feeds the real watch loop: a snapshot, disconnected on an injected failure, the snapshot again', async () => {
    double.put('p/a', 'x')
    const events: WatchEvent[] = []
    const subscription = double.client
      .watchPrefix('p/', { waitMs: 30_000, random: () => 0.5, backoff: { initialMs: 1_000 } })
      .subscribe((event) => events.push(event))
    await advanceBy(scheduler, 0)
    assert.deepEqual(
      events.map((e) => e.type),
      ['snapshot'],
    )
    double.fail('kv.list', unreachable('GET /v1/kv/p'))
    await advanceBy(scheduler, 30_000) // the long poll answers unchanged; the next one fails
    assert.deepEqual(
      events.map((e) => (e.type === 'disconnected' ? `d${e.attempt}:${e.retryInMs}` : e.type)),
      ['snapshot', 'd1:500'],
    )
    await advanceBy(scheduler, 500)
    assert.deepEqual(
      events.map((e) => e.type),
      ['snapshot', 'disconnected', 'snapshot'],
    )
    subscription.unsubscribe()
  })

  it('restarts empty with its index started over, which the watch emits as a reset', async () => {
    double.put('p/a', 'x')
    double.put('p/b', 'x')
    const events: WatchEvent[] = []
    const subscription = double.client
      .watchPrefix('p/', { random: () => 0 })
      .subscribe((event) => events.push(event))
    await advanceBy(scheduler, 0)
    const before = events[0]?.type === 'snapshot' ? events[0].snapshot.index : 0n
    double.restart()
    assert.deepEqual(double.sessions(), [])
    double.put('p/c', 'x')
    await advanceBy(scheduler, 100)
    const last = events.at(-1)
    assert.equal(last?.type, 'snapshot')
    assert.ok(last?.type === 'snapshot' && last.reset === true && last.snapshot.index < before)
    assert.deepEqual(
      last.snapshot.entries.map((e) => e.key),
      ['p/c'],
    )
    subscription.unsubscribe()
  })

  it('runs on a TestScheduler used outside run(), which is a VirtualTimeScheduler', async () => {
    const testScheduler = new TestScheduler((a, b) => assert.deepEqual(a, b))
    const onTest = createConsulDouble({ scheduler: testScheduler })
    try {
      await ok(onTest.client.session.create({ ttl: '10s' }))
      await advanceBy(testScheduler, 20_000)
      assert.deepEqual(onTest.sessions(), [])
    } finally {
      await onTest.close()
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
