// https with a real agent: its CA from CONSUL_CACERT, a client certificate (the agent requires
// one), CONSUL_TLS_SERVER_NAME, CONSUL_HTTP_SSL and CONSUL_HTTP_SSL_VERIFY=false. The certificates
// are made by `consul tls` for this run.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { lastValueFrom } from 'rxjs'
import { createConsulClient } from '../../src/consul/client.js'
import { SemaphoreError, doctor, semaphore } from '../../src/index.js'
import { isTransient } from '../../src/base/failure-kinds.js'
import { startTlsAgent, type TlsAgent } from '../support/tls-agent.js'
import { failure, ok } from './consul-test-kit.js'

describe('Consul client over https', () => {
  let tls: TlsAgent
  let httpsPort: number
  let tlsEnv: TlsAgent['env']
  // The suite's own agent, stopped after it, is the only one to see this prefix: no other test
  // shares it, and nothing written under it outlives the suite.
  const prefix = 'rxsem-test/consul-tls'

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

  it('says at once, as the permanent TlsRejected, that an https:// address answered plain HTTP, and what to change', async () => {
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
        assert.equal(error._tag, 'TlsRejected', error.message)
        assert.equal(isTransient(error), false)
        assert.equal(error._tag === 'TlsRejected' && error.mismatch, 'agent-speaks-http')
        assert.match(
          error.message,
          new RegExp(
            `the agent at https://${plain} answered in plain HTTP, but the client speaks TLS to it`,
          ),
        )
        assert.match(
          error.message,
          new RegExp(
            `set CONSUL_HTTP_ADDR \\(or the address option\\) to http://${plain} and CONSUL_HTTP_SSL to false`,
          ),
        )
        assert.match(error.message, /or enable TLS on the agent/)
        assert.doesNotMatch(error.message, /[Ss]tart/)
      } finally {
        await consul.close()
      }
    }
  })

  it('says at once, as the permanent TlsRejected, that an http:// address is an HTTPS port, and what to change', async () => {
    const consul = createConsulClient({
      env: tlsEnv({ CONSUL_HTTP_ADDR: `http://127.0.0.1:${httpsPort}` }),
    })
    try {
      const error = await failure(consul.kv.get(`${prefix}/k`))
      assert.equal(error._tag, 'TlsRejected', error.message)
      assert.equal(error._tag === 'TlsRejected' && error.mismatch, 'agent-speaks-https')
      assert.match(
        error.message,
        new RegExp(
          `the agent at http://127\\.0\\.0\\.1:${httpsPort} answered that it speaks only TLS .*Client sent an HTTP request to an HTTPS server`,
        ),
      )
      assert.match(
        error.message,
        new RegExp(
          `set CONSUL_HTTP_ADDR \\(or the address option\\) to https://127\\.0\\.0\\.1:${httpsPort} \\(or CONSUL_HTTP_SSL to true\\)`,
        ),
      )
      assert.doesNotMatch(error.message, /[Ss]tart/)
    } finally {
      await consul.close()
    }
  })

  // A contender retries what may pass (no agent yet) up to its start-up timeout; a TLS mismatch
  // cannot pass, so it fails at its first answer: the test's own timeout is a quarter of the
  // start-up timeout given.
  for (const way of ['https:// to the plain-HTTP port', 'http:// to the HTTPS port'] as const) {
    it(
      `fails a semaphore with kind TlsRejected at the first answer, not at its start-up timeout (${way})`,
      { timeout: 15_000 },
      async () => {
        const address =
          way === 'https:// to the plain-HTTP port'
            ? `https://${tls.agent.addr}`
            : `http://127.0.0.1:${httpsPort}`
        const consul = createConsulClient({ env: tlsEnv({ CONSUL_HTTP_ADDR: address }) })
        try {
          const sem = semaphore({
            prefix: `${prefix}/sem`,
            limit: 1,
            consul,
            startupTimeout: '60s',
          })
          const error = await lastValueFrom(sem.holding$).then(
            () => assert.fail('holding$ completed without an error'),
            (e: unknown) => e,
          )
          assert.ok(error instanceof SemaphoreError, String(error))
          assert.equal(error.kind, 'TlsRejected', error.message)
          assert.match(
            error.message,
            way.startsWith('https') ? /answered in plain HTTP/ : /speaks only TLS/,
          )
          assert.match(error.message, /set CONSUL_HTTP_ADDR \(or the address option\) to http/)
          assert.doesNotMatch(error.message, /[Ss]tart a Consul agent|startupTimeout/)
          await sem.close()
        } finally {
          await consul.close()
        }
      },
    )
  }

  it("gives doctor's agent finding the scheme to change, not an agent to start", async () => {
    const address = `http://127.0.0.1:${httpsPort}`
    const report = await doctor({ consul: { env: tlsEnv({ CONSUL_HTTP_ADDR: address }) } })
    const agent = report.findings.find((f) => f.check === 'agent')
    assert.equal(agent?.severity, 'problem', JSON.stringify(report.findings))
    assert.match(agent.found, /answered that it speaks only TLS/)
    assert.match(agent.action, new RegExp(`to https://127\\.0\\.0\\.1:${httpsPort}`))
    assert.doesNotMatch(agent.action, /[Ss]tart/)
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
