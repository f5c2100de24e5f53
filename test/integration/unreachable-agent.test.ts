// A newcomer's first contact with the library when there is no agent at the address: closing a
// contender that never reached Consul ends it quietly, and a contender that cannot reach any
// agent says so within its start-up timeout instead of waiting silently for ever.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { filter, firstValueFrom, lastValueFrom, type Observable } from 'rxjs'
import {
  createConsulClient,
  leaderElection,
  semaphore,
  SemaphoreError,
  tryAcquire,
  withSlot,
  type ConsulClient,
} from '../../src/index.js'
import { freePort, sharedAgent } from '../support/consul-agent.js'
import { startFaultProxy } from '../support/fault-proxy.js'
import { eventually } from '../support/observe.js'
import { closing, keep, testPrefix, type Scope } from '../support/tracked.js'
import { startNotConsul } from '../support/not-consul-server.js'
import { killTree, SUITE_TIMEOUT_MS } from '../support/processes.js'

const fixture = resolve(import.meta.dirname, 'fixtures/close-unreachable.ts')

/** A prefix no agent ever sees, for the contenders that reach none: nothing to clean up. */
const NOWHERE = 'rxsem-test/never-written'

/** Everything a bare subscriber of `source` would have been told, until the test ends. */
function record<T>(t: Scope, source: Observable<T>) {
  const seen = { values: [] as T[], error: undefined as unknown, completed: false }
  keep(
    t,
    source.subscribe({
      next: (value) => seen.values.push(value),
      error: (error: unknown) => (seen.error = error),
      complete: () => (seen.completed = true),
    }),
  )
  return seen
}

describe('a contender whose agent cannot be reached', { timeout: SUITE_TIMEOUT_MS }, () => {
  let nobody: ConsulClient
  let address: string
  before(async () => {
    // A port nothing listens on: every connection is refused at once.
    address = `127.0.0.1:${await freePort()}`
    nobody = createConsulClient({ address })
  })
  after(async () => {
    await nobody.close()
  })

  for (const kind of ['semaphore', 'leader election'] as const) {
    it(`completes holding$ and state$ of a closed ${kind}, with no error to a subscriber`, async (t) => {
      const prefix = NOWHERE
      const contender =
        kind === 'semaphore'
          ? semaphore({ prefix, limit: 1, consul: nobody })
          : leaderElection({ prefix, consul: nobody })
      const holding = record(t, contender.holding$)
      const states = record<{ lastError?: unknown }>(t, contender.state$)
      await eventually('a failed attempt', () =>
        states.values.some((s) => s.lastError !== undefined) ? true : undefined,
      )
      await contender.close()
      await eventually(
        'holding$ and state$ complete',
        () => (holding.completed && states.completed) || holding.error || states.error || undefined,
      )
      assert.equal(holding.error, undefined, 'holding$ errored after close()')
      assert.equal(states.error, undefined, 'state$ errored after close()')
      assert.deepEqual(holding.values, [false])
    })

    it(`lets a process with a bare subscriber to a closed ${kind} exit with status 0`, async () => {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', fixture, kind === 'semaphore' ? 'semaphore' : 'leader'],
        {
          env: { PATH: process.env['PATH'], CONSUL_HTTP_ADDR: address },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      )
      let out = ''
      let err = ''
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
      child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()))
      const code = await new Promise<number | null>((done) => {
        const killer = setTimeout(() => child.pid && killTree(child.pid, 'SIGKILL'), 60_000)
        child.once('close', (status) => {
          clearTimeout(killer)
          done(status)
        })
      })
      assert.equal(code, 0, `exit status ${code}; stderr: ${err}`)
      assert.equal(out, 'closed\n')
      assert.equal(err, '')
    })
  }

  it('rejects withSlot with Unreachable after its startupTimeout, naming the address and what to do', async () => {
    let called = false
    const started = Date.now()
    const failure = withSlot(
      { prefix: NOWHERE, limit: 1, consul: nobody, startupTimeout: '1s' },
      async () => {
        called = true
        return Promise.resolve()
      },
    )
    await assert.rejects(failure, (error: unknown) => {
      assert.ok(error instanceof SemaphoreError)
      assert.equal(error.kind, 'Unreachable')
      assert.ok(error.message.includes(`http://${address}`), error.message)
      assert.match(error.message, /ECONNREFUSED/)
      assert.match(error.message, /CONSUL_HTTP_ADDR/)
      assert.match(error.message, /startupTimeout/)
      assert.doesNotMatch(error.message, /refused the semaphore/)
      return true
    })
    assert.ok(Date.now() - started < 10_000, 'the timeout was not kept')
    assert.equal(called, false)
  })

  it('answers tryAcquire at once with Unreachable', async () => {
    await assert.rejects(
      tryAcquire({ prefix: NOWHERE, limit: 1, consul: nobody }),
      (error: unknown) => error instanceof SemaphoreError && error.kind === 'Unreachable',
    )
  })

  it('keeps retrying after the first contact, past the startupTimeout, and holds again', async (t) => {
    const consul = closing(t, await sharedAgent())
    const proxy = closing(t, await startFaultProxy(consul.addr))
    const client = closing(t, createConsulClient({ address: proxy.addr }))
    const prefix = testPrefix(t, consul.url, 'unreachable-later')
    const sem = closing(t, semaphore({ prefix, limit: 1, consul: client, startupTimeout: '1s' }))
    const states = record(t, sem.state$)
    await firstValueFrom(sem.holding$.pipe(filter(Boolean)))
    proxy.setMode('close')
    proxy.resetCounts()
    await eventually('holding false', () =>
      states.values.at(-1)?.holding === false ? true : undefined,
    )
    // Longer than the start-up timeout, counted in failed attempts rather than by a clock.
    await eventually(
      'failures for 2 s',
      () => {
        const failed = states.values.filter((s) => s.lastError !== undefined)
        return failed.length > 0 && proxy.requests().at(-1)!.at - proxy.requests()[0]!.at > 2000
          ? true
          : undefined
      },
      15_000,
    )
    proxy.setMode('pass')
    await eventually(
      'holding again',
      () => (states.values.at(-1)?.holding ? true : undefined),
      20_000,
    )
    assert.equal(states.error, undefined)
  })
})

