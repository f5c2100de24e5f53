// `doctor` against real agents: a healthy dev agent gets a clean report, and each mistake it is
// meant to find is found (an address that is not Consul, a known-bad version, lock-delay longer
// than the TTL, a token without rights on the prefix), with nothing left behind in Consul.
import assert from 'node:assert/strict'
import { after, before, describe, it, type TestContext } from 'node:test'
import { doctor, type DoctorCheck, type DoctorReport } from '../../src/index.js'
import { doctorSessionName } from '../../src/operator/doctor/session-findings.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'
import { sharedAgent, startAgent, type ConsulAgent } from '../support/consul-agent.js'
import { onEnd, testPrefix } from '../support/tracked.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import { startNotConsul } from '../support/not-consul-server.js'
import { listPrefix, sessionsNamed } from '../support/observe.js'

/** The findings of one check, e.g. every 'version' finding. */
const findingsOf = (report: DoctorReport, check: DoctorCheck) =>
  report.findings.filter((f) => f.check === check)

/** The one finding of `check`; fails the test when there is none or more. */
function finding(report: DoctorReport, check: DoctorCheck) {
  const found = findingsOf(report, check)
  assert.equal(
    found.length,
    1,
    `one ${check} finding in ${JSON.stringify(report.findings, null, 1)}`,
  )
  return found[0] as (typeof found)[number]
}

/** Every finding that is not ok, for messages. */
const notOk = (report: DoctorReport) => report.findings.filter((f) => f.severity !== 'ok')

