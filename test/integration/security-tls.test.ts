// The semaphore over https against an agent that requires client certificates: the CA and the
// certificate from the CONSUL_* variables, a wrong CA refused, and verification switched off with
// a warning.
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import { filter, firstValueFrom, type Subscription } from 'rxjs'
import {
  createConsulClient,
  semaphore,
  SemaphoreError,
  type SemaphoreState,
} from '../../src/index.js'
import { consulBin, type ConsulAgent } from '../support/consul-agent.js'
import { keep } from '../support/tracked.js'
import { startTlsAgent, type TlsAgent } from '../support/tls-agent.js'
import { eventually, sessionsNamed } from '../support/observe.js'

describe('semaphore over https', () => {
  let tls: TlsAgent
  let agent: ConsulAgent
  let file: (name: string) => string
  let tlsEnv: TlsAgent['env']
  // The suite's own agent, stopped after it, is the only one to see this prefix: no other test
  // shares it, and nothing written under it outlives the suite.
  const prefix = 'rxsem-test/security-tls'

  before(async () => {
    tls = await startTlsAgent()
    ;({ agent, file, env: tlsEnv } = tls)
    // A second CA that signed nothing of the agent's.
    mkdirSync(file('other'))
    execFileSync(consulBin(), ['tls', 'ca', 'create'], { cwd: file('other'), stdio: 'ignore' })
  })
  after(async () => {
    await fetch(`${agent.url}/v1/kv/${prefix}?recurse`, { method: 'DELETE' })
    await tls.stop()
  })

  it('acquires and releases with CONSUL_CACERT and the client certificate the agent asks for', async (t) => {
    const name = `tls ok ${prefix}`
    const consul = createConsulClient({ env: tlsEnv() })
    try {
      const sem = semaphore({ prefix: `${prefix}/ok`, limit: 1, consul, sessionName: name })
      const sub = keep(t, sem.holding$.subscribe())
      const held = await firstValueFrom(sem.state$.pipe(filter((s) => s.holding)))
      assert.ok(held.session)
      await sem.close()
      sub.unsubscribe()
      assert.deepEqual(await sessionsNamed(agent.url, name), [])
    } finally {
      await consul.close()
    }
  })

  // Decision: a certificate that cannot be verified is reported like any unreachable agent. The
  // Consul layer's error is a typed Unreachable whose message names the certificate problem;
  // the semaphore keeps retrying (a CA can be fixed or rotated without restarting the process)
  // and holding$ stays false, with state$.connected false. It never holds.
  it('refuses an agent signed by another CA: Unreachable naming the certificate, holding$ stays false', async () => {
    const consul = createConsulClient({
      env: tlsEnv({ CONSUL_CACERT: file('other/consul-agent-ca.pem') }),
    })
    const name = `tls wrong ca ${prefix}`
    let sub: Subscription | undefined
    try {
      const direct = await consul.kv.get(`${prefix}/x`)()
      assert.ok(E.isLeft(direct))
      assert.equal(direct.left._tag, 'TlsRejected')
      assert.match(direct.left.message, /certificate/i)
      assert.match(direct.left.message, /CONSUL_CACERT/)

      // A certificate the client cannot verify is configuration, not weather: fail fast.
      const sem = semaphore({ prefix: `${prefix}/wrong`, limit: 1, consul, sessionName: name })
      const states: SemaphoreState[] = []
      const started = Date.now()
      const error = await new Promise<unknown>((resolve) => {
        sub = sem.state$.subscribe({ next: (s) => void states.push(s), error: resolve })
      })
      assert.ok(Date.now() - started < 3000, 'at once, without retrying')
      assert.ok(error instanceof SemaphoreError)
      assert.equal(error.kind, 'TlsRejected')
      assert.match(error.message, /CONSUL_CACERT/)
      assert.ok(
        states.every((s) => !s.holding && !s.connected),
        'never holds, never connected',
      )
      sub?.unsubscribe()
      await sem.close()
      assert.deepEqual(await sessionsNamed(agent.url, name), [], 'nothing reached the agent')
    } finally {
      await consul.close()
    }
  })

  it('works with CONSUL_HTTP_SSL_VERIFY=false, with a warning that names the risk', async (t) => {
    const warnings: Error[] = []
    const onWarning = (w: Error): void => void warnings.push(w)
    process.on('warning', onWarning)
    const { CONSUL_CACERT: _ca, ...withoutCa } = tlsEnv({ CONSUL_HTTP_SSL_VERIFY: 'false' })
    const consul = createConsulClient({ env: withoutCa })
    try {
      const sem = semaphore({ prefix: `${prefix}/noverify`, limit: 1, consul })
      const sub = keep(t, sem.holding$.subscribe())
      await firstValueFrom(sem.holding$.pipe(filter(Boolean)))
      await sem.close()
      sub.unsubscribe()
      await eventually('the warning', () => (warnings.length > 0 ? true : undefined), 2000)
      const warning = warnings[0] as Error & { code?: string }
      assert.equal(warning.code, 'RXSEM_CONSUL_TLS_VERIFY_DISABLED')
      assert.match(warning.message, /CONSUL_HTTP_SSL_VERIFY disables TLS certificate verification/)
    } finally {
      process.off('warning', onWarning)
      await consul.close()
    }
  })
})
