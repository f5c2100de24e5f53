// Many withSlot jobs of one process on a prefix shared with Consul's own Go client (`consul lock
// -n 2`), with the Go contenders first in line and with ours first: never more than two holders,
// seen from both sides; every job of ours runs, under a fencing token greater than every earlier
// job's; Go contenders in line ahead of our jobs hold before any of them starts, and Go
// contenders that join behind a backlog of ours hold while it lasts (it never starves them); and
// nothing of ours is left in Consul afterwards.
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it, type TestContext } from 'node:test'
import { withSlot, type WithSlotOptions } from '../../src/index.js'
import { agentSuite } from '../support/agent-suite.js'
import { startConsulLock, stopAllConsulLocks, type CliRun } from '../support/cli.js'
import { mostLiveListed, onEnd, testPrefix } from '../support/tracked.js'
import {
  eventually,
  holdersOf,
  listPrefix,
  readLock,
  sessionsNamed,
  sleep,
} from '../support/observe.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'
import { SafetyRecorder } from '../support/safety-recorder.js'

const LIMIT = 2

/** One `consul lock -n 2` process, whose child logs its start and end and holds until released. */
interface GoContender {
  readonly who: string
  readonly run: CliRun
  /** Whether its child has started: it holds, or held, a slot. */
  readonly started: () => boolean
  /** Its child's hold, from its log: start and end (ms), `to` Infinity while it holds. */
  readonly interval: () => { from: number; to: number } | undefined
  /** Ends its child's hold. */
  readonly release: () => void
}

/** One job of ours, as it ran. */
interface Job {
  readonly index: number
  /** The greatest token of the jobs of ours that had ended when it started. */
  endedBefore?: bigint
  from?: number
  to?: number
  token?: bigint
}

