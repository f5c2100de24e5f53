// The two halves of `rxsem run`'s guard without Consul: the lease times read off the client
// (timingLeases), and the watchdog script itself (src/cli/rxsem-watchdog.sh) guarding a real
// process group. What rxsem's death does is in test/integration/cli-run-guard.test.ts.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import type { ConsulClient, SessionInfo } from '../../src/consul/client-api.js'
import { timingLeases } from '../../src/cli/contender.js'
import { startWatchdog, WATCHDOG_GRACE_MS, WATCHDOG_SCRIPT } from '../../src/cli/watchdog.js'
import { processGone } from '../support/consul-agent.js'
import { startTime } from '../support/processes.js'

const script = join(import.meta.dirname, '../../src/cli', WATCHDOG_SCRIPT)

describe('timingLeases', () => {
  const info = (ttlMs: number | undefined): SessionInfo => ({
    id: 's1',
    name: '',
    node: 'n',
    behavior: 'delete',
    ttl: '',
    ttlMs,
    lockDelayMs: 0,
    createIndex: 1n,
  })

  it('reports each successful create and renew with the time its request went out', async () => {
    const seen: [string, number, number | undefined][] = []
    let answer: 'ok' | 'gone' | 'fail' = 'ok'
    const client = {
      session: {
        create: () => () =>
          Promise.resolve(answer === 'ok' ? E.right('s1') : E.left({ _tag: 'Timeout' })),
        renew: () => () =>
          Promise.resolve(
            answer === 'ok'
              ? E.right(info(20_000))
              : answer === 'gone'
                ? E.right(null)
                : E.left({}),
          ),
      },
    } as unknown as ConsulClient
    const timed = timingLeases(client, (session, sentAt, ttlMs) =>
      seen.push([session, sentAt, ttlMs]),
    )
    const create = timed.session.create({ ttl: '10s' })
    const builtAt = Date.now()
    await new Promise((done) => setTimeout(done, 20))
    const before = Date.now()
    await create()
    await timed.session.renew('s1')()
    answer = 'gone'
    await timed.session.renew('s1')()
    answer = 'fail'
    await timed.session.renew('s1')()
    await timed.session.create()()
    assert.equal(seen.length, 2, 'only the two successes')
    const [created, renewed] = seen
    assert.ok(created && renewed)
    assert.equal(created[0], 's1')
    assert.ok(created[1] >= before && created[1] > builtAt, 'timed when run, not when built')
    assert.equal(created[2], undefined, 'a create answers no TTL')
    assert.deepEqual([renewed[0], renewed[2]], ['s1', 20_000])
  })
})

describe('the watchdog script', () => {
  /** The groups started, with when their leader started (see startTime). */
  const groups = new Map<number, string | undefined>()
  after(() => {
    for (const [pgid, started] of groups) {
      if (startTime(pgid) !== started) continue
      try {
        process.kill(-pgid, 'SIGKILL')
      } catch {
        // gone meanwhile
      }
    }
  })

  /** A process group of its own: `sleep 300`, its pid also the group's id. */
  const group = (): number => {
    const child = spawn('sleep', ['300'], { detached: true, stdio: 'ignore' })
    child.unref()
    assert.ok(child.pid !== undefined)
    groups.set(child.pid, startTime(child.pid))
    return child.pid
  }

  it('leaves the group alone and exits on `done`', async () => {
    const watchdog = startWatchdog(script)
    assert.equal(await watchdog.ready, undefined)
    const pgid = group()
    watchdog.guard(pgid, Date.now() + 60_000)
    const end = await watchdog.finish()
    assert.deepEqual([end.fired, end.code], [undefined, 0])
    assert.equal(await processGone(pgid, 0), false, 'the command still runs')
  })

  it('stops the group by the deadline unless it was extended, and says so first', async () => {
    const watchdog = startWatchdog(script)
    assert.equal(await watchdog.ready, undefined)
    const pgid = group()
    const startedAt = Date.now()
    watchdog.guard(pgid, startedAt + 300)
    watchdog.extend(startedAt + 1500)
    const end = await watchdog.ended
    const took = Date.now() - startedAt
    assert.equal(end.fired, 'lease-expired')
    // SIGTERM goes out WATCHDOG_GRACE_MS before the deadline; `sleep` ends on it.
    assert.ok(took >= 1500 - WATCHDOG_GRACE_MS, `not before the extended deadline: ${took} ms`)
    assert.ok(await processGone(pgid, 2000), 'the group is gone')
  })

  it('ends by itself once the group is gone', async () => {
    const watchdog = startWatchdog(script)
    assert.equal(await watchdog.ready, undefined)
    const pgid = group()
    watchdog.guard(pgid, Date.now() + 60_000)
    process.kill(-pgid, 'SIGKILL')
    const end = await watchdog.ended
    assert.deepEqual([end.fired, end.code], [undefined, 0])
  })
})
