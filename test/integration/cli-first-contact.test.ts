// `rxsem` pointed at the wrong thing: no agent, a web server that is not Consul, or an agent with
// ACLs whose token may not read the prefix. Each says what is wrong in one line, with its own exit
// status, instead of waiting silently or printing an empty prefix.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { filter, firstValueFrom, type Subscription } from 'rxjs'
import { createConsulClient, semaphore, type ConsulClient } from '../../src/index.js'
import { CLI_START_MS, killAllCli, runCli, startCli } from '../support/cli.js'
import { freePort, sharedAgent, startAgent, type ConsulAgent } from '../support/consul-agent.js'
import { eventually } from '../support/observe.js'
import { startNotConsul, type NotConsulServer } from '../support/not-consul-server.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'

const ROOT = 'root-token-first-contact'

/** A prefix no agent ever sees, for the commands that reach none: nothing to clean up. */
const NOWHERE = 'rxsem-test/never-written'

describe(
  'rxsem at an address with no agent, not an agent, or an agent over the other protocol',
  { timeout: SUITE_TIMEOUT_MS },
  () => {
    const servers: NotConsulServer[] = []
    let closedPort: number
    let plainAgent: Awaited<ReturnType<typeof sharedAgent>>
    before(async () => {
      plainAgent = await sharedAgent()
      closedPort = await freePort()
      servers.push(
        await startNotConsul(404, 'text/plain', '404 page not found'),
        await startNotConsul(200, 'text/html', '<!doctype html><title>Directory listing</title>'),
      )
    })
    after(async () => {
      killAllCli()
      for (const server of servers) server.close()
      await plainAgent.close()
    })

    for (const [i, what] of ['404 text', '200 HTML'].entries()) {
      it(`rxsem run says in one line that a server answering ${what} is not a Consul agent, and exits 1`, async () => {
        const addr = servers[i]!.addr
        const result = await runCli(['run', '--prefix', NOWHERE, '--limit', '1', '--', 'true'], {
          addr,
        })
        assert.equal(result.code, 1, result.stderr)
        assert.equal(result.stderr.trimEnd().split('\n').length, 1, result.stderr)
        assert.match(result.stderr, new RegExp(`^rxsem: .*http://${addr} is not a Consul agent`))
        // The flag a command-line user sets, not the library's option.
        assert.match(result.stderr, /set --http-addr \(or CONSUL_HTTP_ADDR\) to the HTTP address/)
        assert.doesNotMatch(result.stderr, /address option/)
      })

      it(`rxsem status says that a server answering ${what} is not a Consul agent, and exits 1`, async () => {
        const addr = servers[i]!.addr
        const result = await runCli(['status', '--prefix', NOWHERE], { addr })
        assert.equal(result.code, 1, result.stderr)
        assert.match(result.stderr, new RegExp(`http://${addr} is not a Consul agent`))
        assert.doesNotMatch(result.stderr, /X-Consul-Index header: expected/)
        assert.match(result.stderr, /set --http-addr \(or CONSUL_HTTP_ADDR\)/)
        assert.doesNotMatch(result.stderr, /address option/)
        assert.equal(result.stdout, '')
      })
    }

    it('rxsem run says in one line that an https:// address answered plain HTTP, and exits 1', async () => {
      const result = await runCli(['run', '--prefix', NOWHERE, '--limit', '1', '--', 'true'], {
        addr: `https://${plainAgent.addr}`,
      })
      assert.equal(result.code, 1, result.stderr)
      assert.equal(result.stderr.trimEnd().split('\n').length, 1, result.stderr)
      assert.match(
        result.stderr,
        new RegExp(
          `^rxsem: the TLS settings do not fit the agent, nothing was started: .*the agent at https://${plainAgent.addr} answered in plain HTTP`,
        ),
      )
      assert.match(
        result.stderr,
        new RegExp(`set --http-addr \\(or CONSUL_HTTP_ADDR\\) to http://${plainAgent.addr}`),
      )
      assert.doesNotMatch(result.stderr, /start (a|the)[\w ]* agent/i)
    })

    it('rxsem status says that no agent can be reached, and exits 1', async () => {
      const result = await runCli(['status', '--prefix', NOWHERE], {
        addr: `127.0.0.1:${closedPort}`,
      })
      assert.equal(result.code, 1, result.stderr)
      assert.match(
        result.stderr,
        new RegExp(`cannot reach the Consul agent at http://127\\.0\\.0\\.1:${closedPort}`),
      )
      assert.match(
        result.stderr,
        /check --http-addr \(or CONSUL_HTTP_ADDR\) and that the agent runs/,
      )
    })
  },
)

