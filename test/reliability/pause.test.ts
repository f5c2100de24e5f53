// A holder whose whole process is stopped (SIGSTOP: a frozen VM or container, a long GC pause)
// for longer than its TTL loses its slot in Consul while it cannot run; another contender takes
// the slot. When the process resumes, Node runs its timers that are due before it reads its
// sockets, so the work's 10 ms timer fires before the library hears or decides anything. The
// synchronous guard (`isHolding()`, which reads the wall clock against the lease deadline) must
// refuse that tick: not one guarded tick may act after the other holder started.
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { after, before, describe, it } from 'node:test'
import { sharedAgent } from '../support/consul-agent.js'
import { eventually, listPrefix, sessionsNamed } from '../support/observe.js'
import { SUITE_TIMEOUT_MS, killTree } from '../support/processes.js'
import { testPrefix, type Scope } from '../support/tracked.js'

interface Line {
  readonly e: 'holding' | 'tick' | 'lost'
  readonly at: number
  readonly token?: string
}

interface Child {
  readonly process: ChildProcess
  readonly lines: Line[]
  readonly exited: Promise<unknown>
}

const started: ChildProcess[] = []

function startChild(addr: string, prefix: string, mode: string): Child {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', join(import.meta.dirname, 'fixtures/paused-holder.ts'), addr, prefix, mode],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  )
  started.push(child)
  const lines: Line[] = []
  if (child.stdout) {
    createInterface({ input: child.stdout }).on('line', (line) =>
      lines.push(JSON.parse(line) as Line),
    )
  }
  return { process: child, lines, exited: new Promise((done) => child.once('exit', done)) }
}

const first = (child: Child, e: Line['e']): Line | undefined => child.lines.find((l) => l.e === e)

/** What one trial saw: ticks of the paused holder at or after the moment the other one held. */
interface Trial {
  readonly mode: string
  readonly ticksAfterTakeover: number
  readonly ticksBeforePause: number
  readonly pausedMs: number
}

async function trial(t: Scope, addr: string, url: string, mode: string): Promise<Trial> {
  const prefix = testPrefix(t, url, `pause-${mode}`)
  const holder = startChild(addr, prefix, mode)
  // Node and tsx take seconds to start on a loaded machine: waited for, not timed.
  await eventually('the holder to hold', () => first(holder, 'holding'), 60_000)
  const taker = startChild(addr, prefix, 'taker')
  await eventually(
    'the taker to queue behind the holder',
    async () => ((await listPrefix(url, `${prefix}/`)).length >= 3 ? true : undefined),
    60_000,
  )
  const ticksBeforePause = holder.lines.filter((l) => l.e === 'tick').length
  assert.ok(ticksBeforePause > 0, `${mode}: the holder was ticking before the pause`)
  holder.process.kill('SIGSTOP')
  const pausedAt = Date.now()
  // TTL 10 s: Consul invalidates the stopped holder's session 10 to 20 s after its last renewal.
  const took = await eventually('the taker to hold', () => first(taker, 'holding'), 60_000)
  holder.process.kill('SIGCONT')
  const pausedMs = Date.now() - pausedAt
  await eventually('the resumed holder to see that it lost', () => first(holder, 'lost'), 30_000)
  const ticksAfterTakeover = holder.lines.filter((l) => l.e === 'tick' && l.at >= took.at).length
  for (const child of [holder, taker]) child.process.kill('SIGTERM')
  await Promise.all([holder.exited, taker.exited])
  return { mode, ticksAfterTakeover, ticksBeforePause, pausedMs }
}

describe('a holder paused past its TTL', { timeout: SUITE_TIMEOUT_MS }, () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  before(async () => {
    consul = await sharedAgent()
  })
  after(async () => {
    for (const child of started) {
      if (child.exitCode === null && child.pid !== undefined) {
        killTree(child.pid, 'SIGCONT')
        killTree(child.pid, 'SIGKILL')
      }
    }
    await consul.close()
  })

  it('acts on no guarded tick after the takeover: 3 trials each for semaphore and withSlot', async (t) => {
    const modes = ['guard', 'guard', 'guard', 'with-slot', 'with-slot', 'with-slot', 'holding$']
    // The trials run side by side (each on its own prefix): one pause lasts 10 to 20 s.
    const trials = await Promise.all(modes.map((mode) => trial(t, consul.addr, consul.url, mode)))
    for (const r of trials) {
      console.log(
        `# ${r.mode}: paused ${r.pausedMs} ms, ${r.ticksBeforePause} ticks before, ` +
          `${r.ticksAfterTakeover} after the takeover`,
      )
    }
    for (const r of trials.filter((x) => x.mode !== 'holding$')) {
      assert.equal(r.ticksAfterTakeover, 0, `${r.mode}: a guarded tick acted after the takeover`)
    }
    // The stopped holders' sessions are gone (invalidated), and every other was destroyed on
    // close: nothing of the trials is left in Consul.
    await eventually('no session of the trials left', async () =>
      (await sessionsNamed(consul.url, 'rx-consul-semaphore rxsem-test/pause-')).length === 0
        ? true
        : undefined,
    )
  })
})
