// `rxsem doctor` as a user runs it: the built bin against the real agent (and a web server that
// is not one), its text and JSON reports, and its exit statuses: 0 without a problem, 78 with one,
// 1 for bad flags.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { killAllCli, runCli } from '../support/cli.js'
import { sharedAgent } from '../support/consul-agent.js'
import { onEnd, testPrefix } from '../support/tracked.js'
import { startNotConsul } from '../support/not-consul-server.js'
import { listPrefix, sessionsNamed } from '../support/observe.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'

interface DoctorJson {
  address: string
  prefix: string | null
  agent: { version: string; server: boolean | null } | null
  findings: { check: string; severity: string; found: string; action: string }[]
  problems: number
  warnings: number
}

describe('rxsem doctor', { concurrency: 4, timeout: SUITE_TIMEOUT_MS }, () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  before(async () => {
    consul = await sharedAgent()
  })
  after(async () => {
    killAllCli()
    await consul.close()
  })

  const doctorJson = async (
    addr: string,
    ...flags: string[]
  ): Promise<{ code: number; report: DoctorJson; stderr: string }> => {
    const result = await runCli(['doctor', '--json', ...flags], { addr })
    assert.equal(result.stdout.trimEnd().split('\n').length, 1, 'one JSON object on one line')
    return {
      code: result.code,
      report: JSON.parse(result.stdout) as DoctorJson,
      stderr: result.stderr,
    }
  }

  it('exits 0 with every check ok on a healthy agent, and leaves nothing behind', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-doctor')
    const text = await runCli(['doctor', '--prefix', prefix], { addr: consul.addr })
    assert.equal(text.code, 0, text.stdout + text.stderr)
    assert.equal(text.stderr, '')
    assert.match(text.stdout, new RegExp(`^rxsem doctor: http://${consul.addr}, Consul \\d`))
    assert.match(text.stdout, /^ok {7}prefix-write {8}the token may write/m)
    assert.match(text.stdout, /^no problems, no warnings\.$/m)

    const { code, report } = await doctorJson(consul.addr, '--prefix', prefix)
    assert.equal(code, 0)
    assert.equal(report.prefix, prefix)
    assert.equal(report.problems, 0)
    assert.deepEqual(
      report.findings.filter((f) => f.severity !== 'ok'),
      [],
    )
    assert.ok(report.findings.some((f) => f.check === 'session'))
    assert.deepEqual(await sessionsNamed(consul.url, `rxsem doctor ${prefix}`), [])
    assert.deepEqual(await listPrefix(consul.url, prefix), [])
  })

  it('exits 78 when the lock-delay is longer than the TTL', async () => {
    const { code, report } = await doctorJson(consul.addr, '--ttl', '10s', '--lock-delay', '30s')
    assert.equal(code, 78)
    const lockDelay = report.findings.find((f) => f.check === 'lock-delay')
    assert.equal(lockDelay?.severity, 'problem')
    assert.match(lockDelay?.found ?? '', /lock-delay 30s is longer than the TTL 10s/)
    assert.equal(report.problems, 1)
  })

  it('exits 78 for a node check the agent lacks, and 0 with --no-node-checks', async () => {
    const missing = await doctorJson(
      consul.addr,
      '--node-check',
      'serfHealth',
      '--node-check',
      'no-such-check',
    )
    assert.equal(missing.code, 78)
    assert.match(
      missing.report.findings.find((f) => f.check === 'checks')?.found ?? '',
      /node checks serfHealth, no-such-check\): Missing check 'no-such-check'/,
    )
    const none = await doctorJson(consul.addr, '--no-node-checks')
    assert.equal(none.code, 0)
    assert.match(
      none.report.findings.find((f) => f.check === 'checks')?.found ?? '',
      /no node checks/,
    )
  })

  it('exits 78 at an address that is not a Consul agent, naming the flag to fix', async (t) => {
    const server = await startNotConsul(404, 'text/plain', '404 page not found')
    onEnd(t, () => server.close())
    const result = await runCli(['doctor', '--prefix', 'svc/x'], { addr: server.addr })
    assert.equal(result.code, 78, result.stdout + result.stderr)
    assert.match(result.stdout, /^problem {2}agent {15}.*is not a Consul agent/m)
    assert.match(result.stdout, /-> set --http-addr \(or CONSUL_HTTP_ADDR\)/)
    assert.match(result.stdout, /^1 problem, no warnings\.$/m)
  })

  it('exits 78 at an https:// address of a plain-HTTP agent, saying to change the scheme, not to start an agent', async () => {
    const { code, report } = await doctorJson(`https://${consul.addr}`, '--prefix', 'svc/x')
    assert.equal(code, 78, JSON.stringify(report))
    assert.equal(report.problems, 1, JSON.stringify(report.findings))
    const agent = report.findings.find((f) => f.check === 'agent')
    assert.equal(agent?.severity, 'problem', JSON.stringify(report.findings))
    assert.match(
      agent.found,
      new RegExp(`the agent at https://${consul.addr} answered in plain HTTP`),
    )
    assert.match(
      agent.action,
      new RegExp(
        `^set --http-addr \\(or CONSUL_HTTP_ADDR\\) to http://${consul.addr} and CONSUL_HTTP_SSL to false`,
      ),
    )
    assert.doesNotMatch(agent.action, /start (a|the)[\w ]* agent/i)
  })

  it('exits 1 for bad flags, starting nothing', async () => {
    for (const [flags, message] of [
      [['--ttl', '-5s'], /--ttl must be a positive duration/],
      [['--ttl', '5s'], /bad options: --ttl: "5s" must be a duration from 10s to 24h/],
      [['--lock-delay', '2m'], /bad options: --lock-delay: "2m" must be a duration from 0 to 60s/],
      [['--node-check', 'x', '--no-node-checks'], /contradict each other/],
      [['extra'], /unexpected argument "extra"/],
    ] as const) {
      const result = await runCli(['doctor', ...flags], { addr: consul.addr })
      assert.equal(result.code, 1, `${flags.join(' ')}: ${result.stderr}`)
      assert.match(result.stderr, message)
      assert.equal(result.stdout, '')
    }
  })

  it('prints its help with --help', async () => {
    const result = await runCli(['doctor', '--help'])
    assert.equal(result.code, 0)
    assert.match(result.stdout, /^Usage: rxsem doctor/)
    assert.match(result.stdout, /78 at least one problem/)
  })
})