describe('rxsem with a token that may not read the prefix', { timeout: SUITE_TIMEOUT_MS }, () => {
  let agent: ConsulAgent
  let root: ConsulClient
  let holding: Subscription
  let rootTokenFile: string
  // The suite's own agent, stopped after it, is the only one to see this prefix.
  const prefix = 'rxsem-test/acl-filtered'
  before(async () => {
    agent = await startAgent({
      hcl: [`acl { enabled = true, default_policy = "deny", tokens { master = "${ROOT}" } }`],
      token: ROOT,
    })
    root = createConsulClient({ address: agent.addr, env: { CONSUL_HTTP_TOKEN: ROOT } })
    rootTokenFile = join(mkdtempSync(join(tmpdir(), 'rxsem-acl-')), 'token')
    writeFileSync(rootTokenFile, ROOT)
    // A live holder, which the anonymous token cannot see.
    const sem = semaphore({ prefix, limit: 2, consul: root })
    holding = sem.holding$.subscribe()
    await firstValueFrom(sem.holding$.pipe(filter(Boolean)))
  })
  after(async () => {
    killAllCli()
    holding.unsubscribe()
    await root.close()
    await agent.stop()
  })

  it('rxsem status warns that the listing may be filtered and exits 77', async () => {
    const result = await runCli(['status', '--prefix', prefix], { addr: agent.addr })
    assert.equal(result.code, 77, result.stderr)
    assert.match(result.stderr, new RegExp(`may not read ${prefix}/\\.lock`))
    assert.match(result.stderr, /holders and waiters may be missing/)
    assert.match(result.stderr, /CONSUL_HTTP_TOKEN/)
    assert.match(result.stderr, /docs\/operations\.md/)
  })

  it('rxsem status with a token that may read shows the holder and exits 0', async () => {
    const result = await runCli(
      ['status', '--prefix', prefix, '--json', '--token-file', rootTokenFile],
      { addr: agent.addr },
    )
    assert.equal(result.code, 0, result.stderr)
    assert.equal(result.stderr, '')
    const status = JSON.parse(result.stdout) as { holders: { alive: boolean }[] }
    assert.equal(status.holders.filter((h) => h.alive).length, 1)
  })

  it('rxsem watch shows the same warning', async () => {
    const watch = startCli(['watch', '--prefix', prefix], { addr: agent.addr })
    await eventually(
      'the warning in a frame',
      () => (/INCOMPLETE: the ACL token may not read/.test(watch.stdout()) ? true : undefined),
      CLI_START_MS,
    )
    watch.child.kill('SIGINT')
    assert.equal(await watch.exited, 0)
  })

  it('rxsem run names CONSUL_HTTP_TOKEN and the ACL policy when permission is denied', async () => {
    const result = await runCli(['run', '--prefix', prefix, '--limit', '2', '--', 'true'], {
      addr: agent.addr,
    })
    assert.equal(result.code, 1, result.stderr)
    assert.match(result.stderr, /permission denied/)
    assert.match(result.stderr, /CONSUL_HTTP_TOKEN/)
    assert.match(result.stderr, /"ACL policy" in docs\/operations\.md/)
    // The policy names the prefix, as status and doctor do, and the line is sentences.
    assert.ok(result.stderr.includes(`key_prefix "${prefix}/"`), result.stderr)
    assert.doesNotMatch(result.stderr, /<prefix>|\.[:;]/)
  })

  it('rxsem run tells an unknown token to use one that exists, and nothing about a policy', async (t) => {
    const folder = mkdtempSync(join(tmpdir(), 'rxsem-acl-'))
    t.after(() => rmSync(folder, { recursive: true, force: true }))
    const unknownTokenFile = join(folder, 'token')
    writeFileSync(unknownTokenFile, '6a1e7c5b-0000-4000-8000-000000000000')
    const result = await runCli(
      ['run', '--prefix', prefix, '--limit', '2', '--token-file', unknownTokenFile, '--', 'true'],
      { addr: agent.addr },
    )
    assert.equal(result.code, 1, result.stderr)
    assert.match(result.stderr, /Consul does not know the ACL token/)
    assert.match(result.stderr, /Give the client a token that exists/)
    assert.doesNotMatch(result.stderr, /policy/)
  })
})
