// A Consul client agent of 1.11.9 to 1.14.x may answer a blocking read with a 500
// "rpc error making call: i/o deadline reached" when its RPC to the servers hits its deadline
// before the servers answer. The fault proxy answers every blocking read so, one second after it
// was sent, while everything else (session renewals, writes, plain reads) passes: a holder keeps
// its slot without a single drop of holding$, and still sees a change to its slot within seconds,
// as a waiter sees its admission.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { filter, firstValueFrom, type Subscription } from 'rxjs'
import { createConsulClient, semaphore, type ConsulClient } from '../../src/index.js'
import { sharedAgent } from '../support/consul-agent.js'
import { onEnd, testPrefix } from '../support/tracked.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import { SEMAPHORE_FLAGS, eventually, putRaw, readLock, sleep } from '../support/observe.js'

const DEADLINE_BODY = 'rpc error making call: i/o deadline reached'
/** How long the holder sits behind the cut polls before its slot is changed under it. */
const CUT_WINDOW_MS = 20_000
/** "Within a few seconds": below the 5 s recheck of a parked waiter, so the watch is what saw it. */
const SEEN_WITHIN_MS = 4_000

describe('blocking reads cut short by a 500 "i/o deadline reached"', () => {
  let agent: Awaited<ReturnType<typeof sharedAgent>>
  let proxy: FaultProxy
  let holderClient: ConsulClient
  let waiterClient: ConsulClient
  before(async () => {
    agent = await sharedAgent()
    proxy = await startFaultProxy(agent.addr)
    // Two processes' worth of clients, each with its own watch of the prefix.
    holderClient = createConsulClient({ address: proxy.addr, env: {} })
    waiterClient = createConsulClient({ address: proxy.addr, env: {} })
  })
  after(async () => {
    await holderClient.close()
    await waiterClient.close()
    await proxy.close()
    await agent.close()
  })

  it('keeps a holder on its slot without a flap, and shows it and a waiter a change within seconds', async (t) => {
    const prefix = testPrefix(t, agent.url, 'deadline-cut')
    proxy.setMode({
      when: { method: 'GET', pathPrefix: '/v1/kv/', query: /(^|&)index=/ },
      then: { afterMs: 1000, then: { status: 500, body: DEADLINE_BODY } },
    })
    const holder = semaphore({ prefix, limit: 1, consul: holderClient })
    const waiter = semaphore({ prefix, limit: 1, consul: waiterClient })
    const holderSeen: { holding: boolean; at: number }[] = []
    const waiterSeen: { holding: boolean; at: number }[] = []
    const subs: Subscription[] = []
    onEnd(t, async () => {
      proxy.setMode('pass')
      subs.forEach((s) => s.unsubscribe())
      await holder.close()
      await waiter.close()
    })
    subs.push(holder.holding$.subscribe((holding) => holderSeen.push({ holding, at: Date.now() })))
    await firstValueFrom(holder.holding$.pipe(filter(Boolean)))
    subs.push(waiter.holding$.subscribe((holding) => waiterSeen.push({ holding, at: Date.now() })))
    await firstValueFrom(waiter.state$.pipe(filter((s) => s.waiting.length > 0)))

    // The window in which nothing may happen to the holder, whatever the cut polls do.
    proxy.resetCounts()
    await sleep(CUT_WINDOW_MS)
    const cut = proxy
      .requests()
      .filter((r) => r.method === 'GET' && /(^|&)index=/.test(r.query)).length
    assert.ok(cut >= 20, `the proxy cut ${cut} blocking reads in ${CUT_WINDOW_MS} ms`)
    assert.deepEqual(
      holderSeen.map((e) => e.holding),
      [false, true],
      'holding$ never dropped while the blocking reads were cut',
    )
    assert.deepEqual(
      waiterSeen.map((e) => e.holding),
      [false],
      'the waiter never held',
    )

    // `.lock` is rewritten to list nobody (an operator's edit): the holder's slot is gone. It is
    // first in line, so it takes a slot again once it has seen that.
    const lock = await readLock(agent.url, prefix)
    assert.ok(lock !== undefined)
    const body = JSON.stringify({ Limit: 1, Holders: {} })
    const rewrittenAt = Date.now()
    const cas = `cas=${lock.entry.ModifyIndex}&flags=${SEMAPHORE_FLAGS}`
    assert.ok(await putRaw(agent.url, `${prefix}/.lock`, body, cas), 'the .lock rewrite')
    await eventually('the holder to see its slot gone', () =>
      holderSeen.find((e) => e.at >= rewrittenAt && !e.holding),
    )
    const lost = holderSeen.find((e) => e.at >= rewrittenAt && !e.holding)!
    await eventually('the holder to take a slot again', () =>
      holderSeen.at(-1)?.holding === true ? true : undefined,
    )

    // The holder leaves: the waiter, whose reads are cut too, is admitted.
    const releasedAt = Date.now()
    await holder.close()
    const admitted = await eventually('the waiter to be admitted', () =>
      waiterSeen.find((e) => e.holding),
    )
    const lostAfterMs = lost.at - rewrittenAt
    const admittedAfterMs = admitted.at - releasedAt
    t.diagnostic(
      `holder saw its loss after ${lostAfterMs} ms, waiter admitted after ${admittedAfterMs} ms`,
    )
    assert.ok(lostAfterMs < SEEN_WITHIN_MS, `the holder saw its loss after ${lostAfterMs} ms`)
    assert.ok(
      admittedAfterMs < SEEN_WITHIN_MS,
      `the waiter was admitted ${admittedAfterMs} ms after the holder left`,
    )
  })
})
