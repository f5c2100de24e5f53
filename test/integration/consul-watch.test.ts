// watchPrefix against a real agent, through the fault proxy where a failure is needed: snapshots
// on change only, no busy loop, sustained churn followed at the minimum interval, disconnects with
// backoff, recovery snapshots, permanent errors, and a clean teardown (no socket, no timer) on
// unsubscribe.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { after, before, describe, it } from 'node:test'
import { createConsulClient, type ConsulHttpClient } from '../../src/consul/client.js'
import { watchPrefix } from '../../src/consul/watch-prefix.js'
import { sharedAgent } from '../support/consul-agent.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import { sleep } from '../support/observe.js'
import { keysOf, ok, record, until } from './consul-test-kit.js'
import { suiteScope, testPrefix } from '../support/tracked.js'

describe('watchPrefix', () => {
  let agent: Awaited<ReturnType<typeof sharedAgent>>
  let proxy: FaultProxy
  /** Writes go straight to the agent; the watch under test goes through the proxy. */
  let direct: ConsulHttpClient
  let proxied: ConsulHttpClient
  const suite = suiteScope() // registered first: the prefix goes before the agent closes
  const root = testPrefix(suite, () => agent.url, 'consul-watch')
  let n = 0
  const nextPrefix = (): string => `${root}/${++n}`
  /**
   * A prefix with one key in it. The index of an empty prefix is the global KV index, which
   * other test files running meanwhile move; a key makes it the prefix's own.
   */
  const seededPrefix = async (): Promise<string> => {
    const prefix = nextPrefix()
    await ok(direct.kv.put(`${prefix}/seed`, 'x'))
    return prefix
  }

  before(async () => {
    agent = await sharedAgent()
    proxy = await startFaultProxy(agent.addr)
    direct = createConsulClient({ address: agent.addr, env: {} })
    proxied = createConsulClient({ address: proxy.addr, env: {}, requestTimeoutMs: 300 })
  })
  after(async () => {
    await proxied.close()
    await direct.close()
    await proxy.close()
    await agent.close()
  })

  it('emits the current snapshot at once, then one snapshot per change', async () => {
    const prefix = nextPrefix()
    await ok(direct.kv.put(`${prefix}/a`, '1'))
    const watch = record(watchPrefix(proxied, `${prefix}/`, { waitMs: 5000 }))
    try {
      await until(() => watch.snapshots().length === 1, 'the first snapshot')
      assert.deepEqual(keysOf(watch.snapshots()[0]), [`${prefix}/a`])
      await ok(direct.kv.put(`${prefix}/b`, '2'))
      await until(() => watch.snapshots().length === 2, 'the snapshot after a put')
      const second = watch.snapshots()[1]
      assert.deepEqual(keysOf(second), [`${prefix}/a`, `${prefix}/b`])
      assert.ok((second?.index ?? 0n) > (watch.snapshots()[0]?.index ?? 0n))
      await ok(direct.kv.delete(`${prefix}/a`))
      await until(() => watch.snapshots().length === 3, 'the snapshot after a delete')
      assert.deepEqual(keysOf(watch.snapshots()[2]), [`${prefix}/b`])
      assert.deepEqual(watch.disconnects(), [])
    } finally {
      watch.subscription.unsubscribe()
    }
  })

  it('reads first without an index, then blocks on the last index with wait in ms', async () => {
    const prefix = await seededPrefix()
    proxy.resetCounts()
    const watch = record(proxied.watchPrefix(`${prefix}/`, { waitMs: 250 }))
    try {
      await until(() => proxy.requests().length >= 3, 'three polls')
      const [first, second, third] = proxy.requests()
      assert.equal(first?.query, 'recurse')
      const index = watch.snapshots()[0]?.index.toString() ?? 'none'
      assert.equal(second?.query, `recurse&index=${index}&wait=250ms`)
      assert.equal(third?.query, `recurse&index=${index}&wait=250ms`)
    } finally {
      watch.subscription.unsubscribe()
    }
  })

  it('with startIndex, blocks on it from the first request and emits only a later snapshot', async () => {
    const prefix = await seededPrefix()
    const seen = await ok(direct.kv.list(`${prefix}/`))
    proxy.resetCounts()
    const watch = record(proxied.watchPrefix(`${prefix}/`, { waitMs: 250, startIndex: seen.index }))
    try {
      await until(() => proxy.requests().length >= 2, 'two polls')
      for (const request of proxy.requests()) {
        assert.equal(request.query, `recurse&index=${seen.index}&wait=250ms`)
      }
      assert.equal(watch.events.length, 0, 'the snapshot at startIndex is not emitted again')
      await ok(direct.kv.put(`${prefix}/b`, '2'))
      await until(() => watch.snapshots().length === 1, 'the snapshot after a put')
      assert.ok((watch.snapshots()[0]?.index ?? 0n) > seen.index)
    } finally {
      watch.subscription.unsubscribe()
    }
  })

  it('emits nothing when a wait times out with the same index', async () => {
    const prefix = nextPrefix()
    await ok(direct.kv.put(`${prefix}/a`, '1'))
    proxy.resetCounts()
    const watch = record(proxied.watchPrefix(`${prefix}/`, { waitMs: 200 }))
    try {
      // The read, three blocking polls that timed out with the same index, and the next one
      // (counted, not slept for: a loaded machine polls less often than every 200 ms).
      await until(() => proxy.requests().length >= 5, 'four polls after the read', 20_000)
      assert.equal(watch.events.length, 1, JSON.stringify(watch.events.map((e) => e.type)))
    } finally {
      watch.subscription.unsubscribe()
    }
  })

  it('does not busy-loop when the server answers at once with an unchanged index', async () => {
    const prefix = await seededPrefix()
    proxy.resetCounts()
    // wait=1ms: every blocking query comes back at once with the same index.
    const started = Date.now()
    const watch = record(proxied.watchPrefix(`${prefix}/`, { waitMs: 1, minIntervalMs: 100 }))
    try {
      // Twelve polls, at least 1.1 s of them at the minimum interval (a busy loop would make them
      // in a few ms): the bound is on the rate over the time that really passed, which load only
      // lowers.
      await until(() => proxy.requests().length >= 12, 'twelve polls', 20_000)
      const polls = proxy.requests().length
      const elapsed = Date.now() - started
      assert.ok(
        polls <= Math.floor(elapsed / 100) + 2,
        `${polls} polls in ${elapsed} ms with a 100 ms minimum interval`,
      )
      assert.equal(watch.snapshots().length, 1)
    } finally {
      watch.subscription.unsubscribe()
    }
  })

  it('follows sustained churn at one poll per minIntervalMs once its saved burst is spent', async () => {
    const prefix = await seededPrefix()
    const minIntervalMs = 50
    const progressBurst = 3
    // A writer that changes the prefix as fast as the agent takes it: every poll finds a change.
    let writing = true
    let writes = 0
    const writer = (async () => {
      while (writing) await ok(direct.kv.put(`${prefix}/churn`, String(++writes)))
    })()
    proxy.resetCounts()
    const started = Date.now()
    const watch = record(
      proxied.watchPrefix(`${prefix}/`, { waitMs: 5000, minIntervalMs, progressBurst }),
    )
    try {
      // Twenty polls past the first read and the saved burst, at least 1 s of them at the
      // minimum interval: the bound is on the rate over the time that really passed, which load
      // only lowers.
      await until(() => proxy.requests().length >= 1 + progressBurst + 20, 'the polls', 20_000)
      const polls = proxy.requests().length
      const elapsed = Date.now() - started
      const snapshots = watch.snapshots().length
      // The first read, the saved burst, then one a token: one per minIntervalMs.
      const most = 1 + progressBurst + Math.ceil(elapsed / minIntervalMs)
      assert.ok(polls <= most, `${polls} polls in ${elapsed} ms of churn: at most ${most}`)
      assert.ok(writes > polls, `${writes} writes, ${polls} polls: the churn outran the polls`)
      // Every poll answered found a change (the last one may still be out).
      assert.ok(snapshots >= polls - 1, `${snapshots} snapshots of ${polls} polls`)
    } finally {
      writing = false
      await writer
      watch.subscription.unsubscribe()
    }
  })

  it('reports each transient failure at once with capped jittered backoff, then re-emits the unchanged snapshot', async () => {
    const prefix = nextPrefix()
    await ok(direct.kv.put(`${prefix}/a`, '1'))
    const watch = record(
      proxied.watchPrefix(`${prefix}/`, {
        waitMs: 100,
        backoff: { initialMs: 40, maxMs: 160 },
        minIntervalMs: 0,
        random: () => 0.999,
      }),
    )
    try {
      await until(() => watch.snapshots().length === 1, 'the first snapshot')
      const before = watch.snapshots()[0]
      proxy.setMode('error500')
      await until(() => watch.disconnects().length >= 5, 'five disconnects')
      proxy.resetCounts()
      proxy.setMode('pass')
      await until(() => watch.snapshots().length === 2, 'the recovery snapshot')
      const disconnects = watch.disconnects().slice(0, 5)
      assert.deepEqual(
        disconnects.map((d) => [d.attempt, d.retryInMs, d.error._tag]),
        [
          [1, 39, 'ServerError'],
          [2, 79, 'ServerError'],
          [3, 159, 'ServerError'],
          [4, 159, 'ServerError'],
          [5, 159, 'ServerError'],
        ],
      )
      const after = watch.snapshots()[1]
      assert.equal(after?.index, before?.index, 'same index, emitted anyway after a disconnect')
      assert.deepEqual(keysOf(after), keysOf(before))
      assert.equal(
        proxy.requests()[0]?.query,
        'recurse&consistent',
        're-read without blocking, in consistent mode',
      )
      assert.equal(watch.error(), undefined)
    } finally {
      proxy.setMode('pass')
      watch.subscription.unsubscribe()
    }
  })

  it('treats a timeout and a closed socket as transient, and starts the attempts over after a success', async () => {
    const prefix = await seededPrefix()
    const watch = record(
      proxied.watchPrefix(`${prefix}/`, { waitMs: 100, backoff: { initialMs: 10, maxMs: 20 } }),
    )
    try {
      await until(() => watch.snapshots().length === 1, 'the first snapshot')
      proxy.setMode('blackhole')
      await until(() => watch.disconnects().length >= 1, 'a timeout')
      proxy.setMode('close')
      await until(() => watch.disconnects().some((d) => d.error._tag === 'Unreachable'), 'a reset')
      proxy.setMode('pass')
      await until(() => watch.snapshots().length === 2, 'recovery')
      proxy.setMode('close')
      const count = watch.disconnects().length
      await until(() => watch.disconnects().length > count, 'the next failure')
      proxy.setMode('pass')
      assert.equal(watch.disconnects()[0]?.error._tag, 'Timeout')
      assert.equal(watch.disconnects()[count]?.attempt, 1, 'attempts count failures in a row')
      await until(() => watch.snapshots().length === 3, 'recovery again')
    } finally {
      proxy.setMode('pass')
      watch.subscription.unsubscribe()
    }
  })

  it('ends with the typed error on a permanent failure (403, 400, undecodable answer, not an agent)', async () => {
    const prefix = await seededPrefix()
    const cases = [
      [{ status: 403, body: 'Permission denied' }, 'PermissionDenied'],
      [{ status: 400, body: 'Invalid wait time' }, 'BadRequest'],
      [{ status: 200, body: '[{"Key": 1}]', headers: { 'X-Consul-Index': '999' } }, 'DecodeError'],
      // Without the X-Consul-Index header every agent sends, the answer is not an agent's.
      [{ garbage: '[]' }, 'NotConsul'],
    ] as const
    for (const [mode, tag] of cases) {
      const watch = record(proxied.watchPrefix(`${prefix}/`, { waitMs: 100 }))
      await until(() => watch.snapshots().length === 1, 'the first snapshot')
      proxy.setMode(mode)
      await until(() => watch.error() !== undefined, `the ${tag}`)
      proxy.setMode('pass')
      assert.equal((watch.error() as { _tag: string })._tag, tag)
      assert.equal(watch.disconnects().length, 0)
      assert.ok(watch.subscription.closed)
    }
  })

  it('sends the consistency mode with every poll', async () => {
    const prefix = await seededPrefix()
    for (const consistency of ['consistent', 'stale'] as const) {
      proxy.resetCounts()
      const watch = record(proxied.watchPrefix(`${prefix}/`, { waitMs: 100, consistency }))
      await until(() => proxy.requests().length >= 2, 'two polls')
      watch.subscription.unsubscribe()
      for (const r of proxy.requests())
        assert.match(r.query, new RegExp(`(^|&)${consistency}($|&)`))
    }
  })

  it('aborts the poll in flight on unsubscribe: the proxy sees the client leave long before the wait ends', async () => {
    // Seeded: a poll of an empty prefix would wake at every write of the other tests.
    const prefix = await seededPrefix()
    const own = createConsulClient({ address: proxy.addr, env: {} })
    try {
      await until(() => proxy.inFlight() === 0, 'polls of earlier tests to end', 20_000)
      const watch = record(own.watchPrefix(`${prefix}/`, { waitMs: 30_000 }))
      await until(
        () => watch.snapshots().length === 1 && proxy.inFlight() === 1,
        'a blocking poll in flight',
        20_000,
      )
      proxy.resetCounts()
      watch.subscription.unsubscribe()
      // The proxy drops its upstream request when the client's socket closes; without the abort
      // the poll would stay in flight for its 30 s wait.
      await until(() => proxy.inFlight() === 0, 'the poll to be aborted', 5000)
      await sleep(200)
      assert.equal(proxy.requests().length, 0, 'no poll after unsubscribe')
      assert.equal(watch.error(), undefined)
    } finally {
      await own.close()
    }
  })

  it('replaces a long poll that a network failure silenced as soon as the client hears from the agent again', async () => {
    // A blackhole swallows the poll in flight for good (as a firewall that forgot the connection
    // does). Without the replacement the watch would be blind until that poll's timeout: its
    // 30 s wait, plus a sixteenth, plus the request timeout.
    const prefix = await seededPrefix()
    const own = createConsulClient({ address: proxy.addr, env: {}, requestTimeoutMs: 500 })
    try {
      await until(() => proxy.inFlight() === 0, 'polls of earlier tests to end', 20_000)
      const watch = record(own.watchPrefix(`${prefix}/`, { waitMs: 30_000 }))
      await until(
        () => watch.snapshots().length === 1 && proxy.inFlight() === 1,
        'a blocking poll in flight',
        20_000,
      )
      const droppedBefore = proxy.droppedAnswers()
      proxy.setMode('blackhole')
      // A write wakes the poll, and its answer is lost on the way.
      await ok(direct.kv.put(`${prefix}/during`, 'x'))
      await until(() => proxy.droppedAnswers() > droppedBefore, 'the answer to be swallowed')
      // Another call of the same client times out in the blackhole: a network failure.
      const lost = await own.kv.get(`${prefix}/seed`)()
      assert.equal(lost._tag === 'Left' && lost.left._tag, 'Timeout')
      proxy.setMode('pass')
      // The network is back: the next answer the client gets replaces the silenced poll.
      await ok(own.kv.get(`${prefix}/seed`))
      await ok(direct.kv.put(`${prefix}/after`, 'x'))
      await until(
        () => watch.snapshots().some((s) => keysOf(s).includes(`${prefix}/after`)),
        'the write made after the network came back',
        10_000,
      )
      assert.equal(watch.error(), undefined)
      assert.equal(watch.disconnects().length, 0, 'the replaced poll is not a disconnect')
      watch.subscription.unsubscribe()
    } finally {
      await own.close()
    }
  })

  it('checks a long poll still unanswered a second past its wait, when nothing else failed', async () => {
    // A blackhole swallows only the poll's answer and is gone before any other request: nothing
    // tells the client, and with a 30 s request timeout the poll would end 32 s after it left.
    const prefix = await seededPrefix()
    const waitMs = 2000
    const own = createConsulClient({ address: proxy.addr, env: {}, requestTimeoutMs: 30_000 })
    try {
      await until(() => proxy.inFlight() === 0, 'polls of earlier tests to end', 20_000)
      const watch = record(own.watchPrefix(`${prefix}/`, { waitMs }))
      await until(
        () => watch.snapshots().length === 1 && proxy.inFlight() === 1,
        'a blocking poll in flight',
        20_000,
      )
      const leftBy = Date.now()
      const droppedBefore = proxy.droppedAnswers()
      proxy.setMode('blackhole')
      await ok(direct.kv.put(`${prefix}/during`, 'x'))
      await until(() => proxy.droppedAnswers() > droppedBefore, 'the answer to be swallowed')
      proxy.setMode('pass')
      await until(
        () => watch.snapshots().some((s) => keysOf(s).includes(`${prefix}/during`)),
        'the write whose answer was swallowed',
        40_000,
      )
      const seenAfter = Date.now() - leftBy
      // Overdue at 2000 + 125 + 1000 ms after it left; the poll's own timeout is at 32 s.
      assert.ok(seenAfter < waitMs + waitMs / 16 + 1000 + 5000, `seen after ${seenAfter} ms`)
      assert.equal(watch.error(), undefined)
      assert.equal(watch.disconnects().length, 0, 'the checked poll is not a disconnect')
      watch.subscription.unsubscribe()
    } finally {
      await own.close()
    }
  })

  /**
   * Runs a child process that watches; on the first `on` event it says 'ready', and once told
   * (SIGUSR2: a signal listener does not keep a process alive) it unsubscribes and closes the
   * client. It must then exit by itself, long before its 60 s poll or backoff would end.
   */
  const childExits = async (on: 'snapshot' | 'disconnected'): Promise<void> => {
    const prefix = nextPrefix()
    const script = `
      import { createConsulClient } from './src/consul/client.ts'
      const consul = createConsulClient({ address: ${JSON.stringify(proxy.addr)}, env: {} })
      const subscription = consul
        .watchPrefix(${JSON.stringify(`${prefix}/`)}, {
          waitMs: 60000,
          backoff: { initialMs: 60000, maxMs: 60000 },
          random: () => 0.99,
        })
        .subscribe((event) => {
          // Once: an empty prefix answers with the global KV index, which other tests move.
          if (event.type !== ${JSON.stringify(on)} || globalThis.ready) return
          globalThis.ready = true
          process.once('SIGUSR2', async () => {
            subscription.unsubscribe()
            await consul.close()
            console.log('closed')
          })
          console.log('ready')
        })
    `
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    )
    let out = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    const exited = new Promise<number | null>((done) => child.once('exit', done))
    try {
      // Starting node with tsx takes seconds on a loaded machine: waited for, not timed.
      await until(
        () => out.includes('ready') || child.exitCode !== null,
        "the child's event",
        60_000,
      )
      assert.equal(out.trim(), 'ready')
      // After a snapshot: its 60 s blocking poll is in flight at the proxy. After a disconnect:
      // its 60 s backoff timer was set as the failure was reported.
      if (on === 'snapshot') {
        await until(
          () =>
            proxy
              .inFlightRequests()
              // The prefix is listed without its trailing slash (see watchPrefix).
              .some((r) => r.path === `/v1/kv/${prefix}` && r.query.includes('index=')),
          'the blocking poll in flight',
          20_000,
        )
      }
      const told = Date.now()
      child.kill('SIGUSR2')
      const guard = setTimeout(() => child.kill('SIGKILL'), 20_000)
      const code = await exited.finally(() => clearTimeout(guard))
      const elapsed = Date.now() - told
      assert.equal(out.trim(), 'ready\nclosed')
      assert.equal(code, 0)
      assert.ok(
        elapsed < 8000,
        `exited ${elapsed} ms after closing; the poll or backoff lasts 60 s`,
      )
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL')
    }
  }

  it('leaves no socket and no timer behind: a process that unsubscribes mid-poll and closes the client exits by itself', async () => {
    await childExits('snapshot')
  })

  it('leaves no backoff timer behind: a process that unsubscribes while waiting to retry exits by itself', async () => {
    proxy.setMode('error500')
    try {
      await childExits('disconnected')
    } finally {
      proxy.setMode('pass')
    }
  })
})
