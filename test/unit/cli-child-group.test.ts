// The command of `rxsem run` prepared while the slot is awaited (src/cli/run/child-group.ts): a
// waiting `/bin/sh` that becomes the command when started, without Consul. What rxsem does with it
// around a slot is in test/integration/cli-run.test.ts and cli-run-guard.test.ts.
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { prepareChildGroup } from '../../src/cli/run/child-group.js'
import { processGone } from '../support/consul-agent.js'
import { startTime } from '../support/processes.js'

describe('a prepared command', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rxsem-child-group-'))
  /** The processes started, with when they started (see startTime). */
  const started = new Map<number, string | undefined>()
  after(() => {
    for (const [pid, at] of started) {
      if (startTime(pid) !== at) continue
      try {
        process.kill(-pid, 'SIGKILL')
      } catch {
        // gone meanwhile
      }
    }
    rmSync(dir, { recursive: true, force: true })
  })
  const track = (pid: number | undefined): void => {
    if (pid !== undefined) started.set(pid, startTime(pid))
  }

  /** Resolves once `pid` is blocked (state S): the prepared shell waits for its start. */
  const waiting = async (pid: number): Promise<void> => {
    for (;;) {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('S')) return
      await new Promise((done) => setTimeout(done, 10))
    }
  }

  const shell = (line: string): Parameters<typeof prepareChildGroup>[0] => ({
    command: [line],
    shell: true,
    env: process.env,
  })

  it('runs nothing while it waits, and nothing at all when discarded', async () => {
    const marker = join(dir, 'discarded')
    const prepared = prepareChildGroup(shell(`touch ${marker}`))
    track(prepared.pid)
    assert.ok(prepared.pid !== undefined, 'a process waits for the start')
    await waiting(prepared.pid)
    assert.equal(prepared.waiting(), true)
    assert.equal(existsSync(marker), false, 'the command did not run before its start')
    prepared.discard()
    assert.ok(await processGone(prepared.pid, 5000), 'the waiting shell ended')
    assert.equal(existsSync(marker), false, 'the command never ran')
  })

  it('becomes the command when started: the same pid, its own group, guarded before it runs', async () => {
    const out = join(dir, 'started')
    const prepared = prepareChildGroup({
      command: ['sh', '-c', `echo "$$ $(ps -o pgid= -p $$) $RXSEM_SESSION $RXSEM_PREFIX" > ${out}`],
      shell: false,
      env: { ...process.env, RXSEM_PREFIX: 'jobs/a' },
    })
    track(prepared.pid)
    assert.ok(prepared.pid !== undefined)
    await waiting(prepared.pid)
    const guarded: { pgid: number; ranYet: boolean }[] = []
    const child = prepared.start({ RXSEM_SESSION: 'abc-123' }, (pgid) =>
      guarded.push({ pgid, ranYet: existsSync(out) }),
    )
    assert.deepEqual(await child.exited, { type: 'exited', code: 0 })
    const [pid, pgid, session, prefix] = readFileSync(out, 'utf8').trim().split(/\s+/)
    assert.deepEqual(
      [Number(pid), Number(pgid), session, prefix],
      [prepared.pid, prepared.pid, 'abc-123', 'jobs/a'],
    )
    assert.deepEqual(guarded, [{ pgid: prepared.pid, ranYet: false }])
    assert.equal(child.pid, prepared.pid)
  })

  it('gives the command its stdio but not the pipe it was started through', async () => {
    const out = join(dir, 'fds')
    const prepared = prepareChildGroup(shell(`ls /proc/$$/fd > ${out}`))
    track(prepared.pid)
    const child = prepared.start({}, () => {})
    assert.deepEqual(await child.exited, { type: 'exited', code: 0 })
    const fds = readFileSync(out, 'utf8').trim().split('\n').map(Number)
    assert.deepEqual(
      fds.filter((fd) => fd <= 3),
      [0, 1, 2],
      `fds: ${fds.join(' ')}`,
    )
  })

  it('ends as the command ends: its status, or the signal that killed it', async () => {
    const run = (line: string): Promise<unknown> => {
      const prepared = prepareChildGroup(shell(line))
      track(prepared.pid)
      return prepared.start({}, () => {}).exited
    }
    assert.deepEqual(await run('exit 7'), { type: 'exited', code: 7 })
    assert.deepEqual(await run('kill -9 $$'), { type: 'signalled', signal: 'SIGKILL' })
  })

  it('leaves a command it cannot find to spawn, which says why it cannot start', async () => {
    const prepared = prepareChildGroup({
      command: ['no-such-command-rxsem'],
      shell: false,
      env: process.env,
    })
    assert.equal(prepared.pid, undefined, 'nothing waits')
    const guards: number[] = []
    const child = prepared.start({}, (pgid) => guards.push(pgid))
    const exit = await child.exited
    assert.equal(exit.type, 'failed')
    assert.match(exit.type === 'failed' ? exit.error.message : '', /ENOENT/)
    assert.deepEqual(guards, [], 'no group to guard')
  })

  it('starts the command anew when the prepared process is gone', async () => {
    const out = join(dir, 'anew')
    const prepared = prepareChildGroup(shell(`echo $$ > ${out}`))
    track(prepared.pid)
    assert.ok(prepared.pid !== undefined)
    process.kill(prepared.pid, 'SIGKILL')
    assert.ok(await processGone(prepared.pid, 5000))
    // Its end is seen once the event loop has reaped it.
    while (prepared.waiting()) await new Promise((done) => setTimeout(done, 10))
    const child = prepared.start({}, (pgid) => track(pgid))
    assert.deepEqual(await child.exited, { type: 'exited', code: 0 })
    const pid = Number(readFileSync(out, 'utf8').trim())
    assert.notEqual(pid, prepared.pid, 'a new process ran the command')
    assert.equal(child.pid, pid)
  })
})
