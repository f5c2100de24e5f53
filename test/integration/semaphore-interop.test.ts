// Our contenders and Consul's own Go client (`consul lock -n 3`) share one prefix: never more than
// three holders at once, seen from both sides, and `consul lock` is not upset by our writes.
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { filter, firstValueFrom, type Subscription } from 'rxjs'
import { createConsulClient, semaphore, type ConsulClient } from '../../src/index.js'
import { consulBin, sharedAgent, uniquePrefix } from '../support/consul-agent.js'
import { deleteTree, eventually, holdersOf, listPrefix } from '../support/observe.js'
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

describe('semaphore next to consul lock -n', { timeout: SUITE_TIMEOUT_MS }, () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  let client: ConsulClient
  const children: ChildProcess[] = []
  before(async () => {
    consul = await sharedAgent()
    client = createConsulClient({ address: consul.addr })
  })
  after(async () => {
    for (const child of children)
      if (child.exitCode === null && child.pid) killTree(child.pid, 'SIGKILL')
    await client.close()
    await consul.close()
  })

  it('never has more than 3 holders among our contenders and consul lock -n 3 processes', async () => {
    const prefix = uniquePrefix('interop')
    const dir = mkdtempSync(join(tmpdir(), 'rxsem-interop-'))
    const recorder = new SafetyRecorder(3, () => Date.now())

    // Both sides, as Consul shows them: the live holders listed in .lock, at every change.
    let maxListed = 0
    const watch = client.watchPrefix(`${prefix}/`, { waitMs: 5000 }).subscribe((event) => {
      if (event.type !== 'snapshot') return
      const lock = event.snapshot.entries.find((e) => e.key === `${prefix}/.lock`)
      const live = new Set(event.snapshot.entries.flatMap((e) => (e.session ? [e.session] : [])))
      if (lock?.value) {
        const listed = holdersOf(JSON.parse(Buffer.from(lock.value).toString('utf8')) as unknown)
        maxListed = Math.max(maxListed, listed.filter((s) => live.has(s)).length)
      }
    })

    const goRuns = 4
    const exits: Promise<number | null>[] = []
    for (let i = 0; i < goRuns; i++) {
      const log = join(dir, `go-${i}.log`)
      const child = spawn(
        consulBin(),
        [
          'lock',
          '-n=3',
          `-http-addr=${consul.addr}`,
          prefix,
          `echo start $(date +%s%3N) >> ${log}; sleep 0.4; echo end $(date +%s%3N) >> ${log}`,
        ],
        { stdio: ['ignore', 'ignore', 'pipe'] },
      )
      let stderr = ''
      child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
      children.push(child)
      exits.push(
        new Promise((done) =>
          child.once('exit', (code) => {
            if (code !== 0) console.error(`consul lock ${i} exited ${code}: ${stderr}`)
            done(code)
          }),
        ),
      )
    }

    const ours = 4
    const subs: Subscription[] = []
    const done: Promise<void>[] = []
    for (let i = 0; i < ours; i++) {
      const who = `rx${i}`
      const sem = semaphore({ prefix, limit: 3, consul: client, value: who })
      done.push(
        new Promise<void>((resolve, reject) => {
          subs.push(
            sem.holding$.subscribe({
              next: (holding) => {
                recorder.record(who, holding)
                if (holding) setTimeout(() => void sem.close().then(resolve, reject), 400)
              },
              error: reject,
            }),
          )
        }),
      )
    }

    const codes = await Promise.all(exits)
    await Promise.all(done)
    subs.forEach((s) => s.unsubscribe())
    for (let i = 0; i < goRuns; i++) {
      for (const interval of childIntervals(join(dir, `go-${i}.log`))) {
        recorder.addInterval({ who: `go${i}`, ...interval })
      }
    }
    watch.unsubscribe()
    rmSync(dir, { recursive: true, force: true })

    assert.deepEqual(codes, [0, 0, 0, 0], 'every consul lock process ran its child and exited 0')
    assert.equal(recorder.intervals().length, goRuns + ours, 'every contender held once')
    assert.ok(
      recorder.maxConcurrent() <= 3,
      `at most 3 held at once, saw ${recorder.maxConcurrent()}`,
    )
    assert.ok(maxListed <= 3, `.lock never listed more than 3 live holders, saw ${maxListed}`)
    assert.ok(maxListed >= 2, `the two kinds of contender overlapped in .lock (saw ${maxListed})`)
    await eventually('consul lock cleaned up', async () => {
      const keys = (await listPrefix(consul.url, prefix)).map((e) => e.Key)
      return keys.every((k) => k === `${prefix}/.lock`) ? true : undefined
    })
    await deleteTree(consul.url, prefix)
  })

  it('shares limit 2 with a consul lock -n 2 holder: one of ours beside it, the other after it', async () => {
    const prefix = uniquePrefix('interop-wait')
    const dir = mkdtempSync(join(tmpdir(), 'rxsem-interop-'))
    const log = join(dir, 'go.log')
    const recorder = new SafetyRecorder(2, () => Date.now())
    const child = spawn(
      consulBin(),
      [
        'lock',
        '-n=2',
        `-http-addr=${consul.addr}`,
        prefix,
        `echo start $(date +%s%3N) >> ${log}; sleep 1.5; echo end $(date +%s%3N) >> ${log}`,
      ],
      { stdio: 'ignore' },
    )
    children.push(child)
    const exited = new Promise((done) => child.once('exit', done))
    await eventually('consul lock holds', () => {
      try {
        return readFileSync(log, 'utf8').startsWith('start') ? true : undefined
      } catch {
        return undefined
      }
    })
    const a = semaphore({ prefix, limit: 2, consul: client })
    const b = semaphore({ prefix, limit: 2, consul: client })
    const subs = [
      a.holding$.subscribe((h) => recorder.record('a', h)),
      b.holding$.subscribe((h) => recorder.record('b', h)),
    ]
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
    await deleteTree(consul.url, prefix)
  })
})