describe('a contender of a busy client', { timeout: SUITE_TIMEOUT_MS }, () => {
  it('waits its turn for a connection past its startupTimeout while the agent answers the others', async (t) => {
    const consul = closing(t, await sharedAgent())
    // Each session takes the agent 150 ms to make, and the client has one connection: the last
    // of 16 contenders started at once waits about 2.4 s for its turn, more than its 1 s.
    const proxy = closing(t, await startFaultProxy(consul.addr))
    proxy.setMode({
      when: { method: 'PUT', pathPrefix: '/v1/session/create' },
      then: { latencyMs: 150 },
    })
    const client = closing(t, createConsulClient({ address: proxy.addr, env: {}, connections: 1 }))
    const prefix = testPrefix(t, consul.url, 'busy-client')
    const sems = Array.from({ length: 16 }, () =>
      closing(t, semaphore({ prefix, limit: 16, consul: client, startupTimeout: '1s' })),
    )
    const seen = sems.map((sem) => record(t, sem.state$))
    await eventually(
      'every contender holding, or one failed',
      () =>
        seen.some((s) => s.error !== undefined) ||
        seen.every((s) => s.values.at(-1)?.holding === true)
          ? true
          : undefined,
      30_000,
    )
    assert.deepEqual(
      seen.flatMap((s) =>
        s.error instanceof Error ? [s.error.message] : s.error === undefined ? [] : ['?'],
      ),
      [],
      'no contender called the agent unreachable',
    )
    const creates = proxy.requests().filter((r) => r.path === '/v1/session/create')
    assert.equal(creates.length, 16, 'one session each, none retried')
    assert.ok(
      creates.at(-1)!.at - creates[0]!.at > 1000,
      'the last session request waited longer than the startupTimeout',
    )
  })
})

describe('a contender whose address is not a Consul agent', { timeout: SUITE_TIMEOUT_MS }, () => {
  const answers = [
    { name: '404 text/plain', status: 404, type: 'text/plain', body: 'Not Found' },
    { name: '200 HTML', status: 200, type: 'text/html', body: '<!doctype html><p>hello</p>' },
    {
      name: '501 HTML (python3 -m http.server)',
      status: 501,
      type: 'text/html',
      body: '<p>Unsupported method</p>',
    },
  ]
  for (const answer of answers) {
    it(`errors with NotConsul at once on an answer ${answer.name}`, async () => {
      const server = await startNotConsul(answer.status, answer.type, answer.body)
      const address = server.addr
      const client = createConsulClient({ address })
      try {
        const sem = semaphore({ prefix: NOWHERE, limit: 1, consul: client })
        const started = Date.now()
        await assert.rejects(lastValueFrom(sem.holding$), (error: unknown) => {
          assert.ok(error instanceof SemaphoreError)
          assert.equal(error.kind, 'NotConsul')
          assert.ok(
            error.message.includes(`http://${address} is not a Consul agent`),
            error.message,
          )
          assert.match(error.message, /CONSUL_HTTP_ADDR/)
          return true
        })
        assert.ok(Date.now() - started < 5000, 'not recognised quickly')
        await sem.close()
      } finally {
        await client.close()
        server.close()
      }
    })
  }
})
