// Proves the fault proxy against a real Consul agent: what passes reaches the agent, what a fault
// answers never does, silence stays silent even for answers already on their way, and close()
// leaves nothing behind that would keep a test process alive.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { after, afterEach, before, beforeEach, describe, it } from 'node:test'
import { setTimeout as sleep } from 'node:timers/promises'
import { Agent, request } from 'node:http'
import { freePort, sharedAgent } from '../support/consul-agent.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import { testPrefix, type Scope } from '../support/tracked.js'

async function until(what: string, condition: () => boolean, withinMs = 3000): Promise<void> {
  const deadline = Date.now() + withinMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await sleep(10)
  }
}

describe('the fault proxy', () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  let proxy: FaultProxy

  before(async () => {
    consul = await sharedAgent()
  })
  beforeEach(async () => {
    proxy = await startFaultProxy(consul.addr)
  })
  afterEach(async () => {
    await proxy.close()
  })
  after(() => consul.close())

  /** A key under a prefix of the test `t`'s own, deleted when the test ends. */
  const newKey = (t: Scope, name: string): string =>
    `${testPrefix(t, consul.url, 'fault-proxy')}/${name}`
  const agentValue = async (key: string): Promise<string | undefined> => {
    const res = await fetch(`${consul.url}/v1/kv/${key}?raw`)
    return res.status === 404 ? undefined : res.text()
  }

  it('forwards a KV PUT and GET to the real agent in pass mode', async (t) => {
    const key = newKey(t, 'pass')
    const put = await fetch(`${proxy.url}/v1/kv/${key}?flags=42`, {
      method: 'PUT',
      body: 'through the proxy',
    })
    assert.equal(put.status, 200)
    assert.equal((await put.text()).trim(), 'true')
    assert.equal(await agentValue(key), 'through the proxy', 'the agent holds what was PUT')

    const get = await fetch(`${proxy.url}/v1/kv/${key}`)
    assert.equal(get.status, 200)
    assert.match(get.headers.get('x-consul-index') ?? '', /^\d+$/, 'agent headers come back')
    const [entry] = (await get.json()) as { Key: string; Flags: number; Value: string }[]
    assert.equal(entry?.Key, key)
    assert.equal(entry?.Flags, 42, 'the query string reached the agent')
    assert.equal(Buffer.from(entry?.Value ?? '', 'base64').toString(), 'through the proxy')

    const missing = await fetch(`${proxy.url}/v1/kv/${key}-absent`)
    assert.equal(missing.status, 404, 'agent statuses come back as they are')
    await missing.arrayBuffer()
  })

  it("records each forwarded answer's status, and its body when short (a CAS's true or false)", async (t) => {
    const key = newKey(t, 'answers')
    proxy.resetCounts()
    await (await fetch(`${proxy.url}/v1/kv/${key}?cas=0`, { method: 'PUT', body: 'a' })).text()
    await (await fetch(`${proxy.url}/v1/kv/${key}?cas=0`, { method: 'PUT', body: 'b' })).text()
    await (await fetch(`${proxy.url}/v1/kv/${key}-absent`)).arrayBuffer()
    await (await fetch(`${proxy.url}/v1/kv/${key}`)).arrayBuffer()
    await until('every answer recorded', () =>
      proxy.requests().every((r) => r.answer !== undefined),
    )
    const [won, lost, missing, read] = proxy.requests().map((r) => r.answer)
    assert.equal(won?.status, 200)
    assert.equal(won?.body?.trim(), 'true')
    assert.equal(lost?.body?.trim(), 'false')
    assert.equal(missing?.status, 404)
    assert.equal(read?.status, 200)
  })

  it('counts every request by method and path without the query string', async (t) => {
    const key = newKey(t, 'counted')
    await (await fetch(`${proxy.url}/v1/kv/${key}`, { method: 'PUT', body: 'x' })).text()
    proxy.resetCounts()
    await (await fetch(`${proxy.url}/v1/kv/${key}?raw`)).text()
    await (await fetch(`${proxy.url}/v1/kv/${key}?index=1`)).text()
    proxy.setMode('error500')
    await (await fetch(`${proxy.url}/v1/kv/${key}`, { method: 'PUT', body: 'y' })).text()

    assert.deepEqual(
      proxy.counts(),
      new Map([
        [`GET /v1/kv/${key}`, 2],
        [`PUT /v1/kv/${key}`, 1],
      ]),
    )
    assert.deepEqual(
      proxy.requests().map((r) => `${r.method} ${r.path} ${r.query}`),
      [`GET /v1/kv/${key} raw`, `GET /v1/kv/${key} index=1`, `PUT /v1/kv/${key} `],
    )
    proxy.resetCounts()
    assert.equal(proxy.counts().size, 0)
    assert.equal(proxy.requests().length, 0)
  })

  it('answers 500 in error500 mode without contacting the agent', async (t) => {
    const key = newKey(t, 'error500')
    proxy.setMode('error500')
    const res = await fetch(`${proxy.url}/v1/kv/${key}`, { method: 'PUT', body: 'lost' })
    assert.equal(res.status, 500)
    assert.equal(await res.text(), 'fault proxy: injected error')
    assert.equal(await agentValue(key), undefined, 'the PUT never reached the agent')
  })

  it('answers a chosen status and body without contacting the agent', async (t) => {
    const key = newKey(t, 'status')
    proxy.setMode({ status: 429, body: 'slow down' })
    const res = await fetch(`${proxy.url}/v1/kv/${key}`, { method: 'PUT', body: 'lost' })
    assert.equal(res.status, 429)
    assert.equal(await res.text(), 'slow down')
    assert.equal(await agentValue(key), undefined)
  })

  it('resets the connection in close mode', async () => {
    proxy.setMode('close')
    await assert.rejects(fetch(`${proxy.url}/v1/status/leader`), TypeError)
    assert.equal(proxy.counts().get('GET /v1/status/leader'), 1)
  })

  it('never answers in blackhole mode', async (t) => {
    const key = newKey(t, 'blackhole')
    proxy.setMode('blackhole')
    // Silent for 300 ms once the PUT is at the proxy (a 300 ms timeout from the start could end
    // before a loaded machine had even delivered it), then given up by the client.
    const stop = new AbortController()
    const put = fetch(`${proxy.url}/v1/kv/${key}`, {
      method: 'PUT',
      body: 'lost',
      signal: stop.signal,
    }).then(
      () => 'answered',
      (error: Error) => error.name,
    )
    await until('the PUT at the proxy', () => proxy.counts().get(`PUT /v1/kv/${key}`) === 1)
    assert.equal(await Promise.race([put, sleep(300).then(() => 'silent')]), 'silent')
    stop.abort()
    assert.equal(await put, 'AbortError')
    assert.equal(proxy.counts().get(`PUT /v1/kv/${key}`), 1)
    assert.equal(await agentValue(key), undefined, 'the PUT never reached the agent')
  })

  it('swallows the answer to a long poll already in flight once switched to blackhole', async (t) => {
    const key = newKey(t, 'long-poll')
    await fetch(`${consul.url}/v1/kv/${key}`, { method: 'PUT', body: 'v1' })
    const index = (await fetch(`${consul.url}/v1/kv/${key}`)).headers.get('x-consul-index')
    assert.match(index ?? '', /^\d+$/)

    const abort = new AbortController()
    const longPoll = fetch(`${proxy.url}/v1/kv/${key}?index=${index}&wait=5s`, {
      signal: abort.signal,
    }).then(
      () => 'answered',
      () => 'failed',
    )
    await until('the long poll to reach the agent', () => proxy.inFlight() === 1)
    proxy.setMode('blackhole')
    await fetch(`${consul.url}/v1/kv/${key}`, { method: 'PUT', body: 'v2' })
    await until('the agent to answer the long poll', () => proxy.droppedAnswers() === 1)

    const outcome = await Promise.race([longPoll, sleep(1000).then(() => 'silent')])
    assert.equal(outcome, 'silent', 'the client heard nothing though the agent answered')
    abort.abort()
    assert.equal(await longPoll, 'failed')
  })

  it('answers other requests while long polls wait at the agent', async (t) => {
    const key = newKey(t, 'many-polls')
    await fetch(`${consul.url}/v1/kv/${key}`, { method: 'PUT', body: 'v1' })
    const index = (await fetch(`${consul.url}/v1/kv/${key}`)).headers.get('x-consul-index')
    const abort = new AbortController()
    const polls = Array.from({ length: 3 }, () =>
      fetch(`${proxy.url}/v1/kv/${key}?index=${index}&wait=30s`, { signal: abort.signal }).catch(
        () => undefined,
      ),
    )
    try {
      await until('the long polls to reach the agent', () => proxy.inFlight() === 3)
      const started = performance.now()
      const res = await fetch(`${proxy.url}/v1/kv/${key}?raw`)
      assert.equal(await res.text(), 'v1')
      const elapsed = performance.now() - started
      // Queued behind them it would wait their 30 s; 10 s leaves a loaded machine its slowness.
      assert.ok(elapsed < 10_000, `queued behind the long polls for ${elapsed.toFixed(0)} ms`)
    } finally {
      abort.abort()
      await Promise.all(polls)
    }
    await until('aborted long polls to be cancelled upstream', () => proxy.inFlight() === 0)
  })

  it('forwards after the configured latency', async () => {
    proxy.setMode({ latencyMs: 300 })
    const started = performance.now()
    const res = await fetch(`${proxy.url}/v1/status/leader`)
    const elapsed = performance.now() - started
    assert.equal(res.status, 200)
    assert.match(await res.text(), /^"127\.0\.0\.1:\d+"/, 'the real leader answered')
    assert.ok(elapsed >= 300, `answered after ${elapsed.toFixed(0)} ms`)
  })

  it('answers garbage as 200 application/json without contacting the agent', async (t) => {
    const key = newKey(t, 'garbage')
    proxy.setMode({ garbage: '{"Key": [not json' })
    const res = await fetch(`${proxy.url}/v1/kv/${key}`, { method: 'PUT', body: 'lost' })
    assert.equal(res.status, 200)
    assert.equal(res.headers.get('content-type'), 'application/json')
    assert.equal(await res.text(), '{"Key": [not json')
    assert.equal(await agentValue(key), undefined)
  })

  it('answers an oversized response as a valid JSON array of the requested size', async () => {
    proxy.setMode({ oversized: 3_000_000 })
    const res = await fetch(`${proxy.url}/v1/kv/anything?recurse`)
    assert.equal(res.status, 200)
    assert.equal(res.headers.get('content-type'), 'application/json')
    const body = await res.text()
    assert.equal(Buffer.byteLength(body), 3_000_000)
    const parsed: unknown = JSON.parse(body)
    assert.ok(Array.isArray(parsed) && parsed.length > 1000, 'an array of many items')

    proxy.setMode({ oversized: 5 })
    assert.deepEqual(await (await fetch(`${proxy.url}/v1/kv/small`)).json(), [])
  })

  it('answers every request 500 in random mode with error500: 1', async () => {
    proxy.setMode({ random: { error500: 1, close: 1, latencyP: 1, latencyMs: 10_000 } })
    const statuses = await Promise.all(
      Array.from({ length: 10 }, async () => {
        const res = await fetch(`${proxy.url}/v1/status/leader`)
        await res.arrayBuffer()
        return res.status
      }),
    )
    assert.deepEqual(statuses, Array<number>(10).fill(500))
    assert.equal(proxy.counts().get('GET /v1/status/leader'), 10)
  })

  it('draws faults in random mode in the order error500, close, latency', async () => {
    const draws = [0.9, 0.1, 0.5, 0.5, 0.9, 0.5, 0.5, 0.1, 0.5]
    const seeded = await startFaultProxy(consul.addr, { random: () => draws.shift() ?? 0 })
    try {
      seeded.setMode({ random: { error500: 0.5, close: 0.5, latencyP: 0.5, latencyMs: 400 } })
      // 0.9 is not below error500, 0.1 is below close: the connection is reset.
      await assert.rejects(fetch(`${seeded.url}/v1/status/leader`), TypeError)
      // 0.5, 0.5, 0.9: no fault at all, passed at once.
      const passed = await fetch(`${seeded.url}/v1/status/leader`)
      assert.equal(passed.status, 200)
      await passed.text()
      // 0.5, 0.5, then 0.1 is below latencyP: delayed by 0.5 × 400 ms.
      const started = performance.now()
      const delayed = await fetch(`${seeded.url}/v1/status/leader`)
      const elapsed = performance.now() - started
      assert.equal(delayed.status, 200)
      await delayed.text()
      assert.ok(elapsed >= 200, `answered after ${elapsed.toFixed(0)} ms`)
      assert.equal(draws.length, 0, 'one draw per decision, no more')
    } finally {
      await seeded.close()
    }
  })

  it('answers 502 with a clear body when the agent cannot be reached', async () => {
    const nobody = await startFaultProxy(`127.0.0.1:${await freePort()}`)
    try {
      const res = await fetch(`${nobody.url}/v1/status/leader`)
      assert.equal(res.status, 502)
      assert.match(
        await res.text(),
        /^fault proxy: upstream 127\.0\.0\.1:\d+ failed: .*ECONNREFUSED/,
      )
    } finally {
      await nobody.close()
    }
  })

  it('serves many requests over one client keep-alive connection', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 })
    const get = (path: string): Promise<number> =>
      new Promise((resolve, reject) => {
        const target = new URL(path, proxy.url)
        request(target, { agent }, (response) => {
          response.resume()
          response.on('end', () => resolve(response.statusCode ?? 0))
          response.on('error', reject)
        })
          .on('error', reject)
          .end()
      })
    try {
      for (let i = 0; i < 5; i++) assert.equal(await get('/v1/status/leader'), 200)
      proxy.setMode('error500')
      assert.equal(await get('/v1/agent/self'), 500)
      assert.equal(proxy.requests().length, 6)
      assert.equal(proxy.openConnections(), 1)
    } finally {
      agent.destroy()
    }
    await until('the connection to close', () => proxy.openConnections() === 0)
  })

  it('lets the process exit once closed, with requests held, delayed and in flight', async () => {
    // Everything below would keep the child alive for a minute if close() left it behind: a
    // listener, an idle upstream keep-alive socket, a long poll upstream, a latency timer, and
    // client sockets (one aborted, one left open by its client) that blackhole never answers.
    const script = `
      import { connect } from 'node:net'
      import { startFaultProxy } from './test/support/fault-proxy.ts'
      const proxy = await startFaultProxy(${JSON.stringify(consul.addr)})
      const port = Number(proxy.addr.split(':')[1])
      const send = async (request) => {
        const before = proxy.requests().length
        const socket = connect(port, '127.0.0.1')
        socket.on('error', () => {})
        socket.write(request)
        while (proxy.requests().length === before) await new Promise((r) => setTimeout(r, 5))
      }
      const missing = await fetch(proxy.url + '/v1/kv/rxsem-test/fault-proxy-exit/none')
      await missing.arrayBuffer()
      const index = missing.headers.get('x-consul-index')
      await send('GET /v1/kv/rxsem-test/fault-proxy-exit/none?index=' + index + '&wait=60s HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')
      while (proxy.inFlight() !== 1) await new Promise((r) => setTimeout(r, 5))
      proxy.setMode({ latencyMs: 60000 })
      await send('GET /v1/status/leader HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')
      proxy.setMode('blackhole')
      await send('GET /v1/status/leader HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')
      await fetch(proxy.url + '/v1/status/leader', { signal: AbortSignal.timeout(200) }).catch(() => {})
      await proxy.close()
      console.log('closed')
    `
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
      },
    )
    let out = ''
    let closedAt: number | undefined
    // The child gets 10 s after close() to exit; starting it (node and tsx) may take longer than
    // that on a loaded machine, and is not what is tested.
    const kill = () => child.kill('SIGKILL')
    let killer = setTimeout(kill, 60_000)
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString()
      if (out.includes('closed') && closedAt === undefined) {
        closedAt = performance.now()
        clearTimeout(killer)
        killer = setTimeout(kill, 10_000)
      }
    })
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((done) =>
      child.once('exit', (c, s) => done([c, s])),
    )
    clearTimeout(killer)
    assert.equal(signal, null, 'the child had to be killed: something kept it alive')
    assert.equal(code, 0)
    assert.ok(closedAt !== undefined, `the child never closed the proxy: ${out}`)
    const lingered = performance.now() - closedAt
    assert.ok(lingered < 2000, `the child lived ${lingered.toFixed(0)} ms after close()`)
  })
})