describe('withSlot jobs next to consul lock -n 2', { timeout: SUITE_TIMEOUT_MS }, () => {
  // Registered above agentSuite(), so it runs before the client and the agent close.
  after(() => stopAllConsulLocks())
  const agent = agentSuite()

  /**
   * The shared set-up of a test: a prefix, a folder for the Go children's logs, the recorder of
   * holds on both sides, and a blocking watch of `.lock` counting the live holders it lists.
   */
  function sharedPrefix(t: TestContext, name: string) {
    const dir = mkdtempSync(join(tmpdir(), 'rxsem-interop-jobs-'))
    const goContenders: GoContender[] = []
    // Clean-up in this order, passed or failed: every Go child's hold ends and its consul lock
    // exits, then the folder and the prefix's keys go.
    onEnd(t, async () => {
      goContenders.forEach((go) => go.release())
      await stopAllConsulLocks(goContenders.map((go) => go.run))
      rmSync(dir, { recursive: true, force: true })
    })
    const prefix = testPrefix(t, agent.url, name)
    const sessionName = `interop jobs ${prefix}`
    const recorder = new SafetyRecorder(LIMIT, () => Date.now())
    const mostListed = mostLiveListed(t, agent.client, prefix)

    const startGo = (who: string): GoContender => {
      const log = join(dir, `${who}.log`)
      const released = join(dir, `${who}.release`)
      const run = startConsulLock(agent.addr, [
        `-n=${LIMIT}`,
        prefix,
        `echo start $(date +%s%3N) >> ${log}; while [ ! -e ${released} ]; do sleep 0.02; done; ` +
          `echo end $(date +%s%3N) >> ${log}`,
      ])
      const lines = () => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n') : [])
      const at = (word: string) => {
        const line = lines().find((l) => l.startsWith(`${word} `))
        return line === undefined ? undefined : Number(line.split(' ')[1])
      }
      const go: GoContender = {
        who,
        run,
        started: () => at('start') !== undefined,
        interval: () => {
          const from = at('start')
          return from === undefined ? undefined : { from, to: at('end') ?? Infinity }
        },
        release: () => writeFileSync(released, ''),
      }
      goContenders.push(go)
      return go
    }

    const jobs: Job[] = []
    let ended: bigint | undefined
    /** Submits one job of ours: it holds until `hold()` resolves. */
    const submitJob = (options: WithSlotOptions, hold: () => Promise<unknown>): Promise<void> => {
      const job: Job = { index: jobs.length }
      jobs.push(job)
      return withSlot(options, async (_signal, slot) => {
        job.endedBefore = ended
        job.from = Date.now()
        const token = (job.token = slot.assertHolding())
        recorder.record(`job${job.index}`, true, job.from)
        await hold()
        job.to = Date.now()
        recorder.record(`job${job.index}`, false, job.to)
        if (ended === undefined || token > ended) ended = token
      })
    }

    /** The contender keys at `prefix` in line order, each marked as ours or Go's, and who holds. */
    const line = async () => {
      const [entries, ours] = await Promise.all([
        listPrefix(agent.url, prefix),
        sessionsNamed(agent.url, sessionName),
      ])
      const lock = entries.find((e) => e.Key === `${prefix}/.lock`)
      const listed = new Set(lock ? holdersOf(JSON.parse(text(lock.Value)) as unknown) : [])
      const mine = new Set(ours.map((s) => s.ID))
      const keys = entries
        .filter((e) => e.Session !== undefined && e.Key === `${prefix}/${e.Session}`)
        .sort((x, y) => x.CreateIndex - y.CreateIndex)
        .map((e) => ({ ours: mine.has(e.Session ?? ''), holds: listed.has(e.Session ?? '') }))
      return { waiting: keys.filter((k) => !k.holds), holding: keys.filter((k) => k.holds) }
    }

    /** Every assertion both tests make once everything has run. */
    const assertSafeAndClean = async (total: number) => {
      const codes = await Promise.all(goContenders.map((go) => go.run.exited))
      assert.deepEqual(
        codes,
        goContenders.map(() => 0),
        'every consul lock ran its child and exited 0',
      )
      for (const go of goContenders) {
        const interval = go.interval()
        assert.ok(interval && interval.to !== Infinity, `${go.who} held and ended its hold`)
        recorder.addInterval({ who: go.who, ...interval })
      }
      assert.equal(jobs.length, total)
      assert.ok(
        jobs.every((j) => j.to !== undefined),
        'every job of ours ran to its end',
      )
      assert.ok(
        recorder.maxConcurrent() <= LIMIT,
        `at most ${LIMIT} held at once, ours and Go's, saw ${recorder.maxConcurrent()}`,
      )
      assert.ok(
        mostListed() <= LIMIT,
        `.lock listed at most ${LIMIT} live holders, saw ${mostListed()}`,
      )
      assert.equal(new Set(jobs.map((j) => j.token)).size, total, 'a token of its own per job')
      for (const job of jobs) {
        assert.ok(
          job.token !== undefined && (job.endedBefore === undefined || job.token > job.endedBefore),
          `job${job.index} started under token ${job.token} after a job of ours under ` +
            `${job.endedBefore} had ended`,
        )
      }
      await eventually(
        'no session, contender key or holder of ours or of consul lock left',
        async () => {
          const sessions = await sessionsNamed(agent.url, sessionName)
          const keys = (await listPrefix(agent.url, prefix)).filter(
            (e) => e.Key !== `${prefix}/.lock`,
          )
          const lock = await readLock(agent.url, prefix)
          return sessions.length === 0 && keys.length === 0 && holdersOf(lock?.body).length === 0
            ? true
            : undefined
        },
        30_000,
      )
    }

    return { prefix, sessionName, recorder, jobs, startGo, submitJob, line, assertSafeAndClean }
  }

  it('serves the consul lock processes first in line before 30 jobs of ours queued behind them, never more than 2 holders', async (t) => {
    const { prefix, sessionName, jobs, startGo, submitJob, line, assertSafeAndClean } =
      sharedPrefix(t, 'interop-jobs-go-first')
    // Two Go contenders hold and two wait, all four in line before any job of ours is submitted.
    const goHolders = [startGo('go0'), startGo('go1')]
    await eventually(
      'go0 and go1 hold',
      () => goHolders.every((g) => g.started()) || undefined,
      60_000,
    )
    const goWaiters = [startGo('go2'), startGo('go3')]
    await eventually(
      'go2 and go3 wait behind them',
      async () => ((await line()).waiting.length === 2 ? true : undefined),
      60_000,
    )
    const submittedAt = Date.now()
    // Their grace (how long a slot may stay free for those ahead before a waiter tries anyway)
    // outlasts any stall of a loaded machine: ours never jump a slow consul lock.
    const options = {
      prefix,
      limit: LIMIT,
      consul: agent.client,
      sessionName,
      fairness: { graceMs: 60_000 },
    }
    const done = Array.from({ length: 30 }, () => submitJob(options, () => sleep(20)))
    const queued = await eventually(
      'jobs of ours in line behind the consul lock processes',
      async () => {
        const now = await line()
        return now.waiting.some((k) => k.ours) ? now : undefined
      },
      60_000,
    )
    assert.deepEqual(
      queued.waiting.slice(0, 2).map((k) => (k.ours ? 'ours' : 'go')),
      ['go', 'go'],
      'the consul lock processes wait first in line',
    )
    assert.ok(
      queued.holding.every((k) => !k.ours),
      'no job of ours holds while the consul lock processes hold every slot',
    )

    // go0 and go1 leave, and go2 and go3, first in line, take both slots.
    goHolders.forEach((g) => g.release())
    await eventually(
      'go2 and go3 hold',
      () => goWaiters.every((g) => g.started()) || undefined,
      60_000,
    )
    // go2 leaves: a job of ours holds beside go3, then go3 leaves too.
    goWaiters[0]?.release()
    await eventually(
      'three jobs of ours have run beside go3',
      () => (jobs.filter((j) => j.to !== undefined).length >= 3 ? true : undefined),
      60_000,
    )
    goWaiters[1]?.release()
    await Promise.all(done)

    await assertSafeAndClean(30)
    const firstJobStart = Math.min(...jobs.map((j) => j.from ?? Infinity))
    assert.ok(firstJobStart >= submittedAt)
    for (const go of [...goHolders, ...goWaiters]) {
      const from = go.interval()?.from ?? Infinity
      assert.ok(
        from <= firstJobStart,
        `${go.who}, in line before the jobs were submitted, held before the first job started`,
      )
    }
    const go3 = goWaiters[1]?.interval()
    assert.ok(
      jobs.some((j) => go3 && (j.from ?? Infinity) < go3.to && (j.to ?? -Infinity) > go3.from),
      'a job of ours held beside a consul lock process',
    )
  })

  it('gives consul lock processes that join while 15 jobs of ours wait their turn before our backlog (15 more after them) is over, never more than 2 holders', async (t) => {
    const { prefix, sessionName, jobs, startGo, submitJob, line, assertSafeAndClean } =
      sharedPrefix(t, 'interop-jobs-ours-first')
    const options = {
      prefix,
      limit: LIMIT,
      consul: agent.client,
      sessionName,
      fairness: { graceMs: 60_000 },
    }
    // The first wave holds until the Go contenders are in line (and 20 ms more per job).
    let openGate = (): void => undefined
    const gate = new Promise<void>((resolve) => (openGate = resolve))
    onEnd(t, openGate)
    const firstWave = Array.from({ length: 15 }, () =>
      submitJob(options, () => gate.then(() => sleep(20))),
    )
    await eventually(
      'two jobs of ours hold',
      () => (jobs.filter((j) => j.from !== undefined).length === 2 ? true : undefined),
      60_000,
    )
    const go = [startGo('go0'), startGo('go1'), startGo('go2')]
    await eventually(
      'the three consul lock processes in line',
      async () => {
        const now = await line()
        return now.waiting.filter((k) => !k.ours).length === 3 ? true : undefined
      },
      60_000,
    )
    const goInLineAt = Date.now()
    const secondWave = Array.from({ length: 15 }, () => submitJob(options, () => sleep(20)))
    openGate()
    // Each Go contender holds 100 ms once it has a slot.
    const released = go.map((g) =>
      eventually(`${g.who} holds`, () => g.started() || undefined, 60_000).then(async () => {
        await sleep(100)
        g.release()
      }),
    )
    await Promise.all([...firstWave, ...secondWave, ...released])

    await assertSafeAndClean(30)
    // A Go contender's turn: it holds while jobs of ours are still waiting to start, so that a
    // backlog of ours never keeps it out until the backlog is over. (Its child logs its start a
    // little after consul lock took the slot, so "before any job of the second wave" would
    // count that latency against it; the second wave outlasts it many times over.)
    const lastJobStart = Math.max(...jobs.map((j) => j.from ?? Infinity))
    for (const g of go) {
      const from = g.interval()?.from ?? Infinity
      const startedWhileWaiting = jobs.filter(
        (j) => (j.from ?? Infinity) > goInLineAt && (j.from ?? 0) < from,
      ).length
      t.diagnostic(
        `${g.who} held after ${startedWhileWaiting} jobs of ours started while it waited`,
      )
      assert.ok(
        from < lastJobStart,
        `${g.who} held only after the last job of ours started: starved by our backlog`,
      )
    }
  })
})

/** A raw entry's value as text ('' when empty). */
function text(value: string | null): string {
  return value === null ? '' : Buffer.from(value, 'base64').toString('utf8')
}
