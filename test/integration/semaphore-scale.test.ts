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
import { sharedAgent } from '../support/consul-agent.js'
import { testPrefix } from '../support/tracked.js'
import { longPollsOn } from '../support/default-client-child.js'
import { startFaultProxy, type FaultProxy, type SeenRequest } from '../support/fault-proxy.js'
import { eventually } from '../support/observe.js'

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

  it('runs 200 contenders of one prefix on one long poll', async (t) => {
    const prefix = testPrefix(t, consul.url, 'two-hundred')
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
    // The prefix's reads (session renewals, 200 every 7.5 s, come and go beside them).
    const ofPrefix = (requests: readonly SeenRequest[]) =>
      requests.filter(
        (r) => r.method === 'GET' && decodeURIComponent(r.path).startsWith(`/v1/kv/${prefix}`),
      )
    // Quiet now (waited for, not assumed after 300 ms): the one blocking query of the prefix is
    // waiting at the agent, and no read of the prefix came for 300 ms.
    await eventually(
      'one long poll of the prefix and 300 ms without another read',
      () => {
        const last = Math.max(0, ...ofPrefix(proxy.requests()).map((r) => r.at))
        return longPollsOn(prefix, proxy.inFlightRequests()) === 1 && Date.now() - last >= 300
          ? true
          : undefined
      },
      30_000,
    )
    proxy.resetCounts()
    // The quiet second itself: what the test is about.
    await new Promise((done) => setTimeout(done, 1000))
    const polls = ofPrefix(proxy.requests())
    assert.deepEqual(
      ofPrefix(proxy.inFlightRequests()).map((r) => /(^|&)index=/.test(r.query)),
      [true],
      'exactly one read of the prefix (the long poll) is waiting at the agent',
    )
    assert.equal(
      proxy.inFlightRequests().filter((r) => /(^|&)index=/.test(r.query)).length,
      1,
      'and no other blocking query',
    )
    assert.ok(polls.length <= 1, `${polls.length} new polls in a quiet second`)
    assert.ok(proxy.openConnections() <= 16, `${proxy.openConnections()} connections (pool of 16)`)

    await Promise.all(contenders.map((c) => c.close()))
    subs.forEach((s) => s.unsubscribe())
  })

  it('keeps the leases of holders on more prefixes than the client has connections', async (t) => {
    // 6 prefixes, 4 connections: the long polls, one per prefix, could hold every connection,
    // and a renewal would then wait for a poll to return (30 s), past the lease (9 s).
    const few = createConsulClient({ address: proxy.addr, env: {}, connections: 4 })
    const prefixes = Array.from({ length: 6 }, (_, i) =>
      testPrefix(t, consul.url, `many-prefixes-${i}`),
    )
    const sems = prefixes.map((prefix) => semaphore({ prefix, limit: 1, consul: few, ttl: '10s' }))
    const states = sems.map(() => ({ holding: false, leaseDeadline: 0, drops: 0, renewed: 0 }))
    const subs = sems.map((sem, i) =>
      sem.state$.subscribe((s) => {
        const seen = states[i] as (typeof states)[number]
        if (seen.holding && !s.holding) seen.drops++
        if (s.holding && seen.leaseDeadline > 0 && (s.leaseDeadline ?? 0) > seen.leaseDeadline) {
          seen.renewed++
        }
        seen.holding = s.holding
        seen.leaseDeadline = s.holding ? (s.leaseDeadline ?? 0) : 0
      }),
    )
    try {
      // What is tested is the leases, not how soon six holders are in: a CI run under load once
      // had them not all in within the usual 10 s, so they get 30.
      await eventually(
        'every holder holding',
        () => (states.every((s) => s.holding) ? true : undefined),
        30_000,
      )
      // Two renewals each (every 5 s): a lease that could not be renewed would lapse meanwhile.
      await eventually(
        'two renewals of every lease, or a holder dropped',
        () =>
          states.every((s) => s.renewed >= 2) || states.some((s) => s.drops > 0) ? true : undefined,
        40_000,
      )
      assert.deepEqual(
        states.map((s) => s.drops),
        [0, 0, 0, 0, 0, 0],
        'no holder dropped',
      )
    } finally {
      for (const sub of subs) sub.unsubscribe()
      await Promise.all(sems.map((sem) => sem.close()))
      await few.close()
    }
  })
})
