// Our contenders and Consul's own Go client (`consul lock -n 3`) share one prefix: never more than
// three holders at once, seen from both sides, and `consul lock` is not upset by our writes.
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { after, describe, it } from 'node:test'
import { filter, firstValueFrom, type Observable, type Subscription } from 'rxjs'
import {
  createConsulClient,
  semaphore,
  SemaphoreError,
  type ConsulClient,
} from '../../src/index.js'
import { startConsulLock, stopAllConsulLocks } from '../support/cli.js'
import { agentSuite } from '../support/agent-suite.js'
import { consulBin } from '../support/consul-agent.js'
import { mostLiveListed, testPrefix } from '../support/tracked.js'
import { startFaultProxy } from '../support/fault-proxy.js'
import {
  SEMAPHORE_FLAGS,
  destroyRawSession,
  eventually,
  holdersOf,
  listPrefix,
  lockBody,
  putRaw,
  sessionsNamed,
} from '../support/observe.js'
import { SUITE_TIMEOUT_MS, killTree } from '../support/processes.js'
import { SafetyRecorder } from '../support/safety-recorder.js'

/** Start and end times (ms) that each `consul lock` child wrote to its log file. */
function childIntervals(file: string): { from: number; to: number }[] {
  const lines = readFileSync(file, 'utf8').trim().split('\n')
  const intervals: { from: number; to: number }[] = []
  for (let i = 0; i + 1 < lines.length; i += 2) {
    const [startWord, from] = (lines[i] ?? '').split(' ')
    const [endWord, to] = (lines[i + 1] ?? '').split(' ')
    assert.equal(startWord, 'start')
    assert.equal(endWord, 'end')
    intervals.push({ from: Number(from), to: Number(to) })
  }
  return intervals
}

/** The file whose creation ends the hold of `consul lock` child `i` started 'until released'. */
const releaseFile = (dir: string, i: number): string => join(dir, `go-${i}.release`)

/** Ends the hold of `consul lock` child `i` started 'until released'. */
const releaseGo = (dir: string, i: number): void => writeFileSync(releaseFile(dir, i), '')

/** Whether the `consul lock` child logging to `file` has started (holds or held its slot). */
function childStarted(file: string): boolean {
  return existsSync(file) && readFileSync(file, 'utf8').startsWith('start')
}

interface QueuedKey {
  readonly session: string
  /** The contender key's value as text ('' when empty). */
  readonly value: string
}

/**
 * The semaphore at `prefix` as Consul lists it now, read independently of the library: the live
 * holders in `.lock`, and the other contender keys (`<prefix>/<session>`, locked by that session)
 * in line order (CreateIndex), which is the order both `consul lock` and ours serve them in.
 */
async function queueAt(
  url: string,
  prefix: string,
): Promise<{ holders: QueuedKey[]; waiting: QueuedKey[] }> {
  const entries = await listPrefix(url, prefix)
  const text = (value: string | null) =>
    value === null ? '' : Buffer.from(value, 'base64').toString('utf8')
  const lock = entries.find((e) => e.Key === `${prefix}/.lock`)
  const listed = new Set(lock?.Value ? holdersOf(JSON.parse(text(lock.Value)) as unknown) : [])
  const contenders = entries
    .filter((e) => e.Session !== undefined && e.Key === `${prefix}/${e.Session}`)
    .sort((x, y) => x.CreateIndex - y.CreateIndex || (x.Key < y.Key ? -1 : 1))
    .map((e) => ({ session: e.Session ?? '', value: text(e.Value) }))
  return {
    holders: contenders.filter((c) => listed.has(c.session)),
    waiting: contenders.filter((c) => !listed.has(c.session)),
  }
}

/**
 * The holders a committed transaction of ours wrote to `<prefix>/.lock` (its `cas`), from the
 * body the proxy forwarded; undefined for any other request.
 */
function lockWrittenBy(sent: string | undefined, prefix: string): string[] | undefined {
  if (sent === undefined || !sent.startsWith('[')) return undefined
  const ops = JSON.parse(sent) as { KV?: { Verb?: string; Key?: string; Value?: string } }[]
  const cas = ops.find((op) => op.KV?.Verb === 'cas' && op.KV.Key === `${prefix}/.lock`)?.KV
  return cas?.Value === undefined ? undefined : holdersOf(lockBody({ Value: cas.Value }))
}

