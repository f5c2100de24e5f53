// Consul 1.11+ marks a listing that its ACLs filtered (X-Consul-Results-Filtered-By-ACLs: true).
// Consul 1.8.7 never sends the header, so the fault proxy adds it to the real agent's answers. A
// contender must not decide on part of a prefix (a hidden holder looks like a free slot): it says
// PermissionDenied at once, writes nothing under the prefix, and leaves no session.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createConsulClient, SemaphoreError, semaphore } from '../../src/index.js'
import { sharedAgent } from '../support/consul-agent.js'
import { keep, testPrefix } from '../support/tracked.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import { listPrefix, sessionsNamed } from '../support/observe.js'

describe('a listing filtered by ACLs', () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  let proxy: FaultProxy
  before(async () => {
    consul = await sharedAgent()
    proxy = await startFaultProxy(consul.addr)
  })
  after(async () => {
    await proxy.close()
    await consul.close()
  })

  it('is refused with PermissionDenied naming the header, and nothing is written', async (t) => {
    const prefix = testPrefix(t, consul.url, 'filtered')
    const name = `filtered ${prefix}`
    proxy.setMode({
      when: { method: 'GET', pathPrefix: '/v1/kv/' },
      then: { addHeaders: { 'X-Consul-Results-Filtered-By-ACLs': 'true' } },
    })
    const client = createConsulClient({ address: proxy.addr })
    const sem = semaphore({ prefix, limit: 2, consul: client, sessionName: name })
    const ended = await new Promise<unknown>((resolve) => {
      keep(t, sem.state$.subscribe({ error: resolve, complete: () => resolve('completed') }))
    })
    assert.ok(ended instanceof SemaphoreError, String(ended))
    assert.equal(ended.kind, 'PermissionDenied')
    assert.match(ended.message, /X-Consul-Results-Filtered-By-ACLs/)
    await sem.close()
    assert.deepEqual(await listPrefix(consul.url, prefix), [], 'nothing written under the prefix')
    assert.deepEqual(await sessionsNamed(consul.url, name), [], 'no session left')
    await client.close()
  })
})
