// A job that starts during a Consul outage in a process whose client reached the agent before: it
// waits for the agent (bounded by its own waitTimeout or signal), not for the start-up timeout,
// and runs once the agent answers again.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createConsulClient, withSlot, type ConsulClient } from '../../src/index.js'
import { flushShelf } from '../../src/effects/session-shelf.js'
import { sharedAgent } from '../support/consul-agent.js'
import { testPrefix } from '../support/tracked.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import { eventually } from '../support/observe.js'

describe('withSlot through an outage', () => {
  let agent: Awaited<ReturnType<typeof sharedAgent>>
  let proxy: FaultProxy
  let client: ConsulClient
  before(async () => {
    agent = await sharedAgent()
    proxy = await startFaultProxy(agent.addr)
    client = createConsulClient({ address: proxy.addr, requestTimeoutMs: 1000 })
  })
  after(async () => {
    await client.close()
    await proxy.close()
    await agent.close()
  })

  it('lets a job queued during an outage longer than startupTimeout wait and run, once the client reached the agent', async (t) => {
    const prefix = testPrefix(t, agent.url, 'outage-job')
    const options = { prefix, limit: 1, consul: client, startupTimeout: '1s' }
    try {
      // The client reaches the agent: one job runs and ends, its worker gives the slot back.
      assert.equal(await withSlot(options, () => Promise.resolve('first')), 'first')
      await flushShelf(client)
      // The agent goes silent for three start-up timeouts; a job arrives meanwhile.
      proxy.setMode('blackhole')
      const answersBefore = proxy.requests().length
      let settled: string | undefined
      const second = withSlot(options, () => Promise.resolve('second')).then(
        (value) => (settled = value),
        (error: unknown) => (settled = `failed: ${String(error)}`),
      )
      // Its session requests are out and unanswered, three times over its start-up timeout.
      await eventually('three start-up timeouts of requests into the outage', () =>
        proxy.requests().length > answersBefore &&
        proxy.requests().at(-1)!.at - proxy.requests()[answersBefore]!.at > 3000
          ? true
          : undefined,
      )
      assert.equal(settled, undefined, 'the job settled during the outage')
      proxy.setMode('pass')
      await second
      assert.equal(settled, 'second')
    } finally {
      proxy.setMode('pass')
      await flushShelf(client)
    }
  })
})
