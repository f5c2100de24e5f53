// Many contenders in one process share one blocking query per prefix (the agent caps connections
// per client address at 200, and every long poll pins one).
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import {
  createConsulClient,
  semaphore,
  type ConsulClient,
  type Semaphore,
} from '../../src/index.js'
import { sharedAgent, uniquePrefix } from '../support/consul-agent.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import { deleteTree, eventually } from '../support/observe.js'

describe('semaphore at scale', () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  let proxy: FaultProxy
  let client: ConsulClient
  before(async () => {
    consul = await sharedAgent()
    proxy = await startFaultProxy(consul.addr)
    client = createConsulClient({ address: proxy.addr })
  })
  after(async () => {
    await client.close()
    await proxy.close()
    await consul.close()
  })

  it('runs 200 contenders of one prefix on one long poll', async () => {
    const prefix = uniquePrefix('two-hundred')
    const contenders: Semaphore[] = []
    const latest: { holding: boolean; contending: boolean }[] = []
    const subs = Array.from({ length: 200 }, (_, i) => {
      const sem = semaphore({ prefix, limit: 1, consul: client, value: `c${i}` })
      contenders.push(sem)
      latest.push({ holding: false, contending: false })
      return sem.state$.subscribe((s) => (latest[i] = s))
    })
    await eventually(
      'all 200 contending and one holding',
      () =>
        latest.every((s) => s.contending) && latest.filter((s) => s.holding).length === 1
          ? true
          : undefined,
      30_000,
    )
    // Quiet now: what is open at the agent is the one blocking query of the prefix.
    await new Promise((done) => setTimeout(done, 300))
    proxy.resetCounts()
    await new Promise((done) => setTimeout(done, 1000))
    const polls = proxy
      .requests()
      .filter((r) => r.method === 'GET' && r.path.startsWith(`/v1/kv/${prefix}`))
    assert.equal(proxy.inFlight(), 1, 'exactly one request (the long poll) is waiting at the agent')
    assert.ok(polls.length <= 1, `${polls.length} new polls in a quiet second`)
    assert.ok(proxy.openConnections() <= 16, `${proxy.openConnections()} connections (pool of 16)`)

    await Promise.all(contenders.map((c) => c.close()))
    subs.forEach((s) => s.unsubscribe())
    await deleteTree(consul.url, prefix)
  })
})
