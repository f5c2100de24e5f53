// CONSUL_CAPATH with a real https agent: a directory of CA certificates, all trusted, as Consul's
// Go client reads it. A directory that holds the agent's CA among others lets the client in; one
// that holds only another CA gets the permanent TlsRejected, which names CONSUL_CAPATH.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { createConsulClient } from '../../src/consul/client.js'
import { consulBin } from '../support/consul-agent.js'
import { startTlsAgent, type TlsAgent } from '../support/tls-agent.js'
import { failure, ok } from './consul-test-kit.js'

describe('CONSUL_CAPATH', () => {
  let tls: TlsAgent
  const dir = mkdtempSync(join(tmpdir(), 'rxsem-capath-'))
  const bothCas = join(dir, 'both')
  const otherCaOnly = join(dir, 'other-only')
  // The suite's own agent, stopped after it, is the only one to see this prefix: no other test
  // shares it, and nothing written under it outlives the suite.
  const prefix = 'rxsem-test/tls-ca-path'

  before(async () => {
    tls = await startTlsAgent()
    // Another CA, made by `consul tls` as the agent's was.
    const other = join(dir, 'other')
    mkdirSync(other)
    execFileSync(consulBin(), ['tls', 'ca', 'create'], { cwd: other, stdio: 'ignore' })
    mkdirSync(join(bothCas, 'agent'), { recursive: true })
    mkdirSync(otherCaOnly)
    copyFileSync(join(other, 'consul-agent-ca.pem'), join(bothCas, 'other-ca.pem'))
    copyFileSync(tls.file('consul-agent-ca.pem'), join(bothCas, 'agent', 'ca.pem'))
    copyFileSync(join(other, 'consul-agent-ca.pem'), join(otherCaOnly, 'ca.pem'))
  })
  after(async () => {
    await tls?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  /** The TLS agent's variables, its CA given as CONSUL_CAPATH instead of CONSUL_CACERT. */
  const withCaPath = (caPath: string): Record<string, string> => {
    const { CONSUL_CACERT: _ca, ...env } = tls.env()
    return { ...env, CONSUL_CAPATH: caPath }
  }

  it('trusts the agent when its CA is one of the certificates under the directory', async () => {
    const consul = createConsulClient({ env: withCaPath(bothCas) })
    try {
      assert.equal(await ok(consul.kv.put(`${prefix}/k`, 'ca path')), true)
      assert.equal((await ok(consul.kv.get(`${prefix}/k`)))?.key, `${prefix}/k`)
      assert.equal(await ok(consul.kv.delete(prefix, { recurse: true })), true)
    } finally {
      await consul.close()
    }
  })

  it('refuses the agent when the directory holds only another CA, naming CONSUL_CAPATH', async () => {
    const consul = createConsulClient({ env: withCaPath(otherCaOnly) })
    try {
      const error = await failure(consul.kv.get(`${prefix}/k`))
      assert.equal(error._tag, 'TlsRejected')
      assert.match(error.message, /CONSUL_CAPATH/)
    } finally {
      await consul.close()
    }
  })
})