/**
 * Records `sem`'s holding in `recorder` as `who`, and closes it once it has held and `hold()`
 * resolved; resolves then (or rejects with its error). `subs` gets the subscription.
 */
function holdOnce(
  sem: { readonly holding$: Observable<boolean>; close(): Promise<void> },
  who: string,
  recorder: SafetyRecorder,
  subs: Subscription[],
  hold: () => Promise<unknown>,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    subs.push(
      sem.holding$.subscribe({
        next: (holding) => {
          recorder.record(who, holding)
          if (holding)
            void hold()
              .then(() => sem.close())
              .then(resolve, reject)
        },
        error: reject,
      }),
    )
  })
}

describe('semaphore next to consul lock -n', { timeout: SUITE_TIMEOUT_MS }, () => {
  const children: ChildProcess[] = []
  // Registered above agentSuite(), so it runs before the client and the agent close.
  after(async () => {
    for (const child of children)
      if (child.exitCode === null && child.pid) killTree(child.pid, 'SIGKILL')
    await stopAllConsulLocks()
  })
  const agent = agentSuite()

  /**
   * Starts `runs` `consul lock -n <limit>` processes on `prefix`, each holding `holdS` seconds (or,
   * with 'until released', until the test calls `releaseGo(dir, i)`) and logging its start and end
   * in `<dir>/go-<i>.log`; resolves each one's exit code.
   */
  const startGoContenders = (
    prefix: string,
    dir: string,
    { runs, limit, holdS }: { runs: number; limit: number; holdS: number | 'until released' },
  ): Promise<number | null>[] =>
    Array.from({ length: runs }, (_, i) => {
      const log = join(dir, `go-${i}.log`)
      const hold =
        holdS === 'until released'
          ? `while [ ! -e ${releaseFile(dir, i)} ]; do sleep 0.02; done`
          : `sleep ${holdS}`
      const child = spawn(
        consulBin(),
        [
          'lock',
          `-n=${limit}`,
          `-http-addr=${agent.addr}`,
          prefix,
          `echo start $(date +%s%3N) >> ${log}; ${hold}; echo end $(date +%s%3N) >> ${log}`,
        ],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      )
      let stderr = ''
      child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
      children.push(child)
      return new Promise((done) =>
        child.once('exit', (code) => {
          if (code !== 0) console.error(`consul lock ${i} exited ${code}: ${stderr}`)
          done(code)
        }),
      )
    })

  /**
   * Resolves once each of the `runs` `consul lock` processes of startGoContenders has joined the
   * queue at `prefix` (its contender key was listed) or held (its log says so): a process takes
   * a while to start on a loaded machine, and a test of both kinds side by side starts ours only
   * then. Call it before any contender of ours joins: every contender key listed counts as Go's.
   */
  const goJoined = async (prefix: string, dir: string, runs: number): Promise<void> => {
    const seen = new Set<string>()
    await eventually(
      `all ${runs} consul lock processes in the queue`,
      async () => {
        const { holders, waiting } = await queueAt(agent.url, prefix)
        for (const c of [...holders, ...waiting]) seen.add(c.session)
        const held = Array.from({ length: runs }, (_, i) => i).filter((i) =>
          childStarted(join(dir, `go-${i}.log`)),
        ).length
        return seen.size >= runs || held >= runs ? true : undefined
      },
      60_000,
    )
  }

  it('never has more than 3 holders among our contenders and consul lock -n 3 processes', async (t) => {
    const prefix = testPrefix(t, agent.url, 'interop')
    const dir = mkdtempSync(join(tmpdir(), 'rxsem-interop-'))
    const recorder = new SafetyRecorder(3, () => Date.now())

    // Both sides, as Consul shows them: the live holders listed in .lock, at every change.
    const maxListed = mostLiveListed(t, agent.client, prefix)

    const goRuns = 4
    const exits = startGoContenders(prefix, dir, { runs: goRuns, limit: 3, holdS: 0.4 })
    // Ours join once every consul lock process has: both kinds then contend side by side.
    await goJoined(prefix, dir, goRuns)

    // Each of ours holds 400 ms, and the first ones until .lock was seen listing two live holders
    // at once (a slot or two stay free for the others, so someone joins them): the overlap below
    // does not depend on how fast this loaded process reads the watch.
    const overlapSeen = () =>
      eventually(
        '.lock listing two live holders at once',
        () => maxListed() >= 2 || undefined,
        60_000,
      )
    const ours = 4
    const subs: Subscription[] = []
    const done: Promise<void>[] = []
    for (let i = 0; i < ours; i++) {
      const who = `rx${i}`
      const sem = semaphore({ prefix, limit: 3, consul: agent.client, value: who })
      done.push(holdOnce(sem, who, recorder, subs, () => Promise.all([sleep(400), overlapSeen()])))
    }

    const codes = await Promise.all(exits)
    await Promise.all(done)
    subs.forEach((s) => s.unsubscribe())
    for (let i = 0; i < goRuns; i++) {
      for (const interval of childIntervals(join(dir, `go-${i}.log`))) {
        recorder.addInterval({ who: `go${i}`, ...interval })
      }
    }
    rmSync(dir, { recursive: true, force: true })

    assert.deepEqual(codes, [0, 0, 0, 0], 'every consul lock process ran its child and exited 0')
    assert.equal(recorder.intervals().length, goRuns + ours, 'every contender held once')
    assert.ok(
      recorder.maxConcurrent() <= 3,
      `at most 3 held at once, saw ${recorder.maxConcurrent()}`,
    )
    assert.ok(maxListed() <= 3, `.lock never listed more than 3 live holders, saw ${maxListed()}`)
    assert.ok(
      maxListed() >= 2,
      `the two kinds of contender overlapped in .lock (saw ${maxListed()})`,
    )
    await eventually('consul lock cleaned up', async () => {
      const keys = (await listPrefix(agent.url, prefix)).map((e) => e.Key)
      return keys.every((k) => k === `${prefix}/.lock`) ? true : undefined
    })
  })

  for (const clients of ['one client for ours', 'a client each, alone in its process'] as const) {
    it(`serves consul lock -n 2 contenders first in line before ours behind them, never more than 2 holders (${clients})`, async (t) => {
      const prefix = testPrefix(t, agent.url, 'interop-go-first')
      // A contender alone in its process parks on its own key while every holder and waiter ahead
      // of it runs this library: here Go's waiters stand between, and Go's holders release plainly.
      const own: ConsulClient[] = []
      const clientFor = (): ConsulClient => {
        if (clients === 'one client for ours') return agent.client
        const client = createConsulClient({ address: agent.addr, env: {} })
        own.push(client)
        return client
      }
      t.after(() => Promise.all(own.map((c) => c.close())))
      const dir = mkdtempSync(join(tmpdir(), 'rxsem-interop-'))
      const recorder = new SafetyRecorder(2, () => Date.now())
      const done: Promise<void>[] = []
      // Each of ours holds until `hold()` resolves: a and b until the queue behind them is complete,
      // c, d and e 200 ms. Their grace (how long a slot may stay free for those ahead before a waiter
      // tries anyway) outlasts any stall of a loaded machine, so they never jump a slow consul lock.
      const ours = (who: string, hold: () => Promise<unknown>) => {
        const sem = semaphore({
          prefix,
          limit: 2,
          consul: clientFor(),
          value: who,
          fairness: { graceMs: 60_000 },
        })
        const subs: Subscription[] = []
        done.push(holdOnce(sem, who, recorder, subs, hold).finally(() => subs[0]?.unsubscribe()))
      }
      const kind = (c: { value: string }) =>
        ['a', 'b', 'c', 'd', 'e'].includes(c.value) ? c.value : 'go'
      let releaseAB = (): void => undefined
      const abReleased = new Promise<void>((resolve) => (releaseAB = resolve))

      // Two of ours hold; three consul lock -n 2 queue behind them, then three more of ours.
      ours('a', () => abReleased)
      ours('b', () => abReleased)
      await eventually('a and b hold', () =>
        recorder.intervals().filter((i) => i.to === Infinity).length === 2 ? true : undefined,
      )
      const goRuns = 3
      const goLog = (i: number) => join(dir, `go-${i}.log`)
      const exits = startGoContenders(prefix, dir, {
        runs: goRuns,
        limit: 2,
        holdS: 'until released',
      })
      const goQueued = await eventually(
        'the consul lock processes queued behind a and b',
        async () => {
          const queue = await queueAt(agent.url, prefix)
          return queue.waiting.length === goRuns ? queue : undefined
        },
        60_000,
      )
      assert.deepEqual(goQueued.holders.map(kind).sort(), ['a', 'b'], 'a and b hold')
      assert.deepEqual(goQueued.waiting.map(kind), ['go', 'go', 'go'], 'the consul locks wait')
      for (const who of ['c', 'd', 'e']) ours(who, () => sleep(200))
      const queued = await eventually(
        'c, d and e queued behind the consul lock processes',
        async () => {
          const queue = await queueAt(agent.url, prefix)
          return queue.waiting.length === goRuns + 3 ? queue : undefined
        },
        60_000,
      )
      assert.deepEqual(queued.holders.map(kind).sort(), ['a', 'b'], 'a and b still hold')
      const line = queued.waiting.map(kind)
      assert.deepEqual(
        line.slice(0, goRuns),
        ['go', 'go', 'go'],
        `consul locks first: ${line.join(' ')}`,
      )
      assert.deepEqual(
        line.slice(goRuns).sort(),
        ['c', 'd', 'e'],
        `ours behind them: ${line.join(' ')}`,
      )

      // The queue is complete: a and b leave, and the two consul locks first in line take their
      // slots. They hold until one is let go, whose slot the third one (ahead of ours) then takes.
      releaseAB()
      const goHolding = () =>
        Array.from({ length: goRuns }, (_, i) => i).filter((i) => childStarted(goLog(i)))
      const firstTwo = await eventually(
        'two consul locks hold',
        () => (goHolding().length === 2 ? goHolding() : undefined),
        60_000,
      )
      releaseGo(dir, firstTwo[0] ?? 0)
      await eventually(
        'the third consul lock holds',
        () => goHolding().length === goRuns || undefined,
        60_000,
      )
      for (let i = 0; i < goRuns; i++) if (i !== firstTwo[0]) releaseGo(dir, i)

      const codes = await Promise.all(exits)
      await Promise.all(done)
      for (let i = 0; i < goRuns; i++) {
        for (const interval of childIntervals(goLog(i))) {
          recorder.addInterval({ who: `go${i}`, ...interval })
        }
      }
      rmSync(dir, { recursive: true, force: true })
      assert.deepEqual(codes, [0, 0, 0], 'every consul lock ran its child and exited 0')
      const intervals = recorder.intervals()
      assert.equal(intervals.length, goRuns + 5, 'every contender held once')
      const lastGoStart = Math.max(
        ...intervals.filter((i) => i.who.startsWith('go')).map((i) => i.from),
      )
      for (const late of intervals.filter((i) => ['c', 'd', 'e'].includes(i.who))) {
        assert.ok(late.from >= lastGoStart, `${late.who} held only after every consul lock had`)
      }
      assert.ok(recorder.maxConcurrent() <= 2, `at most 2 at once, saw ${recorder.maxConcurrent()}`)
    })
  }

  it('joins replica tenures in one transaction beside consul lock -n 2 processes: never more than 2 holders, everyone served', async (t) => {
    const prefix = testPrefix(t, agent.url, 'interop-join')
    const dir = mkdtempSync(join(tmpdir(), 'rxsem-interop-'))
    const recorder = new SafetyRecorder(2, () => Date.now())
    const proxy = await startFaultProxy(agent.addr)
    // Two replicas with a client each; each runs three tenures one after the other, so that its
    // second and third join on a prefix its client has seen (with Go's .lock in it).
    const replicaClients = [0, 1].map(() => createConsulClient({ address: proxy.addr, env: {} }))
    const tenure = (c: ConsulClient, who: string): Promise<void> => {
      const sem = semaphore({ prefix, limit: 2, consul: c, value: who })
      let sub: Subscription | undefined
      return new Promise<void>((resolve, reject) => {
        sub = sem.holding$.subscribe({
          next: (holding) => {
            recorder.record(who, holding)
            if (holding) setTimeout(() => void sem.close().then(resolve, reject), 150)
          },
          error: reject,
        })
      }).finally(() => sub?.unsubscribe())
    }
    try {
      const goRuns = 3
      const exits = startGoContenders(prefix, dir, { runs: goRuns, limit: 2, holdS: 0.3 })
      // The replicas start once every consul lock process has joined, so that they contend beside
      // them (not after them, as a slow start on a loaded machine made it) on the .lock both write.
      await goJoined(prefix, dir, goRuns)
      await Promise.all(
        replicaClients.map(async (c, r) => {
          for (let t = 0; t < 3; t++) await tenure(c, `rx${r}.${t}`)
        }),
      )
      const codes = await Promise.all(exits)
      for (let i = 0; i < goRuns; i++) {
        for (const interval of childIntervals(join(dir, `go-${i}.log`))) {
          recorder.addInterval({ who: `go${i}`, ...interval })
        }
      }
      assert.deepEqual(codes, [0, 0, 0], 'every consul lock ran its child and exited 0')
      assert.equal(recorder.intervals().length, goRuns + 6, 'every contender held once')
      assert.ok(recorder.maxConcurrent() <= 2, `at most 2 at once, saw ${recorder.maxConcurrent()}`)
      const joins = proxy
        .requests()
        .filter((q) => q.path === '/v1/txn' && q.sent?.includes('"Verb":"get-tree"'))
      assert.equal(joins.length, 4, "each replica's second and third tenure joined in one txn")
      assert.ok(
        joins.every((q) => q.answer?.status === 200),
        'every join committed',
      )
    } finally {
      rmSync(dir, { recursive: true, force: true })
      await Promise.all(replicaClients.map((c) => c.close()))
      await proxy.close()
      await eventually('consul lock cleaned up', async () => {
        const keys = (await listPrefix(agent.url, prefix)).map((e) => e.Key)
        return keys.every((k) => k === `${prefix}/.lock`) ? true : undefined
      })
    }
  })

  it('writes the keys of ours that join together in one transaction, behind a consul lock -n 2 waiter first in line: never more than 2 holders, Go served first', async (t) => {
    const prefix = testPrefix(t, agent.url, 'interop-batch')
    const dir = mkdtempSync(join(tmpdir(), 'rxsem-interop-'))
    const recorder = new SafetyRecorder(2, () => Date.now())
    const proxy = await startFaultProxy(agent.addr)
    // The first key of ours written alone waits 300 ms at the proxy: the keys of the others,
    // asked for meanwhile, go together in one transaction.
    proxy.setMode({
      when: { method: 'PUT', pathPrefix: `/v1/kv/${prefix}/`, query: /(^|&)acquire=/ },
      then: { latencyMs: 300 },
    })
    const client = createConsulClient({ address: proxy.addr, env: {} })
    const subs: Subscription[] = []
    const done: Promise<void>[] = []
    const ours = ['a', 'b', 'c', 'd', 'e', 'f']
    try {
      const goRuns = 3
      const goLog = (i: number) => join(dir, `go-${i}.log`)
      const exits = startGoContenders(prefix, dir, {
        runs: goRuns,
        limit: 2,
        holdS: 'until released',
      })
      const started = () =>
        Array.from({ length: goRuns }, (_, i) => i).filter((i) => childStarted(goLog(i)))
      const goWaiter = await eventually(
        'two consul locks hold, the third waits',
        async () => {
          const { waiting } = await queueAt(agent.url, prefix)
          const holding = started()
          if (holding.length !== 2 || waiting.length !== 1) return undefined
          return [0, 1, 2].find((i) => !holding.includes(i))
        },
        60_000,
      )
      for (const who of ours) {
        const sem = semaphore({ prefix, limit: 2, consul: client, value: who })
        done.push(holdOnce(sem, who, recorder, subs, () => sleep(100)))
      }
      const queued = await eventually(
        'ours queued behind the consul lock waiter',
        async () => {
          const queue = await queueAt(agent.url, prefix)
          return queue.waiting.length === 1 + ours.length ? queue : undefined
        },
        60_000,
      )
      const line = queued.waiting.map((c) => (ours.includes(c.value) ? c.value : 'go'))
      assert.equal(line[0], 'go', `the consul lock waiter first: ${line.join(' ')}`)
      const together = proxy
        .requests()
        .filter(
          (q) =>
            q.method === 'PUT' &&
            q.path === '/v1/txn' &&
            (q.sent?.match(/"Verb":"lock"/g)?.length ?? 0) >= 2,
        )
      assert.ok(together.length >= 1, 'keys of ours went together in one transaction')
      assert.ok(
        together.every((q) => q.answer?.status === 200),
        'every such transaction committed',
      )

      // The consul locks holding leave; the one waiting takes a slot before any of ours: every
      // write of `.lock` of ours while it holds lists it.
      const goSession = queued.waiting[0]?.session ?? assert.fail('no consul lock waiter')
      for (const i of started()) releaseGo(dir, i)
      await eventually(
        'the third consul lock holds',
        () => childStarted(goLog(goWaiter)) || undefined,
        60_000,
      )
      const oursWhileGoHolds = proxy.requests().flatMap((q) => {
        const written = q.answer?.status === 200 ? lockWrittenBy(q.sent, prefix) : undefined
        return written === undefined ? [] : [written]
      })
      releaseGo(dir, goWaiter)
      const codes = await Promise.all(exits)
      await Promise.all(done)
      for (let i = 0; i < goRuns; i++) {
        for (const interval of childIntervals(goLog(i))) {
          recorder.addInterval({ who: `go${i}`, ...interval })
        }
      }
      assert.deepEqual(codes, [0, 0, 0], 'every consul lock ran its child and exited 0')
      const intervals = recorder.intervals()
      assert.equal(intervals.length, goRuns + ours.length, 'every contender held once')
      for (const holders of oursWhileGoHolds) {
        assert.ok(
          holders.includes(goSession),
          `a write of ours listed ${holders.join(', ')}: one of ours held before the consul lock ahead of it`,
        )
      }
      assert.ok(recorder.maxConcurrent() <= 2, `at most 2 at once, saw ${recorder.maxConcurrent()}`)
    } finally {
      subs.forEach((s) => s.unsubscribe())
      rmSync(dir, { recursive: true, force: true })
      await client.close()
      await proxy.close()
      await eventually('every key gone but .lock', async () => {
        const keys = (await listPrefix(agent.url, prefix)).map((e) => e.Key)
        return keys.every((k) => k === `${prefix}/.lock`) ? true : undefined
      })
    }
  })

  it('shares limit 2 with a consul lock -n 2 holder: one of ours beside it, the other after it', async (t) => {
    const prefix = testPrefix(t, agent.url, 'interop-wait')
    const dir = mkdtempSync(join(tmpdir(), 'rxsem-interop-'))
    const log = join(dir, 'go.log')
    const release = join(dir, 'go.release')
    const recorder = new SafetyRecorder(2, () => Date.now())
    // consul lock holds until the test lets it go: once one of ours holds beside it and the other
    // waits (a fixed hold was over before ours had even started, on a loaded machine).
    const child = spawn(
      consulBin(),
      [
        'lock',
        '-n=2',
        `-http-addr=${agent.addr}`,
        prefix,
        `echo start $(date +%s%3N) >> ${log}; while [ ! -e ${release} ]; do sleep 0.02; done; echo end $(date +%s%3N) >> ${log}`,
      ],
      { stdio: 'ignore' },
    )
    children.push(child)
    const exited = new Promise((done) => child.once('exit', done))
    await eventually('consul lock holds', () => childStarted(log) || undefined, 60_000)
    const a = semaphore({ prefix, limit: 2, consul: agent.client, value: 'a' })
    const b = semaphore({ prefix, limit: 2, consul: agent.client, value: 'b' })
    const subs = [
      a.holding$.subscribe((h) => recorder.record('a', h)),
      b.holding$.subscribe((h) => recorder.record('b', h)),
    ]
    await eventually(
      'one of ours holding beside consul lock, the other waiting',
      async () => {
        const { holders, waiting } = await queueAt(agent.url, prefix)
        const ours = (c: QueuedKey) => c.value === 'a' || c.value === 'b'
        return holders.length === 2 &&
          holders.filter(ours).length === 1 &&
          waiting.filter(ours).length === 1 &&
          recorder.intervals().some((i) => i.to === Infinity)
          ? true
          : undefined
      },
      60_000,
    )
    writeFileSync(release, '')
    await Promise.all([
      firstValueFrom(a.holding$.pipe(filter(Boolean))),
      firstValueFrom(b.holding$.pipe(filter(Boolean))),
    ])
    await exited
    for (const interval of childIntervals(log)) recorder.addInterval({ who: 'go', ...interval })
    const go = recorder.intervals().find((i) => i.who === 'go')
    const ours = recorder.intervals().filter((i) => i.who !== 'go')
    assert.ok(go, 'consul lock ran its child')
    assert.equal(
      ours.filter((i) => i.from < go.to).length,
      1,
      'exactly one of ours held while consul lock did',
    )
    assert.ok(recorder.maxConcurrent() <= 2, `max concurrent ${recorder.maxConcurrent()}`)
    await a.close()
    await b.close()
    subs.forEach((s) => s.unsubscribe())
    rmSync(dir, { recursive: true, force: true })
  })

  it('refuses a holder map with a number value, as consul lock -n 2 does, and neither side writes .lock', async (t) => {
    const prefix = testPrefix(t, agent.url, 'interop-map-value')
    const dir = mkdtempSync(join(tmpdir(), 'rxsem-interop-'))
    const marker = join(dir, 'ran')
    const holder = randomUUID()
    const body = `{"Limit":2,"Holders":{"${holder}":1}}`
    const name = `interop-map-value ${prefix}`
    await putRaw(agent.url, `${prefix}/.lock`, body, `flags=${SEMAPHORE_FLAGS}`)
    const lockEntry = async () =>
      (await listPrefix(agent.url, prefix)).find((e) => e.Key === `${prefix}/.lock`)
    const before = await lockEntry()
    assert.equal(before?.Value, Buffer.from(body).toString('base64'))
    const go = startConsulLock(agent.addr, ['-n=2', '-timeout=10s', prefix, `touch ${marker}`])
    let subscription: Subscription | undefined
    try {
      const code = await go.exited
      const said = `${go.stdout()}${go.stderr()}`
      assert.notEqual(code, 0, `consul lock refuses the body: ${said}`)
      assert.match(
        said,
        /lock decoding failed: json: cannot unmarshal number into Go struct field semaphoreLock\.Holders of type bool/,
      )
      assert.equal(existsSync(marker), false, 'consul lock ran nothing')
      assert.deepEqual(await lockEntry(), before, 'consul lock left .lock as it was')
      const goLeft = (await listPrefix(agent.url, prefix)).map((e) => e.Key)

      const sem = semaphore({ prefix, limit: 2, consul: agent.client, sessionName: name })
      const holding: boolean[] = []
      const error = await new Promise<unknown>((done) => {
        const timer = setTimeout(() => done(new Error('no error within 10 s')), 10_000)
        const settle = (outcome: unknown) => {
          clearTimeout(timer)
          done(outcome)
        }
        subscription = sem.holding$.subscribe({
          next: (h) => holding.push(h),
          error: settle,
          complete: () => settle(new Error('holding$ completed')),
        })
      })
      assert.ok(error instanceof SemaphoreError, `a SemaphoreError, got ${String(error)}`)
      assert.equal(error.kind, 'CorruptLock', error.message)
      assert.match(error.message, new RegExp(`${prefix}/\\.lock cannot be read`))
      assert.match(error.message, new RegExp(`holder "${holder}" has a number value \\(1\\)`))
      assert.match(error.message, /or delete it \(consul kv delete /)
      assert.ok(!holding.includes(true), 'never held')
      assert.deepEqual(await lockEntry(), before, 'semaphore left .lock byte for byte as it was')
      await eventually('our contender key and session gone', async () => {
        const keys = (await listPrefix(agent.url, prefix)).map((e) => e.Key)
        const sessions = await sessionsNamed(agent.url, name)
        return sessions.length === 0 && keys.every((k) => goLeft.includes(k)) ? true : undefined
      })
    } finally {
      subscription?.unsubscribe()
      await stopAllConsulLocks([go])
      // consul lock leaves its contender key behind, held by its session until the TTL runs out.
      for (const entry of await listPrefix(agent.url, prefix))
        if (entry.Session !== undefined) await destroyRawSession(agent.url, entry.Session)
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
