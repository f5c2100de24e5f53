// https with a real agent: its CA from CONSUL_CACERT, a client certificate (the agent requires
// one), CONSUL_TLS_SERVER_NAME, CONSUL_HTTP_SSL and CONSUL_HTTP_SSL_VERIFY=false. The certificates
// are made by `consul tls` for this run.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { createConsulClient } from '../../src/consul/client.js'
import { isTransient } from '../../src/shared/failure-kinds.js'
import { uniquePrefix } from '../support/consul-agent.js'
import { startTlsAgent, type TlsAgent } from '../support/tls-agent.js'
import { failure, ok } from './consul-test-kit.js'

describe('Consul client over https', () => {
  let tls: TlsAgent
  let httpsPort: number
  let tlsEnv: TlsAgent['env']
  const prefix = uniquePrefix('consul-tls')

  before(async () => {
    tls = await startTlsAgent()
    ;({ httpsPort, env: tlsEnv } = tls)
  })
  after(async () => {
    await tls.stop()
  })

  it('talks https with the CA, a client certificate and the server name from the environment', async () => {
    const consul = createConsulClient({
      env: tlsEnv({ CONSUL_TLS_SERVER_NAME: 'server.dc1.consul' }),
    })
    try {
      assert.equal(consul.config.origin, `https://127.0.0.1:${httpsPort}`)
      assert.equal(await ok(consul.kv.put(`${prefix}/k`, 'tls')), true)
      assert.equal((await ok(consul.kv.get(`${prefix}/k`)))?.key, `${prefix}/k`)
      assert.equal(await ok(consul.kv.delete(prefix, { recurse: true })), true)
    } finally {
      await consul.close()
    }
  })

  it('turns https on for a host:port address with CONSUL_HTTP_SSL=true', async () => {
    const consul = createConsulClient({
      env: tlsEnv({ CONSUL_HTTP_ADDR: `127.0.0.1:${httpsPort}`, CONSUL_HTTP_SSL: 'true' }),
    })
    try {
      assert.equal(await ok(consul.kv.get(`${prefix}/missing`)), null)
    } finally {
      await consul.close()
    }
  })

  it('refuses an agent whose certificate it cannot verify, as the permanent TlsRejected', async () => {
    const { CONSUL_CACERT: _ca, ...withoutCa } = tlsEnv()
    const consul = createConsulClient({ env: withoutCa })
    try {
      const error = await failure(consul.kv.get(`${prefix}/k`))
      assert.equal(error._tag, 'TlsRejected')
      assert.equal(isTransient(error), false)
      assert.match(error.message, /certificate/i)
      assert.match(error.message, /CONSUL_CACERT/)
    } finally {
      await consul.close()
    }
  })

  it('skips verification with CONSUL_HTTP_SSL_VERIFY=false', async () => {
    const { CONSUL_CACERT: _ca, ...withoutCa } = tlsEnv({ CONSUL_HTTP_SSL_VERIFY: 'false' })
    const consul = createConsulClient({ env: withoutCa })
    try {
      assert.equal(await ok(consul.kv.get(`${prefix}/missing`)), null)
    } finally {
      await consul.close()
    }
  })

  it("says that an https:// address answered plain HTTP, and what to do, not OpenSSL's words alone", async () => {
    // The agent's plain-HTTP port, asked for https as an https:// address and as CONSUL_HTTP_SSL.
    const plain = tls.agent.addr
    const asksForHttps: Record<string, string>[] = [
      { CONSUL_HTTP_ADDR: `https://${plain}` },
      { CONSUL_HTTP_ADDR: plain, CONSUL_HTTP_SSL: 'true' },
    ]
    for (const env of asksForHttps) {
      const consul = createConsulClient({ env: tlsEnv(env) })
      try {
        const error = await failure(consul.kv.get(`${prefix}/k`))
        assert.equal(error._tag, 'Unreachable', error.message)
        assert.match(
          error.message,
          new RegExp(
            `the agent at https://${plain} answered without TLS \\(plain HTTP, most likely\\), ` +
              'but the client asked for https',
          ),
        )
        assert.match(
          error.message,
          new RegExp(`use http://${plain} \\(or CONSUL_HTTP_SSL=false\\)`),
        )
        assert.match(error.message, /or enable TLS on the agent/)
      } finally {
        await consul.close()
      }
    }
  })

  it('fails as Unreachable without the client certificate the agent requires', async () => {
    const { CONSUL_CLIENT_CERT: _c, CONSUL_CLIENT_KEY: _k, ...withoutCert } = tlsEnv()
    const consul = createConsulClient({ env: withoutCert })
    try {
      const error = await failure(consul.kv.get(`${prefix}/k`))
      assert.equal(error._tag, 'Unreachable', error.message)
    } finally {
      await consul.close()
    }
  })
})
