// watchPrefix across index resets on an agent of its own: a restart (a dev agent comes back
// empty, so the index goes backwards) and a snapshot restore (the index goes backwards under a
// blocking query, without any disconnect).
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createConsulClient, type ConsulHttpClient } from '../../src/consul/client.js'
import { startAgent, type ConsulAgent } from '../support/consul-agent.js'
import { testPrefix } from '../support/tracked.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import { keysOf, ok, record, until } from './consul-test-kit.js'

describe('watchPrefix when the index goes backwards', () => {
  let agent: ConsulAgent
  let proxy: FaultProxy
  let consul: ConsulHttpClient
  before(async () => {
    agent = await startAgent()
    proxy = await startFaultProxy(agent.addr)
    // A request timeout well above what a loaded machine adds to an answer: the restore test
    // asserts no disconnect at all, and a restart breaks the connections without waiting for it.
    consul = createConsulClient({ address: proxy.addr, env: {}, requestTimeoutMs: 5000 })
  })
  after(async () => {
    await consul.close()
    await proxy.close()
    await agent.stop()
  })

  it('carries on across an agent restart with correct snapshots, and sees a key written after it', async (t) => {
    const prefix = testPrefix(t, agent.url, 'consul-restart')
    // Enough writes that the fresh agent's index after one write stays below this one's.
    for (let i = 0; i < 10; i++) await ok(consul.kv.put(`${prefix}/before`, `x${i}`))
    const watch = record(
      consul.watchPrefix(`${prefix}/`, { waitMs: 2000, backoff: { initialMs: 50, maxMs: 200 } }),
    )
    try {
      await until(() => watch.snapshots().length === 1, 'the first snapshot')
      assert.deepEqual(keysOf(watch.snapshots()[0]), [`${prefix}/before`])
      const indexBefore = watch.snapshots()[0]?.index ?? 0n

      await agent.restart()
      await until(() => watch.disconnects().length > 0, 'a disconnect during the restart')
      await until(
        () => keysOf(watch.snapshots().at(-1)).length === 0 && watch.snapshots().length >= 2,
        'the empty snapshot of the restarted agent',
        10_000,
      )
      await ok(consul.kv.put(`${prefix}/after`, 'y'))
      await until(
        () => keysOf(watch.snapshots().at(-1)).join() === `${prefix}/after`,
        'the key written after the restart',
      )
      const last = watch.snapshots().at(-1)
      assert.ok(
        (last?.index ?? 0n) < indexBefore,
        `index ${last?.index} went back from ${indexBefore}`,
      )
      assert.equal(watch.error(), undefined)
      // After a disconnect the next answer is emitted: every disconnect run ends in a snapshot.
      const types = watch.events.map((e) => e.type)
      assert.equal(types.at(-1), 'snapshot')
      assert.equal(types[0], 'snapshot')
    } finally {
      watch.subscription.unsubscribe()
      await ok(consul.kv.delete(prefix, { recurse: true }))
    }
  })

  it('resets to a non-blocking read and emits it when a snapshot restore moves the index back', async (t) => {
    const prefix = testPrefix(t, agent.url, 'consul-restore')
    await ok(consul.kv.put(`${prefix}/kept`, 'x'))
    const saved = await fetch(`${agent.url}/v1/snapshot`)
    assert.equal(saved.status, 200)
    const snapshot = Buffer.from(await saved.arrayBuffer())
    await ok(consul.kv.put(`${prefix}/lost-1`, 'x'))
    await ok(consul.kv.put(`${prefix}/lost-2`, 'x'))

    const watch = record(consul.watchPrefix(`${prefix}/`, { waitMs: 500 }))
    try {
      await until(() => watch.snapshots().length === 1, 'the first snapshot')
      const high = watch.snapshots()[0]?.index ?? 0n
      assert.equal(keysOf(watch.snapshots()[0]).length, 3)
      proxy.resetCounts()

      const restored = await fetch(`${agent.url}/v1/snapshot`, { method: 'PUT', body: snapshot })
      await restored.arrayBuffer()
      assert.equal(restored.status, 200)

      await until(() => watch.snapshots().length === 2, 'the snapshot after the restore', 5000)
      const after = watch.snapshots()[1]
      assert.deepEqual(keysOf(after), [`${prefix}/kept`])
      assert.ok((after?.index ?? high) < high)
      assert.deepEqual(watch.disconnects(), [], 'no disconnect: the index just went back')
      const queries = proxy.requests().map((r) => r.query)
      // Consistent: a leader elected a moment ago could answer a default read from an old state.
      const reset = queries.indexOf('recurse&consistent')
      assert.ok(reset > 0, `a non-blocking re-read after the blocking poll: ${queries.join(' | ')}`)
      assert.ok(queries.slice(0, reset).every((q) => q.includes(`index=${high}`)))
    } finally {
      watch.subscription.unsubscribe()
      await ok(consul.kv.delete(prefix, { recurse: true }))
    }
  })
})
