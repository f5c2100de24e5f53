// A process on its default client that gives its slot back and then ends with `process.exit()`
// (a service's SIGTERM handler: `await sem.close(); process.exit(0)`) leaves no session and no
// contender key in Consul: close() destroys the session before it resolves. A process that ran
// withSlot jobs, whose workers keep their sessions idle for the next job, leaves none either once
// it awaited destroyIdleSessions() before the exit. Each case runs in a child process of its own,
// so that the exit skips `beforeExit` as it does in a service.
import assert from 'node:assert/strict'
import { resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { CloseThenExitMessage } from './fixtures/close-then-exit.js'
import { sharedAgent } from '../support/consul-agent.js'
import { onEnd, testPrefix } from '../support/tracked.js'
import { startChild } from '../support/default-client-child.js'
import { listPrefix, sessionsNamed } from '../support/observe.js'

const fixture = resolve(import.meta.dirname, 'fixtures/close-then-exit.ts')

describe('a process that exits right after giving its slot back', { timeout: 120_000 }, () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  before(async () => {
    consul = await sharedAgent()
  })
  after(async () => {
    await consul.close()
  })

  for (const mode of ['semaphore', 'withSlot'] as const) {
    const how =
      mode === 'semaphore'
        ? '`await sem.close(); process.exit(0)`'
        : '`await withSlot(...); await destroyIdleSessions(); process.exit(0)`'
    it(`leaves no session and no contender key in Consul after ${how}`, async (t) => {
      const prefix = testPrefix(t, consul.url, `close-then-exit-${mode}`)
      const name = `close-then-exit ${prefix}`
      const child = startChild<CloseThenExitMessage>(fixture, [mode, prefix, name], consul.addr)
      onEnd(t, () => child.stop())
      await child.waitFor(
        'a held slot',
        () => child.messages.some((m) => m.type === 'held' || m.type === 'error'),
        30_000,
      )
      const said = child.messages[0]
      assert.equal(said?.type, 'held', `the child said ${JSON.stringify(said)}`)
      // While it holds, its session and key are there to be found by the checks below.
      const live = await sessionsNamed(consul.url, name)
      assert.equal(live.length, 1, `sessions named ${name} while holding: ${JSON.stringify(live)}`)
      if (said.session !== undefined) assert.equal(live[0]?.ID, said.session)
      const keysWhileHeld = (await listPrefix(consul.url, prefix)).map((e) => e.Key)
      assert.ok(keysWhileHeld.includes(`${prefix}/${live[0]?.ID}`), 'its contender key')

      child.child.stdin.end('exit\n')
      const code = await child.exited
      assert.equal(code, 0, `exit code ${code}; stderr: ${child.stderr()}`)

      // Right after the exit, not after a wait: nothing was left to expire by its TTL.
      assert.deepEqual(await sessionsNamed(consul.url, name), [], 'a session left in Consul')
      assert.deepEqual(
        (await listPrefix(consul.url, prefix)).map((e) => e.Key),
        [`${prefix}/.lock`],
        'a key other than .lock left under the prefix',
      )
    })
  }
})
