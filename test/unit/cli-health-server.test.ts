// `rxsem run`'s health endpoint on its own: what `--health-addr` and `--service-check` parse to,
// and what /ready and /live answer for each state of the contender, on a real socket (port 0).
import assert from 'node:assert/strict'
import { connect } from 'node:net'
import { describe, it, type TestContext } from 'node:test'
import { Subject } from 'rxjs'
import { UsageError } from '../../src/cli/args/parse-flags.js'
import {
  parseHealthAddr,
  startHealthServer,
  type HealthServer,
} from '../../src/cli/run/health-server.js'
import { planRun, type RunPlan } from '../../src/cli/run/plan.js'
import { SemaphoreError } from '../../src/base/semaphore-error.js'
import type { SemaphoreState } from '../../src/recipes/semaphore.js'

const plan = (argv: string[]): RunPlan => {
  const planned = planRun(argv)
  if (planned.help) throw new Error('expected a plan, got --help')
  return planned
}

const waiting: SemaphoreState = {
  holding: false,
  reason: undefined,
  session: 'aaaaaaaa-0000-0000-0000-000000000000',
  contending: true,
  fencingToken: undefined,
  holders: ['bbbbbbbb-0000-0000-0000-000000000000'],
  waiting: [],
  rank: 0,
  estimatedWaitMs: undefined,
  limit: 1,
  connected: true,
  leaseDeadline: undefined,
}

/** GET (or HEAD) `path`: the status and the parsed JSON body. */
async function probe(
  server: HealthServer,
  path: string,
  method = 'GET',
): Promise<{ status: number; body: Record<string, unknown> | undefined }> {
  const res = await fetch(`http://${server.address}${path}`, { method })
  const text = await res.text()
  return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as never) }
}

/** Whether something accepts connections at `address` (host:port). */
function accepts(address: string): Promise<boolean> {
  const at = address.lastIndexOf(':')
  return new Promise((answered) => {
    const socket = connect(Number(address.slice(at + 1)), address.slice(0, at))
    socket.once('connect', () => {
      socket.destroy()
      answered(true)
    })
    socket.once('error', () => answered(false))
  })
}

async function served(t: TestContext, now?: () => number): Promise<HealthServer> {
  const server = await startHealthServer({ host: '127.0.0.1', port: 0 }, now)
  t.after(() => server.close())
  return server
}

describe('rxsem run --health-addr and --service-check', () => {
  it('reads HOST:PORT, [IPv6]:PORT and :PORT, port 0 included', () => {
    assert.deepEqual(parseHealthAddr('127.0.0.1:8080'), { host: '127.0.0.1', port: 8080 })
    assert.deepEqual(parseHealthAddr('localhost:0'), { host: 'localhost', port: 0 })
    assert.deepEqual(parseHealthAddr('[::1]:9000'), { host: '::1', port: 9000 })
    assert.deepEqual(parseHealthAddr(':8080'), { host: '', port: 8080 })
  })

  it('refuses an address without a port, or with a port out of range, as a usage error naming the flag', () => {
    for (const bad of [
      '8080',
      '127.0.0.1',
      '127.0.0.1:',
      'host:65536',
      'host:http',
      '::1:80',
      '',
    ]) {
      assert.throws(
        () => plan(['--prefix', 'p', '--limit', '1', '--health-addr', bad, '--', 'true']),
        (error: unknown) =>
          error instanceof UsageError &&
          /--health-addr/.test(error.message) &&
          error.command === 'run',
        bad,
      )
    }
  })

  it('takes --service-check once per check, and passes none when not given', () => {
    const base = ['--prefix', 'p', '--limit', '1']
    assert.deepEqual(
      plan([...base, '--service-check', 'web-alive', '--service-check', 'db', '--', 'true'])
        .serviceChecks,
      ['web-alive', 'db'],
    )
    assert.equal(plan([...base, '--', 'true']).serviceChecks, undefined)
    assert.deepEqual(plan([...base, '--health-addr', ':0', '--', 'true']).healthAddr, {
      host: '',
      port: 0,
    })
    assert.throws(
      () => plan([...base, '--service-check', '', '--', 'true']),
      (error: unknown) => error instanceof UsageError && /--service-check/.test(error.message),
    )
  })

  it('answers /ready 200 only while the slot is held, and /live 200 while contending or holding', async (t) => {
    const server = await served(t)
    const states = new Subject<SemaphoreState>()
    assert.equal((await probe(server, '/ready')).status, 503, 'not held before any state')
    assert.equal((await probe(server, '/live')).status, 200, 'alive while starting')
    server.follow(states)

    states.next(waiting)
    let ready = await probe(server, '/ready')
    assert.equal(ready.status, 503)
    assert.equal(ready.body?.['status'], 'contending')
    assert.equal((await probe(server, '/live')).status, 200)

    states.next({ ...waiting, holding: true, fencingToken: 42n, holders: [waiting.session ?? ''] })
    ready = await probe(server, '/ready')
    assert.equal(ready.status, 200)
    assert.deepEqual(ready.body, {
      status: 'holding',
      holding: true,
      session: waiting.session,
      fencingToken: '42',
    })
    assert.equal((await probe(server, '/ready', 'HEAD')).status, 200, 'HEAD as GET, no body')

    states.next({ ...waiting, holding: false, reason: 'session-invalidated' })
    ready = await probe(server, '/ready')
    assert.equal(ready.status, 503, 'not ready the moment holding drops')
    assert.equal(ready.body?.['reason'], 'session-invalidated')
    assert.equal((await probe(server, '/live')).status, 200)

    states.error(new SemaphoreError('PermissionDenied', 'the token may not write the prefix'))
    const live = await probe(server, '/live')
    assert.equal(live.status, 503, 'not alive once the contender failed')
    assert.equal(live.body?.['status'], 'failed')
    assert.match(String(live.body?.['error']), /may not write the prefix/)
    assert.equal((await probe(server, '/ready')).status, 503)
    assert.equal((await probe(server, '/nope')).status, 404)
    assert.equal((await probe(server, '/ready', 'POST')).status, 405)
  })

  it('is not ready past the lease deadline, even before the state says the slot dropped', async (t) => {
    let clock = 1_000
    const server = await served(t, () => clock)
    const states = new Subject<SemaphoreState>()
    server.follow(states)
    states.next({ ...waiting, holding: true, leaseDeadline: 2_000 })
    assert.equal((await probe(server, '/ready')).status, 200)
    clock = 2_000
    assert.equal((await probe(server, '/ready')).status, 503)
  })

  it('closes its socket, and the connections of probes kept alive, on close()', async () => {
    const server = await startHealthServer({ host: '127.0.0.1', port: 0 })
    assert.equal(await accepts(server.address), true)
    await probe(server, '/live')
    await server.close()
    assert.equal(await accepts(server.address), false)
  })

  it('fails to start on an address in use, with the listen error', async (t) => {
    const first = await served(t)
    const [host, port] = [first.address.slice(0, first.address.lastIndexOf(':')), first.address]
    const taken = Number(port.slice(port.lastIndexOf(':') + 1))
    await assert.rejects(startHealthServer({ host, port: taken }), /EADDRINUSE/)
  })
})
