// Proves the test harness against a real Consul agent: sessions and locks through the raw HTTP
// API (the library's own client is tested in its own files), and that agents never outlive the
// processes that started them.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import {
  processGone,
  sharedAgent,
  startClientAgent,
  startCluster,
} from '../support/consul-agent.js'
import { eventually, listPrefix } from '../support/observe.js'
import { descendants, killTree } from '../support/processes.js'
import { testPrefix } from '../support/tracked.js'

interface RawEntry {
  Key: string
  Session?: string
  LockIndex: number
}

describe('the test harness', () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  before(async () => {
    consul = await sharedAgent()
  })
  after(() => consul.close())

  it('runs a real agent where a TTL session can take a lock, and destroying it releases the lock', async (t) => {
    const key = `${testPrefix(t, consul.url, 'harness')}/leader`
    const created = await fetch(`${consul.url}/v1/session/create`, {
      method: 'PUT',
      body: JSON.stringify({
        Name: 'harness-test',
        TTL: '15s',
        Behavior: 'release',
        LockDelay: '0s',
      }),
    })
    assert.equal(created.status, 200)
    const { ID: session } = (await created.json()) as { ID: string }
    assert.match(session, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)

    const acquired = await fetch(`${consul.url}/v1/kv/${key}?acquire=${session}`, {
      method: 'PUT',
      body: 'node-a',
    })
    assert.equal((await acquired.text()).trim(), 'true')

    const held = (await (await fetch(`${consul.url}/v1/kv/${key}`)).json()) as RawEntry[]
    assert.equal(held[0]?.Session, session)
    assert.equal(held[0]?.LockIndex, 1)

    const destroyed = await fetch(`${consul.url}/v1/session/destroy/${session}`, { method: 'PUT' })
    assert.equal((await destroyed.text()).trim(), 'true')

    const released = (await (await fetch(`${consul.url}/v1/kv/${key}`)).json()) as RawEntry[]
    assert.equal(released[0]?.Session, undefined, 'the lock is released with its session')
    await fetch(`${consul.url}/v1/kv/${key}`, { method: 'DELETE' })
  })

  it('kills the agents a test process started when that process exits', async () => {
    // A child process starts its own agent, prints its pid, and exits without stopping it.
    const script = `
      import { startAgent } from './test/support/consul-agent.ts'
      const agent = await startAgent()
      console.log(agent.pid)
      process.exit(3)
    `
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    )
    let out = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    const code = await new Promise<number | null>((done) => child.once('exit', done))
    assert.equal(code, 3)
    const pid = Number(out.trim())
    assert.ok(pid > 0, `child printed no pid: ${out}`)
    assert.ok(await processGone(pid), `consul pid ${pid} outlived its test process`)
  })

  it('killTree reaches a grandchild in a process group of its own, so the pipes close', async () => {
    // node → detached sleep (its own group), as `rxsem run` starts its command; stdout inherited.
    const script = `require('child_process').spawn('sleep', ['300'], { stdio: 'inherit', detached: true }); setInterval(() => {}, 1000)`
    const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] })
    const closed = new Promise<void>((done) => child.once('close', () => done()))
    const pid = child.pid ?? 0
    // Node starts in far more than the 5 s this once allowed on a loaded machine.
    const below = await eventually(
      'the grandchild to start',
      () => (descendants(pid).length > 0 ? descendants(pid) : undefined),
      60_000,
    )
    assert.equal(below.length, 1, 'the grandchild started')
    killTree(pid, 'SIGKILL')
    await closed
    assert.ok(await processGone(below[0] ?? 0), 'the grandchild is gone')
  })

  it('starts a 3-server cluster on loopback that elects a leader, and stops it', async () => {
    const cluster = await startCluster(3)
    try {
      const leader = await cluster.leader()
      assert.ok(cluster.servers.includes(leader))
      const peers = (await (await fetch(`${leader.url}/v1/status/peers`)).json()) as string[]
      assert.equal(peers.length, 3)
    } finally {
      await cluster.stop()
    }
    for (const s of cluster.servers) {
      assert.ok(s.pid !== undefined && (await processGone(s.pid)), `server ${s.node} still runs`)
    }
  })

  it('starts client agents that join the cluster, forward to its servers, and stop', async () => {
    const cluster = await startCluster(3)
    const clients = []
    try {
      clients.push(await startClientAgent(cluster), await startClientAgent(cluster))
      const leader = await cluster.leader()
      // The cluster is this test's own and stopped at its end: no other test sees the prefix.
      const prefix = 'rxsem-test/harness-client-agents'
      for (const [i, client] of clients.entries()) {
        const self = (await (await fetch(`${client.url}/v1/agent/self`)).json()) as {
          Config: { Server: boolean }
        }
        assert.equal(self.Config.Server, false, 'a client agent, not a server')
        const known = (await (await fetch(`${client.url}/v1/status/leader`)).json()) as string
        assert.equal(known, `127.0.0.1:${leader.ports.server}`)
        const put = await fetch(`${client.url}/v1/kv/${prefix}/${i}`, { method: 'PUT', body: 'x' })
        assert.equal(await put.text(), 'true')
      }
      // Written through the client agents, read from the leader: the writes went to the servers.
      const keys = (await (await fetch(`${leader.url}/v1/kv/${prefix}?keys`)).json()) as string[]
      assert.deepEqual(keys.sort(), [`${prefix}/0`, `${prefix}/1`])
      const members = (await (await fetch(`${leader.url}/v1/agent/members`)).json()) as {
        Name: string
        Status: number
      }[]
      for (const client of clients) {
        assert.ok(
          members.some((m) => m.Name === client.node && m.Status === 1),
          client.node,
        )
      }
    } finally {
      await Promise.all(clients.map((c) => c.stop()))
      await cluster.stop()
    }
    for (const agent of [...clients, ...cluster.servers]) {
      assert.ok(agent.pid !== undefined && (await processGone(agent.pid)), `${agent.node} runs`)
    }
  })

  it('testPrefix deletes the keys and the sessions of a test that fails before its clean-up', async () => {
    const name = `harness-failing-${randomUUID().slice(0, 8)}`
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--test',
        '--test-reporter=tap',
        resolve(import.meta.dirname, 'fixtures/failing-test-prefix.ts'),
      ],
      {
        // Without the runner's NODE_TEST_CONTEXT, the child reports and exits on its own.
        env: {
          ...Object.fromEntries(
            Object.entries(process.env).filter(([key]) => key !== 'NODE_TEST_CONTEXT'),
          ),
          RXSEM_TEST_CONSUL_ADDR: consul.addr,
          RXSEM_FIXTURE_PREFIX_NAME: name,
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()))
    const code = await new Promise<number | null>((done) => child.once('exit', done))
    assert.equal(code, 1, `the fixture's test failed, as it means to:\n${out}`)
    const prefix = /prefix: (\S+)/.exec(out)?.[1] ?? ''
    assert.ok(prefix?.startsWith(`rxsem-test/${name}/`), `it wrote under its prefix:\n${out}`)
    assert.deepEqual(await listPrefix(consul.url, prefix), [], 'the keys are gone')
    const session = /session: (\S+)/.exec(out)?.[1] ?? ''
    assert.ok(session !== '', `it made a session:\n${out}`)
    const info = (await (await fetch(`${consul.url}/v1/session/info/${session}`)).json()) as
      unknown[] | null
    assert.ok(!info?.length, 'the session that held a key under the prefix is destroyed')
  })
})
