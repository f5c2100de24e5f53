// The HTTP transport against a real agent: a unix socket address, and a bounded connection pool.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect, createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { createConsulClient } from '../../src/consul/client.js'
import { sharedAgent } from '../support/consul-agent.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import { failure, ok, until } from './consul-test-kit.js'
import { suiteScope, testPrefix } from '../support/tracked.js'

describe('Consul HTTP transport', () => {
  let agent: Awaited<ReturnType<typeof sharedAgent>>
  let proxy: FaultProxy
  let relay: Server
  const relayed = new Set<Socket>()
  const dir = mkdtempSync(join(tmpdir(), 'rxsem-sock-'))
  const socketPath = join(dir, 'consul.sock')
  const suite = suiteScope() // registered first: the prefix goes before the agent closes
  const prefix = testPrefix(suite, () => agent.url, 'consul-transport')

  before(async () => {
    agent = await sharedAgent()
    proxy = await startFaultProxy(agent.addr)
    // A unix socket in front of the agent's TCP port: bytes are relayed, the agent answers.
    const [host, port] = agent.addr.split(':')
    relay = createServer((client) => {
      const upstream = connect(Number(port), host)
      relayed.add(client).add(upstream)
      client.pipe(upstream).pipe(client)
      const drop = (): void => {
        client.destroy()
        upstream.destroy()
        relayed.delete(client)
        relayed.delete(upstream)
      }
      client.on('error', drop).on('close', drop)
      upstream.on('error', drop).on('close', drop)
    })
    await new Promise<void>((done) => relay.listen(socketPath, done))
  })
  after(async () => {
    for (const s of relayed) s.destroy()
    await new Promise((done) => relay.close(done))
    rmSync(dir, { recursive: true, force: true })
    await proxy.close()
    await agent.close()
  })

  it('talks to the agent over a unix:// address', async () => {
    const consul = createConsulClient({ env: { CONSUL_HTTP_ADDR: `unix://${socketPath}` } })
    try {
      assert.equal(await ok(consul.kv.put(`${prefix}/unix`, 'via socket')), true)
      const entry = await ok(consul.kv.get(`${prefix}/unix`))
      assert.equal(Buffer.from(entry?.value ?? []).toString(), 'via socket')
      assert.equal(await ok(consul.kv.delete(`${prefix}/unix`)), true)
    } finally {
      await consul.close()
    }
  })

  it('opens at most `connections` connections, and keeps one of them from long polls', async () => {
    const consul = createConsulClient({ address: proxy.addr, env: {}, connections: 2 })
    const direct = createConsulClient({ address: agent.addr, env: {} })
    try {
      await until(() => proxy.openConnections() === 0, 'earlier connections to close', 15_000)
      // A key of its own: the index of an empty prefix is the global one, moved by other tests.
      await ok(consul.kv.put(`${prefix}/pool/seed`, 'x'))
      const first = await ok(consul.kv.list(`${prefix}/pool/`))
      const session = await ok(direct.session.create({ ttl: '30s' }))
      // The polls block until the test wakes them (not a 400 ms wait that a loaded machine could
      // let pass before it looked): one is parked, four wait, since the other connection is kept
      // for the calls that are not long polls.
      const polls = Array.from({ length: 5 }, () =>
        consul.kv.list(`${prefix}/pool/`, { index: first.index, waitMs: 30_000 })(),
      )
      await until(() => proxy.inFlight() === 1, 'one poll in flight')
      // A renewal, a write and a read (outside the polled prefix) are answered meanwhile.
      assert.equal((await ok(consul.session.renew(session)))?.id, session)
      assert.equal(await ok(consul.kv.put(`${prefix}/beside`, 'x')), true)
      assert.equal((await ok(consul.kv.get(`${prefix}/beside`)))?.key, `${prefix}/beside`)
      assert.equal(proxy.inFlight(), 1, 'the other four polls still wait')
      assert.ok(proxy.openConnections() <= 2)
      await ok(direct.kv.put(`${prefix}/pool/wake`, 'x'))
      const results = await Promise.all(polls)
      assert.ok(results.every((r) => r._tag === 'Right'))
      assert.ok(proxy.openConnections() <= 2)
      await ok(direct.session.destroy(session))
      assert.equal(await ok(direct.kv.delete(`${prefix}/beside`)), true)
      assert.equal(await ok(direct.kv.delete(`${prefix}/pool/`, { recurse: true })), true)
    } finally {
      await direct.close()
      await consul.close()
    }
  })

  it('times a call from when it has a connection, not while it waits for one; a renewal waits least', async () => {
    const requestTimeoutMs = 300
    const consul = createConsulClient({
      address: proxy.addr,
      env: {},
      connections: 1,
      requestTimeoutMs,
    })
    const direct = createConsulClient({ address: agent.addr, env: {} })
    try {
      await ok(consul.kv.put(`${prefix}/queue/seed`, 'x'))
      const first = await ok(consul.kv.list(`${prefix}/queue/`))
      const session = await ok(direct.session.create({ ttl: '30s' }))
      proxy.resetCounts()
      // A long poll holds the one connection until the test wakes it. Behind it wait a write,
      // then a renewal.
      const poll = consul.kv.list(`${prefix}/queue/`, { index: first.index, waitMs: 30_000 })()
      await until(() => proxy.inFlight() === 1, 'the long poll in flight')
      const queuedAt = Date.now()
      const write = consul.kv.put(`${prefix}/queue/late`, 'x')()
      const renewal = consul.session.renew(session)()
      // Longer than the request timeout, waiting for a connection.
      await until(() => Date.now() - queuedAt > 3 * requestTimeoutMs, 'three request timeouts')
      assert.equal(proxy.requests().length, 1, 'only the poll was sent')
      await ok(direct.kv.put(`${prefix}/queue/wake`, 'x'))
      const [polled, written, renewed] = await Promise.all([poll, write, renewal])
      assert.equal(polled._tag, 'Right')
      assert.deepEqual(written, { _tag: 'Right', right: true }, 'the write did not time out')
      assert.equal(renewed._tag, 'Right', 'the renewal did not time out')
      const kind = (path: string): string =>
        path.startsWith('/v1/session/renew/') ? 'renew' : path.startsWith('/v1/kv/') ? 'kv' : path
      assert.deepEqual(
        proxy.requests().map((r) => kind(r.path)),
        ['kv', 'renew', 'kv'],
        'the renewal went ahead of the write that waited longer',
      )
      await ok(direct.session.destroy(session))
      assert.equal(await ok(direct.kv.delete(`${prefix}/queue/`, { recurse: true })), true)
    } finally {
      await direct.close()
      await consul.close()
    }
  })

  it('sends the datacenter as dc on every call', async () => {
    const consul = createConsulClient({ address: proxy.addr, datacenter: 'dc1', env: {} })
    const elsewhere = createConsulClient({ address: proxy.addr, datacenter: 'nowhere', env: {} })
    try {
      proxy.resetCounts()
      assert.equal(await ok(consul.kv.put(`${prefix}/dc`, 'x')), true)
      assert.equal((await ok(consul.kv.get(`${prefix}/dc`)))?.key, `${prefix}/dc`)
      assert.equal(await ok(consul.kv.delete(`${prefix}/dc`)), true)
      const queries = proxy.requests().map((r) => r.query)
      assert.deepEqual(queries, ['dc=dc1', 'dc=dc1', 'dc=dc1'])
      const error = await failure(elsewhere.kv.get(`${prefix}/dc`))
      assert.equal(error._tag, 'ServerError')
      assert.match(error.message, /No path to datacenter/)
    } finally {
      await elsewhere.close()
      await consul.close()
    }
  })

  it('sends CONSUL_NAMESPACE as ns, which a Community Edition agent refuses with a 400', async () => {
    const consul = createConsulClient({ address: proxy.addr, env: { CONSUL_NAMESPACE: 'team-a' } })
    try {
      proxy.resetCounts()
      const error = await failure(consul.kv.get(`${prefix}/ns`))
      assert.deepEqual(
        proxy.requests().map((r) => r.query),
        ['ns=team-a'],
      )
      assert.equal(error._tag, 'BadRequest')
      assert.match(error.message, /Namespaces are a Consul Enterprise feature/)
    } finally {
      await consul.close()
    }
  })

  it('keeps connections alive between calls', async () => {
    const consul = createConsulClient({ address: proxy.addr, env: {} })
    try {
      await until(() => proxy.openConnections() === 0, 'earlier connections to close', 15_000)
      for (let i = 0; i < 20; i++) await ok(consul.kv.get(`${prefix}/missing`))
      // Still open after the calls ended (kept alive), and reused: not one per call. (The client
      // may open a second one when the next call starts before the first connection is free
      // again.)
      const open = proxy.openConnections()
      assert.ok(open >= 1 && open <= 2, `${open} connections for 20 calls`)
    } finally {
      await consul.close()
    }
  })
})
