// The session calls of the Consul client against a real agent.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { agentSuite } from '../support/agent-suite.js'
import { failure, ok } from './consul-test-kit.js'

describe('Consul session calls', () => {
  const created: string[] = []
  // Registered above agentSuite(), so it runs before the client and the agent close.
  after(async () => {
    for (const id of created) await ok(agent.client.session.destroy(id))
    for (const id of created) assert.equal(await ok(agent.client.session.info(id)), null)
  })
  const agent = agentSuite({ env: {} })

  it('creates a session with name, TTL, behavior and lock-delay, and reads it back', async () => {
    const id = await ok(
      agent.client.session.create({
        name: 'rxsem-test',
        ttl: '15s',
        behavior: 'delete',
        lockDelay: 1500,
      }),
    )
    created.push(id)
    assert.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
    const info = await ok(agent.client.session.info(id))
    assert.equal(info?.id, id)
    assert.equal(info?.name, 'rxsem-test')
    assert.equal(info?.behavior, 'delete')
    assert.equal(info?.ttl, '15s')
    assert.equal(info?.ttlMs, 15000)
    assert.equal(info?.lockDelayMs, 1500)
    assert.equal(typeof info?.createIndex, 'bigint')
    assert.ok(info !== null && info.node.length > 0)
  })

  it('sends a TTL given in milliseconds with a unit, and defaults to release with no TTL', async () => {
    const withMs = await ok(agent.client.session.create({ ttl: 12500 }))
    created.push(withMs)
    assert.equal((await ok(agent.client.session.info(withMs)))?.ttlMs, 12500)
    const plain = await ok(agent.client.session.create({ nodeChecks: [] }))
    created.push(plain)
    const info = await ok(agent.client.session.info(plain))
    assert.equal(info?.behavior, 'release')
    assert.equal(info?.ttl, '')
    assert.equal(info?.ttlMs, undefined)
    assert.equal(info?.lockDelayMs, 15000, "Consul's default lock-delay")
  })

  it('binds a session to a named node and its checks', async () => {
    const probe = await ok(agent.client.session.create({ ttl: '10s' }))
    created.push(probe)
    const node = (await ok(agent.client.session.info(probe)))?.node ?? ''
    const id = await ok(
      agent.client.session.create({ node, nodeChecks: ['serfHealth'], serviceChecks: [] }),
    )
    created.push(id)
    assert.equal((await ok(agent.client.session.info(id)))?.node, node)
    const missing = await failure(agent.client.session.create({ node: 'no-such-node-rxsem' }))
    assert.equal(missing._tag, 'ServerError')
    assert.match(missing.message, /Missing node registration/)
  })

  it('renews a session and adopts the TTL the server returns', async () => {
    const id = await ok(agent.client.session.create({ ttl: '20s' }))
    created.push(id)
    const renewed = await ok(agent.client.session.renew(id))
    assert.equal(renewed?.id, id)
    assert.equal(renewed?.ttlMs, 20000)
  })

  it('answers null when renewing or reading a session that is gone', async () => {
    const id = await ok(agent.client.session.create({ ttl: '10s' }))
    assert.equal(await ok(agent.client.session.destroy(id)), true)
    assert.equal(await ok(agent.client.session.renew(id)), null)
    assert.equal(await ok(agent.client.session.info(id)), null)
    assert.equal(await ok(agent.client.session.destroy(id)), true, 'destroy is idempotent')
  })

  it('refuses a TTL outside 10s..24h before sending, with a clear message', async () => {
    for (const ttl of ['9s', 9999, '24h0m1s', 86_400_001, 'soon', '15']) {
      const error = await failure(agent.client.session.create({ ttl }))
      assert.equal(error._tag, 'BadRequest', String(ttl))
      assert.ok(error._tag === 'BadRequest' && error.rejectedBeforeSending === true)
      assert.match(error.message, /^PUT \/v1\/session\/create: not sent: ttl /)
      assert.match(
        error.message,
        typeof ttl === 'string' && !/\d[smh]$/.test(ttl)
          ? /not a duration/
          : /outside Consul's range 10s\.\.24h/,
      )
    }
    for (const ttl of ['10s', '24h']) {
      const id = await ok(agent.client.session.create({ ttl }))
      created.push(id)
    }
  })

  it('refuses an empty session id before sending', async () => {
    const error = await failure(agent.client.session.renew(''))
    assert.ok(error._tag === 'BadRequest' && error.rejectedBeforeSending === true)
  })
})
