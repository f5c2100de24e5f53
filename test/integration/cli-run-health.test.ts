// `rxsem run --health-addr` and `--service-check` end to end: real processes against the real
// agent, probed over HTTP as an orchestrator would, and a service check failed through the
// agent's API.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it, type TestContext } from 'node:test'
import { CLI_START_MS, killAllCli, runCli, startCli, type CliRun } from '../support/cli.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'
import { sharedAgent } from '../support/consul-agent.js'
import { onEnd, testPrefix } from '../support/tracked.js'
import { eventually, listPrefix, sessionsNamed } from '../support/observe.js'
import { PARKED_RECHECK_MS } from '../../src/effects/coordinator/prefix-coordinator.js'

/**
 * How soon after the check fails the next contender's command must start: far below 2 × the 60 s
 * TTL, and below the waiter's own look at the prefix (`PARKED_RECHECK_MS`): a waiter that sleeps
 * on its own key, as `rxsem run` does, must be handed the slot by the process that lost it, not
 * find it free at its next listing.
 */
const AT_ONCE_MS = PARKED_RECHECK_MS / 2

describe('rxsem run --health-addr and --service-check', { timeout: SUITE_TIMEOUT_MS }, () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  let dir: string
  before(async () => {
    consul = await sharedAgent()
    dir = mkdtempSync(join(tmpdir(), 'rxsem-cli-health-'))
  })
  after(async () => {
    killAllCli()
    rmSync(dir, { recursive: true, force: true })
    await consul.close()
  })

  const file = (name: string): string => join(dir, `${name}-${randomUUID().slice(0, 8)}`)
  const start = (args: string[]) => startCli(args, { addr: consul.addr })

  /** The address the run says its endpoint is bound to (on stderr, once). */
  const healthAddress = (run: CliRun): Promise<string> =>
    eventually(
      'the health endpoint address on stderr',
      () => /health endpoint on http:\/\/(\S+) /.exec(run.stderr())?.[1],
      CLI_START_MS,
    )

  const probe = async (address: string, path: string) => {
    const res = await fetch(`http://${address}${path}`)
    return { status: res.status, body: (await res.json()) as Record<string, unknown> }
  }

  /** Whether the endpoint still accepts connections. */
  const accepts = async (address: string): Promise<boolean> => {
    try {
      await (await fetch(`http://${address}/live`)).text()
      return true
    } catch {
      return false
    }
  }

  /** A shell command that waits until `path` exists. */
  const untilFile = (path: string) => `while [ ! -e ${path} ]; do sleep 0.05; done`

  it('answers /ready 503 while waiting and 200 while holding, /live 200 throughout, and stops listening with the command', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-health')
    const [doneA, doneB] = [file('done-a'), file('done-b')]
    onEnd(t, () => (writeFileSync(doneA, ''), writeFileSync(doneB, '')))
    const run = (done: string) =>
      start([
        'run',
        '--prefix',
        prefix,
        '--limit',
        '1',
        '--health-addr',
        '127.0.0.1:0',
        '--shell',
        '--',
        untilFile(done),
      ])

    const a = run(doneA)
    const addressA = await healthAddress(a)
    await eventually(
      'A ready',
      async () => ((await probe(addressA, '/ready')).status === 200 ? true : undefined),
      CLI_START_MS,
    )
    const readyA = await probe(addressA, '/ready')
    assert.equal(readyA.body['holding'], true)
    assert.equal(typeof readyA.body['session'], 'string')

    const b = run(doneB)
    const addressB = await healthAddress(b)
    // B waits in line: its key is under the prefix, next to A's.
    await eventually(
      'B waiting',
      async () => ((await listPrefix(consul.url, prefix)).length === 3 ? true : undefined),
      CLI_START_MS,
    )
    const waiting = await probe(addressB, '/ready')
    assert.equal(waiting.status, 503, 'not ready while waiting')
    assert.equal(waiting.body['status'], 'contending')
    assert.equal((await probe(addressB, '/live')).status, 200, 'alive while waiting')

    writeFileSync(doneA, '')
    assert.equal(await a.exited, 0)
    assert.equal(await accepts(addressA), false, "A's endpoint closed with its command")
    await eventually(
      'B ready',
      async () => ((await probe(addressB, '/ready')).status === 200 ? true : undefined),
      CLI_START_MS,
    )

    writeFileSync(doneB, '')
    assert.equal(await b.exited, 0)
    assert.equal(await accepts(addressB), false, "B's endpoint closed with its command")
  })

  it('refuses a bad --health-addr, and an address in use, before anything is sent to Consul', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-health-bad')
    const name = `cli-health-bad ${prefix}`
    const bad = await runCli(
      ['run', '--prefix', prefix, '--limit', '1', '--health-addr', 'localhost', '--', 'true'],
      { addr: consul.addr },
    )
    assert.equal(bad.code, 1)
    assert.match(bad.stderr, /--health-addr/)

    const taken = createServer()
    await new Promise<void>((listening) => taken.listen(0, '127.0.0.1', listening))
    onEnd(t, () => new Promise<void>((closed) => taken.close(() => closed())))
    const port = (taken.address() as { port: number }).port
    const inUse = await runCli(
      [
        'run',
        '--prefix',
        prefix,
        '--limit',
        '1',
        '--name',
        name,
        '--health-addr',
        `127.0.0.1:${port}`,
        '--',
        'true',
      ],
      { addr: consul.addr },
    )
    assert.equal(inUse.code, 1)
    assert.match(
      inUse.stderr,
      /--health-addr: cannot listen on 127\.0\.0\.1:\d+ .*EADDRINUSE.*started nothing/,
    )
    assert.deepEqual(await listPrefix(consul.url, prefix), [], 'nothing written under the prefix')
    assert.deepEqual(await sessionsNamed(consul.url, name), [], 'no session made')
  })

  /** Registers a service with a TTL check (deregistered after the test); answers the check ID. */
  const registerService = async (t: TestContext, status: 'passing' | 'critical') => {
    const id = `rxsem-cli-web-${randomUUID().slice(0, 8)}`
    const put = async (path: string, body?: object) => {
      const res = await fetch(`${consul.url}${path}`, {
        method: 'PUT',
        ...(body ? { body: JSON.stringify(body) } : {}),
      })
      assert.equal(res.status, 200, await res.text())
    }
    onEnd(t, () => put(`/v1/agent/service/deregister/${id}`))
    await put('/v1/agent/service/register', {
      Name: 'rxsem-cli-web',
      ID: id,
      Check: { CheckID: `${id}-alive`, TTL: '10m', Status: status },
    })
    return { checkId: `${id}-alive`, fail: () => put(`/v1/agent/check/fail/${id}-alive`) }
  }

  it('stops the command (75) the moment its service check goes critical, and hands the slot to the next contender at once', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-service-check')
    const { checkId, fail } = await registerService(t, 'passing')
    const heldFile = file('next-held')
    const holder = start([
      'run',
      '--prefix',
      prefix,
      '--limit',
      '1',
      '--ttl',
      '60s',
      '--service-check',
      checkId,
      '--health-addr',
      '127.0.0.1:0',
      '--',
      'sleep',
      '300',
    ])
    const address = await healthAddress(holder)
    await eventually(
      'holder ready',
      async () => ((await probe(address, '/ready')).status === 200 ? true : undefined),
      CLI_START_MS,
    )
    const next = start([
      'run',
      '--prefix',
      prefix,
      '--limit',
      '1',
      '--shell',
      '--',
      `touch ${heldFile}; sleep 300`,
    ])
    onEnd(t, () => next.child.kill('SIGTERM'))
    await eventually(
      'the next one waiting',
      async () => ((await listPrefix(consul.url, prefix)).length === 3 ? true : undefined),
      CLI_START_MS,
    )

    const failedAt = Date.now()
    await fail()
    const held = await eventually(
      'the next one holding',
      () => (existsSync(heldFile) ? true : undefined),
      AT_ONCE_MS,
    ).catch(() => false)
    const tookMs = Date.now() - failedAt
    assert.ok(
      held,
      `the next contender's command did not start within ${AT_ONCE_MS} ms of the check failing`,
    )
    t.diagnostic(`the next contender's command started ${tookMs} ms after the check went critical`)
    assert.equal(await holder.exited, 75, holder.stderr())
    assert.match(holder.stderr(), /lost slot/)
    next.child.kill('SIGTERM')
    assert.equal(await next.exited, 143)
  })

  it('starts nothing (1) when the service check is critical, and says which check', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-service-check-critical')
    const { checkId } = await registerService(t, 'critical')
    const ran = file('ran')
    const result = await runCli(
      [
        'run',
        '--prefix',
        prefix,
        '--limit',
        '1',
        '--service-check',
        checkId,
        '--shell',
        '--',
        `touch ${ran}`,
      ],
      { addr: consul.addr },
    )
    assert.equal(result.code, 1, result.stderr)
    assert.match(result.stderr, new RegExp(`service check '${checkId}' is critical`))
    assert.equal(existsSync(ran), false, 'the command never ran')
  })
})
