// `consul lock -n 2` in the situation of partition.test.ts: its CLI cut off from Consul by a
// blackholing proxy while it holds. Measured for comparison: how long until its child is stopped,
// and when another contender takes over. An overlap here is a finding about `consul lock`, reported
// in docs/reliability.md, not a failure of this library; our own contenders must never overlap.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { filter, firstValueFrom } from 'rxjs'
import { semaphore } from '../../src/index.js'
import { agentSuite } from '../support/agent-suite.js'
import { consulBin, processGone } from '../support/consul-agent.js'
import { testPrefix } from '../support/tracked.js'
import { startFaultProxy } from '../support/fault-proxy.js'
import { eventually, listPrefix } from '../support/observe.js'
import { SafetyRecorder } from '../support/safety-recorder.js'

/** consul lock's sessions: the Go client's default TTL. */
const TTL_MS = 15_000

/** Signals the process group of a child started `detached` (the CLI and its shell child). */
function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return
  try {
    process.kill(-pid, signal)
  } catch {
    // already gone
  }
}

describe('a partitioned consul lock -n 2 holder (comparison)', () => {
  const agent = agentSuite()

  it('measures consul lock -n 2 in the same situation (for comparison; its overlap is a finding)', async (t) => {
    const prefix = testPrefix(t, agent.url, 'partition-consul-lock')
    const dir = mkdtempSync(join(tmpdir(), 'rxsem-partition-'))
    const log = join(dir, 'child.log')
    const proxy = await startFaultProxy(agent.addr)
    const recorder = new SafetyRecorder(2, () => Date.now())
    const script =
      `echo start $(date +%s%3N) >> ${log}; ` +
      `trap 'echo end $(date +%s%3N) >> ${log}; exit 0' TERM; ` +
      'while true; do sleep 0.1; done'
    const cli = spawn(consulBin(), ['lock', '-n=2', `-http-addr=${proxy.addr}`, prefix, script], {
      stdio: 'ignore',
      detached: true,
    })
    const cliExited = new Promise((done) => cli.once('exit', done))
    const logged = (word: string): number | undefined => {
      try {
        const line = readFileSync(log, 'utf8')
          .split('\n')
          .find((l) => l.startsWith(word))
        return line === undefined ? undefined : Number(line.split(' ')[1])
      } catch {
        return undefined
      }
    }
    const a = semaphore({ prefix, limit: 2, consul: agent.client })
    const b = semaphore({ prefix, limit: 2, consul: agent.client })
    const subs = [a.holding$.subscribe((h) => recorder.record('ours-a', h))]
    try {
      // consul lock starts, and holds, when a loaded machine gets to it.
      const childStart = await eventually(
        'consul lock runs its child',
        () => logged('start'),
        60_000,
      )
      await firstValueFrom(a.holding$.pipe(filter(Boolean)))
      // b starts once a holds, so that b is the one that waits.
      subs.push(b.holding$.subscribe((h) => recorder.record('ours-b', h)))
      await firstValueFrom(b.state$.pipe(filter((s) => s.rank === 0)))
      const cutAt = Date.now()
      proxy.setMode('blackhole')
      await firstValueFrom(b.holding$.pipe(filter(Boolean)))
      const takenAt = Date.now()
      // Watch a while longer for the CLI to notice and stop its child.
      const observeUntil = takenAt + 10_000
      await eventually(
        'the observation window',
        () => (logged('end') !== undefined || Date.now() >= observeUntil ? true : undefined),
        20_000,
      )
      const childEnd = logged('end')
      recorder.addInterval({ who: 'consul-lock-child', from: childStart, to: childEnd ?? Infinity })
      const overlaps = recorder.overlaps()
      for (const o of overlaps) {
        assert.ok(
          o.who.includes('consul-lock-child'),
          `our contenders overlapped: ${o.who.join(', ')}`,
        )
      }
      // Consul keeps a session at least a TTL after its last renewal (sent every TTL/2).
      assert.ok(
        takenAt - cutAt >= TTL_MS / 2,
        'Consul kept the partitioned session at least until its TTL ran out',
      )
      const overlapMs = overlaps.reduce(
        (sum, o) => sum + (Math.min(o.to, observeUntil) - o.from),
        0,
      )
      t.diagnostic(
        `consul lock -n 2: our waiter took over ${takenAt - cutAt} ms after the cut; the child ` +
          (childEnd === undefined
            ? `was still running ${observeUntil - cutAt} ms after the cut (never stopped while partitioned)`
            : `was stopped ${childEnd - cutAt} ms after the cut`) +
          `; overlap beyond the limit: ${overlapMs} ms within the observation window`,
      )
    } finally {
      // Heal: the CLI's hung requests fail when the proxy closes, so it notices the lost lock.
      await proxy.close()
      await a.close()
      await b.close()
      subs.forEach((s) => s.unsubscribe())
      if (cli.exitCode === null) killGroup(cli.pid, 'SIGTERM')
      const stopped = await Promise.race([
        cliExited.then(() => true),
        new Promise<boolean>((d) => setTimeout(() => d(false), 8000)),
      ])
      if (!stopped) killGroup(cli.pid, 'SIGKILL')
      if (cli.pid !== undefined) assert.ok(await processGone(cli.pid, 5000), 'consul lock exited')
      rmSync(dir, { recursive: true, force: true })
    }
    await eventually(
      'the partitioned session invalidated and its key deleted',
      async () => {
        const keys = (await listPrefix(agent.url, prefix)).map((e) => e.Key)
        return keys.every((k) => k === `${prefix}/.lock`) ? true : undefined
      },
      40_000,
    )
  })
})
