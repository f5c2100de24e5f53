// A real agent with ACLs on and default-deny: refusals are typed PermissionDenied errors that
// never carry the token, and a permitted token works through the X-Consul-Token header.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createConsulClient, type ConsulHttpClient } from '../../src/consul/client.js'
import { startAgent, type ConsulAgent } from '../support/consul-agent.js'
import { errorJson, failure, ok, record, until } from './consul-test-kit.js'

const ROOT = 'root-token-5f0c1d'
const UNKNOWN = 'unknown-token-9a8b7c'

describe('Consul client against an agent with ACLs', () => {
  let agent: ConsulAgent
  let root: ConsulHttpClient
  // The suite's own agent, stopped after it, is the only one to see this prefix: no other test
  // shares it, and nothing written under it outlives the suite.
  const prefix = 'rxsem-test/consul-acl'
  before(async () => {
    agent = await startAgent({
      hcl: [`acl { enabled = true, default_policy = "deny", tokens { master = "${ROOT}" } }`],
      token: ROOT,
    })
    root = createConsulClient({ address: agent.addr, env: { CONSUL_HTTP_TOKEN: ROOT } })
  })
  after(async () => {
    await ok(root.kv.delete(prefix, { recurse: true }))
    await root.close()
    await agent.stop()
  })

  it('works with the master token, sent in the X-Consul-Token header', async () => {
    assert.equal(await ok(root.kv.put(`${prefix}/k`, 'v')), true)
    assert.equal((await ok(root.kv.get(`${prefix}/k`)))?.key, `${prefix}/k`)
    const session = await ok(root.session.create({ ttl: '10s' }))
    assert.equal(await ok(root.session.destroy(session)), true)
  })

  it('answers an unknown token with a typed PermissionDenied that does not contain the token', async () => {
    const stranger = createConsulClient({
      address: agent.addr,
      env: { CONSUL_HTTP_TOKEN: UNKNOWN },
    })
    try {
      for (const task of [
        stranger.kv.get(`${prefix}/k`),
        stranger.kv.put(`${prefix}/k`, 'v'),
        stranger.kv.list(`${prefix}/`),
        stranger.session.create({ ttl: '10s' }),
      ]) {
        const error = await failure(task)
        assert.equal(error._tag, 'PermissionDenied', error.message)
        assert.ok(error._tag === 'PermissionDenied' && error.status === 403)
        assert.match(error.message, /permission denied \(403: ACL not found\)/)
        assert.ok(!error.message.includes(UNKNOWN) && !errorJson(error).includes(UNKNOWN))
      }
    } finally {
      await stranger.close()
    }
  })

  it('answers the anonymous token with PermissionDenied on a write', async () => {
    const anonymous = createConsulClient({ address: agent.addr, env: {} })
    try {
      const error = await failure(anonymous.kv.put(`${prefix}/k`, 'v'))
      assert.equal(error._tag, 'PermissionDenied')
      assert.match(error.message, /Permission denied/)
    } finally {
      await anonymous.close()
    }
  })

  it('ends a watch with PermissionDenied, without a disconnect', async () => {
    const stranger = createConsulClient({
      address: agent.addr,
      env: { CONSUL_HTTP_TOKEN: UNKNOWN },
    })
    try {
      const watch = record(stranger.watchPrefix(`${prefix}/`))
      await until(() => watch.error() !== undefined, 'the error')
      assert.equal((watch.error() as { _tag: string })._tag, 'PermissionDenied')
      assert.deepEqual(watch.events, [])
    } finally {
      await stranger.close()
    }
  })
})