describe('doctor on a healthy dev agent', { concurrency: 4, timeout: SUITE_TIMEOUT_MS }, () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  before(async () => {
    consul = await sharedAgent()
  })
  after(() => consul.close())

  it('reports every check ok, and leaves no session or key behind', async (t) => {
    const prefix = testPrefix(t, consul.url, 'doctor-clean')
    const report = await doctor({ consul: { address: consul.addr }, prefix })
    assert.deepEqual(notOk(report), [])
    assert.equal(report.problems, 0)
    assert.equal(report.warnings, 0)
    assert.equal(report.prefix, prefix)
    assert.equal(report.agent?.server, true)
    assert.match(report.agent?.version ?? '', /^\d+\.\d+\.\d+/)
    assert.deepEqual(
      [...new Set(report.findings.map((f) => f.check))],
      [
        'agent',
        'version',
        'agent-role',
        'acl',
        'prefix-read',
        'prefix-write',
        'lock',
        'session',
        'checks',
        'lock-delay',
      ],
    )
    assert.match(finding(report, 'checks').found, /serfHealth passing/)
    assert.match(finding(report, 'lock').found, /does not exist yet/)
    // The session was destroyed before doctor returned, and the CAS wrote nothing.
    assert.deepEqual(await sessionsNamed(consul.url, doctorSessionName(prefix)), [])
    assert.deepEqual(await listPrefix(consul.url, prefix), [])
  })

  it('describes a .lock that holds a semaphore, and changes nothing in it', async (t) => {
    const prefix = testPrefix(t, consul.url, 'doctor-lock')
    const put = await fetch(`${consul.url}/v1/kv/${prefix}/.lock?flags=16210313421097356768`, {
      method: 'PUT',
      body: JSON.stringify({ Limit: 3, Holders: {} }),
    })
    assert.equal((await put.text()).trim(), 'true')
    const seen = await listPrefix(consul.url, prefix)
    const report = await doctor({ consul: { address: consul.addr }, prefix })
    assert.equal(report.problems, 0, JSON.stringify(notOk(report)))
    assert.match(
      finding(report, 'lock').found,
      /a semaphore \(go-map shape\) of limit 3: 0 holders, 0 waiting/,
    )
    assert.deepEqual(await listPrefix(consul.url, prefix), seen)
  })

  it('finds a lock-delay longer than the TTL a problem, and says why', async (t) => {
    const prefix = testPrefix(t, consul.url, 'doctor-lock-delay')
    const report = await doctor({
      consul: { address: consul.addr },
      prefix,
      ttl: '10s',
      lockDelay: '30s',
    })
    const lockDelay = finding(report, 'lock-delay')
    assert.equal(lockDelay.severity, 'problem')
    assert.match(lockDelay.found, /lock-delay 30s is longer than the TTL 10s/)
    assert.match(lockDelay.found, /unusable for longer than a whole lease/)
    assert.match(lockDelay.action, /at most the TTL/)
    assert.equal(report.problems, 1, JSON.stringify(notOk(report)))
    assert.deepEqual(await sessionsNamed(consul.url, doctorSessionName(prefix)), [])
  })

  it("takes Consul's default lock-delay (15s) against a shorter TTL as a problem too", async () => {
    const report = await doctor({ consul: { address: consul.addr }, ttl: '10s' })
    assert.equal(finding(report, 'lock-delay').severity, 'problem')
    assert.match(finding(report, 'lock-delay').found, /lock-delay 15s is longer than the TTL 10s/)
  })

  it('finds a node check the agent does not have a problem, as Consul refuses the session', async (t) => {
    const prefix = testPrefix(t, consul.url, 'doctor-checks')
    const report = await doctor({
      consul: { address: consul.addr },
      prefix,
      checks: ['no-such-check'],
    })
    const checks = finding(report, 'checks')
    assert.equal(checks.severity, 'problem')
    assert.match(checks.found, /Missing check 'no-such-check' registration/)
    assert.deepEqual(await sessionsNamed(consul.url, doctorSessionName(prefix)), [])
  })

  it('checks the service checks of the session: passing is ok, critical a problem', async (t) => {
    const prefix = testPrefix(t, consul.url, 'doctor-service-check')
    const id = `doctor-${prefix.split('/').pop() ?? ''}`
    const agentCall = async (path: string, body?: unknown): Promise<void> => {
      const res = await fetch(`${consul.url}/v1/agent/${path}`, {
        method: 'PUT',
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      })
      assert.ok(res.ok, `${path}: ${res.status} ${await res.text()}`)
    }
    onEnd(t, () => agentCall(`service/deregister/${id}`))
    await agentCall('service/register', {
      ID: id,
      Name: id,
      Check: { CheckID: `${id}-ttl`, TTL: '60s' },
    })
    await agentCall(`check/pass/${id}-ttl`)
    const passing = await doctor({
      consul: { address: consul.addr },
      prefix,
      serviceChecks: [`${id}-ttl`],
    })
    assert.equal(finding(passing, 'checks').severity, 'ok')
    assert.match(
      finding(passing, 'checks').found,
      new RegExp(`serfHealth passing, ${id}-ttl passing`),
    )
    assert.match(finding(passing, 'session').found, new RegExp(`service checks ${id}-ttl`))

    await agentCall(`check/fail/${id}-ttl`)
    const critical = await doctor({
      consul: { address: consul.addr },
      prefix,
      serviceChecks: [{ id: `${id}-ttl` }],
    })
    assert.equal(finding(critical, 'checks').severity, 'problem')
    assert.match(finding(critical, 'checks').found, /critical/)
    assert.deepEqual(await sessionsNamed(consul.url, doctorSessionName(prefix)), [])
  })

  it('finds an address that is not a Consul agent a problem, and stops there', async (t) => {
    for (const [status, type, body] of [
      [404, 'text/plain', '404 page not found'],
      [200, 'text/html', '<html><body>a dashboard</body></html>'],
    ] as const) {
      const server = await startNotConsul(status, type, body)
      onEnd(t, () => server.close())
      const report = await doctor({ consul: { address: server.addr }, prefix: 'svc/x' })
      assert.equal(report.findings.length, 1, JSON.stringify(report.findings))
      const agent = finding(report, 'agent')
      assert.equal(agent.severity, 'problem')
      assert.match(agent.found, /is not a Consul agent/)
      assert.match(agent.action, /CONSUL_HTTP_ADDR/)
      assert.equal(report.agent, null)
    }
  })

  it('finds an agent that does not answer a problem', async () => {
    const server = await startNotConsul(200, 'text/plain', '')
    const addr = server.addr
    server.close()
    const report = await doctor({ consul: { address: addr } })
    assert.equal(finding(report, 'agent').severity, 'problem')
    assert.match(finding(report, 'agent').found, /cannot reach|ECONNREFUSED/)
  })

  // One proxy, one mode at a time: these run one after the other.
  describe(
    'known-bad versions, shown through a proxy that rewrites /v1/agent/self',
    { concurrency: 1 },
    () => {
      let proxy: FaultProxy
      before(async () => {
        proxy = await startFaultProxy(consul.addr)
      })
      after(() => proxy.close())

      /** doctor through the proxy, whose agent now says it is `version`, a server or not. */
      const claiming = (version: string, server: boolean): Promise<DoctorReport> => {
        proxy.setMode({
          when: { pathPrefix: '/v1/agent/self' },
          then: {
            rewrite: (_path, json) => {
              const self = json as { Config: Record<string, unknown> }
              return { ...self, Config: { ...self.Config, Version: version, Server: server } }
            },
          },
        })
        return doctor({ consul: { address: proxy.addr } })
      }

      it('warns of the i/o deadline 500s of 1.11.9 to 1.14.x through a client agent', async () => {
        for (const version of ['1.11.9', '1.12.1', '1.13.2', '1.14.8+ent']) {
          const report = await claiming(version, false)
          assert.equal(report.agent?.version, version)
          const found = finding(report, 'version')
          assert.equal(found.severity, 'warning', version)
          assert.match(found.found, /i\/o deadline reached/)
          assert.match(found.found, /hashicorp\/consul#13303/)
          assert.match(found.action, /1\.15 or later/)
          assert.equal(report.problems, 0, `${version}: ${JSON.stringify(notOk(report))}`)
          assert.match(finding(report, 'agent-role').found, /a client agent/)
        }
      })

      it('does not warn of them on a server agent, nor on the releases before and after', async () => {
        for (const [version, server] of [
          ['1.13.2', true],
          ['1.11.8', false],
          ['1.12.0', false],
          ['1.15.0', false],
          ['1.21.4', false],
        ] as const) {
          const report = await claiming(version, server)
          assert.equal(finding(report, 'version').severity, 'ok', `${version} server ${server}`)
        }
      })

      it('finds a version older than 1.8 a problem', async () => {
        const report = await claiming('1.7.4', false)
        const found = finding(report, 'version')
        assert.equal(found.severity, 'problem')
        assert.match(found.found, /Consul 1\.7\.4 is older than 1\.8/)
        assert.match(found.action, /1\.8 or later/)
      })

      it('warns of a server agent that is not a dev agent', async () => {
        proxy.setMode({
          when: { pathPrefix: '/v1/agent/self' },
          then: {
            rewrite: (_path, json) => {
              const self = json as { DebugConfig: Record<string, unknown> }
              return { ...self, DebugConfig: { ...self.DebugConfig, DevMode: false } }
            },
          },
        })
        const report = await doctor({ consul: { address: proxy.addr } })
        const role = finding(report, 'agent-role')
        assert.equal(role.severity, 'warning')
        assert.match(role.found, /a server agent/)
        assert.match(role.action, /client agent on their own host/)
      })
    },
  )
})

