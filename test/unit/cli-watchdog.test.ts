// The watchdog script of `rxsem run` without Consul (src/cli/rxsem-watchdog.sh), guarding a real
// process group. What rxsem's death does is in test/integration/cli-run-guard.test.ts.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { startWatchdog, WATCHDOG_GRACE_MS, WATCHDOG_SCRIPT } from '../../src/cli/run/watchdog.js'
import { processGone } from '../support/consul-agent.js'
import { startTime } from '../support/processes.js'

const script = join(import.meta.dirname, '../../src/cli', WATCHDOG_SCRIPT)

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
    // The first deadline leaves the watchdog 2 s past its grace to read the extension, which
    // follows at once: a loaded machine can keep it from reading for several hundred ms.
    watchdog.guard(pgid, startedAt + WATCHDOG_GRACE_MS + 2000)
    watchdog.extend(startedAt + WATCHDOG_GRACE_MS + 3500)
    const end = await watchdog.ended
    const took = Date.now() - startedAt
    assert.equal(end.fired, 'lease-expired')
    // SIGTERM goes out WATCHDOG_GRACE_MS before the deadline; `sleep` ends on it.
    assert.ok(took >= 3500, `not before the extended deadline: ${took} ms`)
    assert.ok(await processGone(pgid, 2000), 'the group is gone')
  })

  it('completes a line that a timed-out read cut in two, rather than losing its first part', async () => {
    // A loaded machine can stop the watchdog between two bytes of a line; its `read -t` then times
    // out with half a line. Here the line is written in two parts, a wait longer than the
    // watchdog's idle check (1 s) apart: `d`, then `eadline <ms>`.
    const bash = spawn('bash', [script, '200'], { stdio: ['pipe', 'pipe', 'pipe'] })
    let stderr = ''
    bash.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    const ended = new Promise<number | null>((done) => bash.once('exit', (code) => done(code)))
    const pgid = group()
    let stdout = ''
    bash.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    const firstDeadline = Date.now() + 2500
    bash.stdin.write(`guard ${pgid} ${firstDeadline}\n`)
    bash.stdin.write('d')
    // The pause is the fault under test (longer than the idle check), not a wait for a state.
    await new Promise((done) => setTimeout(done, 1300))
    bash.stdin.write(`eadline ${Date.now() + 60_000}\n`)
    // Nothing is to happen, so the state waited for is the moment the first deadline is behind
    // us (with the watchdog's own check after it): had the line been lost, the watchdog would
    // have fired then.
    while (Date.now() < firstDeadline + 500) {
      await new Promise((done) => setTimeout(done, 50))
    }
    assert.doesNotMatch(stdout, /fired/)
    assert.equal(await processGone(pgid, 0), false, `the group was stopped:\n${stderr}`)
    bash.stdin.end('done\n')
    assert.equal(await ended, 0)
    assert.doesNotMatch(stderr, /ignored/)
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
