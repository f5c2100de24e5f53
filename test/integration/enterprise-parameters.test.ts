// Consul Enterprise's namespace and admin partition, sent as Consul's Go client sends them (`ns`
// and `partition` on every request), against a Community Edition agent: what the test agent
// (Consul 1.8.7, from before partitions) does with them, and the errors that tell a user of a
// Community Edition agent which setting to unset. The proxy records what was sent; for the 400
// of a newer Community Edition agent to `partition`, it answers with that agent's words.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { filter, firstValueFrom } from 'rxjs'
import { createConsulClient } from '../../src/consul/client.js'
import { semaphore, SemaphoreError } from '../../src/index.js'
import { sharedAgent } from '../support/consul-agent.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import { suiteScope, testPrefix } from '../support/tracked.js'
import { failure, ok } from './consul-test-kit.js'

/** What a Community Edition agent of 1.11 or later answers to `?partition=`. */
const PARTITION_REFUSED =
  'Invalid query parameter: "partition" - Partitions are a Consul Enterprise feature'

describe('Enterprise namespace and partition on a Community Edition agent', () => {
  let agent: Awaited<ReturnType<typeof sharedAgent>>
  let proxy: FaultProxy
  const suite = suiteScope() // registered first: the prefix goes before the agent closes
  const prefix = testPrefix(suite, () => agent.url, 'enterprise-params')
  before(async () => {
    agent = await sharedAgent()
    proxy = await startFaultProxy(agent.addr)
  })
  after(async () => {
    await proxy.close()
    await agent.close()
  })

  it('sends CONSUL_PARTITION as partition on KV, transaction and session calls, which Consul 1.8.7 ignores', async () => {
    const consul = createConsulClient({ address: proxy.addr, env: { CONSUL_PARTITION: 'team-a' } })
    try {
      proxy.resetCounts()
      const session = await ok(consul.session.create({ name: `partition ${prefix}`, ttl: '15s' }))
      assert.equal(await ok(consul.kv.put(`${prefix}/p`, 'x')), true)
      assert.equal((await ok(consul.kv.get(`${prefix}/p`)))?.key, `${prefix}/p`)
      const listed = await ok(consul.kv.list(`${prefix}/`))
      assert.deepEqual(
        listed.entries.map((e) => e.key),
        [`${prefix}/p`],
      )
      const txn = await ok(consul.kv.txn([{ verb: 'get', key: `${prefix}/p` }]))
      assert.ok(txn !== undefined)
      assert.ok((await ok(consul.session.renew(session))) !== null)
      assert.equal(await ok(consul.session.destroy(session)), true)
      assert.equal(await ok(consul.kv.delete(`${prefix}/p`)), true)
      const sent = proxy.requests().map((r) => `${r.method} ${r.path.replace(session, ':id')}`)
      assert.deepEqual(sent, [
        'PUT /v1/session/create',
        `PUT /v1/kv/${prefix}/p`,
        `GET /v1/kv/${prefix}/p`,
        `GET /v1/kv/${prefix}/`,
        'PUT /v1/txn',
        'PUT /v1/session/renew/:id',
        'PUT /v1/session/destroy/:id',
        `DELETE /v1/kv/${prefix}/p`,
      ])
      for (const request of proxy.requests()) {
        assert.match(
          request.query,
          /(^|&)partition=team-a(&|$)/,
          `${request.method} ${request.path}`,
        )
      }
    } finally {
      await consul.close()
    }
  })

  it('says the agent is Community Edition and to unset CONSUL_NAMESPACE when it refuses ns', async () => {
    const consul = createConsulClient({ address: proxy.addr, env: { CONSUL_NAMESPACE: 'team-a' } })
    try {
      const error = await failure(consul.kv.get(`${prefix}/ns`))
      assert.equal(error._tag, 'BadRequest')
      assert.equal(error._tag === 'BadRequest' && error.enterpriseOnly, 'namespace')
      assert.match(error.message, /Community Edition/)
      assert.match(error.message, /unset CONSUL_NAMESPACE \(or the namespace option\)/)
      assert.match(error.message, /Namespaces are a Consul Enterprise feature/)
    } finally {
      await consul.close()
    }
  })

  it('says the agent is Community Edition and to unset CONSUL_PARTITION when it refuses partition', async () => {
    const consul = createConsulClient({ address: proxy.addr, partition: 'team-a', env: {} })
    try {
      proxy.setMode({
        when: { query: /(^|&)partition=/ },
        then: { status: 400, body: PARTITION_REFUSED },
      })
      const error = await failure(consul.kv.get(`${prefix}/partition`))
      assert.equal(error._tag, 'BadRequest')
      assert.equal(error._tag === 'BadRequest' && error.enterpriseOnly, 'partition')
      assert.match(error.message, /Community Edition, which has no admin partitions/)
      assert.match(error.message, /unset CONSUL_PARTITION \(or the partition option\)/)
    } finally {
      proxy.setMode('pass')
      await consul.close()
    }
  })

  it('ends a semaphore with a SemaphoreError that says to unset CONSUL_NAMESPACE', async () => {
    const consul = createConsulClient({ address: proxy.addr, env: { CONSUL_NAMESPACE: 'team-a' } })
    const sem = semaphore({ prefix: `${prefix}/sem`, limit: 1, consul })
    try {
      const error: unknown = await firstValueFrom(sem.holding$.pipe(filter(Boolean))).then(
        () => assert.fail('a semaphore held a slot through a refused namespace'),
        (e: unknown) => e,
      )
      assert.ok(error instanceof SemaphoreError, String(error))
      assert.match(error.message, /Community Edition/)
      assert.match(error.message, /unset CONSUL_NAMESPACE/)
    } finally {
      await sem.close().catch(() => undefined)
      await consul.close()
    }
  })
})