const MASTER = 'doctor-master-7c21e9'

describe('doctor on an agent with ACLs (default deny)', { timeout: SUITE_TIMEOUT_MS }, () => {
  let agent: ConsulAgent
  // The suite's own agent, stopped after it, is the only one to see this prefix.
  const root = 'rxsem-doctor-acl'

  /** A call with the master token. */
  const admin = async (method: string, path: string, body?: unknown): Promise<unknown> => {
    const res = await fetch(`${agent.url}${path}`, {
      method,
      headers: { 'X-Consul-Token': MASTER },
      ...(body === undefined
        ? {}
        : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    })
    const text = await res.text()
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`)
    return text === '' ? undefined : (JSON.parse(text) as unknown)
  }
  let policies = 0
  /** A token holding a policy of `rules`; returns its secret. */
  const tokenWith = async (rules: string): Promise<string> => {
    const name = `doctor-${++policies}`
    await admin('PUT', '/v1/acl/policy', { Name: name, Rules: rules })
    const token = (await admin('PUT', '/v1/acl/token', { Policies: [{ Name: name }] })) as {
      SecretID: string
    }
    return token.SecretID
  }
  /** Everything left under `root` and every session, as the master token sees them. */
  const leftovers = async () => ({
    keys: ((await admin('GET', `/v1/kv/${root}?recurse`).catch(() => [])) ?? []) as {
      Key: string
      ModifyIndex: number
    }[],
    sessions: (await admin('GET', '/v1/session/list')) as unknown[],
  })

  before(async () => {
    agent = await startAgent({
      hcl: [`acl { enabled = true, default_policy = "deny", tokens { master = "${MASTER}" } }`],
      token: MASTER,
    })
  })
  after(async () => {
    await admin('DELETE', `/v1/kv/${root}?recurse`).catch(() => {})
    await agent.stop()
  })

  const prefixWithLock = `${root}/with-lock`
  const prefixWithout = `${root}/without-lock`
  const run = (token: string, prefix: string) =>
    doctor({ consul: { address: agent.addr, token }, prefix })

  it('finds a token without rights on the prefix, whether .lock exists or not', async (t: TestContext) => {
    await admin('PUT', `/v1/kv/${prefixWithLock}/.lock`, JSON.stringify({ Limit: 2, Holders: {} }))
    // Rights on sessions and on another prefix, none on this one.
    const token = await tokenWith(
      `key_prefix "${root}/elsewhere/" { policy = "write" }\nsession_prefix "" { policy = "write" }`,
    )
    const seen = await leftovers()
    t.diagnostic(`keys before: ${seen.keys.map((k) => k.Key).join(', ')}`)
    for (const prefix of [prefixWithLock, prefixWithout]) {
      const report = await run(token, prefix)
      const read = finding(report, 'prefix-read')
      const write = finding(report, 'prefix-write')
      assert.equal(read.severity, 'problem', prefix)
      assert.match(read.found, /may not read/)
      assert.equal(write.severity, 'problem', prefix)
      assert.match(write.found, /may not write .*Permission denied/)
      assert.match(write.action, new RegExp(`key_prefix "${prefix}/"`))
      // Its sessions are fine: that is not what is wrong.
      assert.equal(finding(report, 'session').severity, 'ok', JSON.stringify(report.findings))
      assert.equal(findingsOf(report, 'lock').length, 0, 'an unreadable .lock is not described')
    }
    assert.deepEqual(await leftovers(), seen)
  })

  it('finds a token that may read the prefix but not write it', async () => {
    const token = await tokenWith(
      `key_prefix "${root}/" { policy = "read" }\nsession_prefix "" { policy = "write" }`,
    )
    const seen = await leftovers()
    for (const prefix of [prefixWithLock, prefixWithout]) {
      const report = await run(token, prefix)
      assert.equal(finding(report, 'prefix-read').severity, 'ok', prefix)
      assert.equal(finding(report, 'prefix-write').severity, 'problem', prefix)
    }
    assert.deepEqual(await leftovers(), seen)
  })

  it('passes the policy of docs/operations.md, and writes nothing with it', async () => {
    const seen = await leftovers()
    for (const prefix of [prefixWithLock, prefixWithout]) {
      const token = await tokenWith(
        `key_prefix "${prefix}/" { policy = "write" }\nsession_prefix "" { policy = "write" }`,
      )
      const report = await run(token, prefix)
      for (const check of [
        'prefix-read',
        'prefix-write',
        'session',
        'checks',
        'lock-delay',
      ] as const) {
        assert.equal(
          finding(report, check).severity,
          'ok',
          `${prefix} ${check}: ${JSON.stringify(report.findings)}`,
        )
      }
      assert.equal(report.problems, 0, JSON.stringify(notOk(report)))
      // The contender's token may not read the agent's description: said, not a problem.
      assert.equal(report.agent, null)
      assert.equal(finding(report, 'version').severity, 'warning')
      assert.match(finding(report, 'acl-default-policy').found, /unknown/)
    }
    assert.deepEqual(await leftovers(), seen)
  })

  it('finds a token without session rights, and one Consul does not know', async () => {
    const noSessions = await tokenWith(`key_prefix "${prefixWithout}/" { policy = "write" }`)
    const report = await run(noSessions, prefixWithout)
    assert.equal(finding(report, 'session').severity, 'problem')
    assert.match(finding(report, 'session').action, /session_prefix/)

    const unknown = await run('00000000-1111-2222-3333-444444444444', prefixWithout)
    assert.equal(finding(unknown, 'acl').severity, 'problem')
    assert.match(finding(unknown, 'acl').found, /does not know the token/)
    assert.equal(finding(unknown, 'prefix-write').severity, 'problem')
  })

  it('reads the default policy with a token that may read the agent', async () => {
    const report = await run(MASTER, prefixWithout)
    assert.equal(finding(report, 'acl-default-policy').found, 'the ACL default policy is "deny"')
    assert.equal(report.problems, 0, JSON.stringify(notOk(report)))
    assert.deepEqual((await leftovers()).sessions, [])
  })
})
