// exclusive(...) against a real Consul agent: three consumers of one task list, a consumer killed
// with SIGKILL mid-task, and unsubscribing mid-run.
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { pathToFileURL } from 'node:url'
import { Subject, from, lastValueFrom, toArray, type Subscription } from 'rxjs'
import * as E from 'fp-ts/lib/Either.js'
import {
  createConsulClient,
  exclusive,
  type ConsulClient,
  type ExclusiveClosed,
  type ExclusiveResult,
} from '../../src/index.js'
import { sharedAgent } from '../support/consul-agent.js'
import { keep, testPrefix } from '../support/tracked.js'
import { deleteTree, eventually, listPrefix, sleep } from '../support/observe.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'

const repoRoot = resolve(import.meta.dirname, '../..')
const now = () => performance.timeOrigin + performance.now()

async function sessionAlive(url: string, id: string): Promise<boolean> {
  const res = await fetch(`${url}/v1/session/info/${id}`)
  const info = (await res.json()) as unknown[] | null
  return info !== null && info.length > 0
}

describe('exclusive', { timeout: SUITE_TIMEOUT_MS }, () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  let scratch: string
  const clients: ConsulClient[] = []
  const children = new Set<ChildProcess>()
  const subs: Subscription[] = []
  const newClient = () => {
    const c = createConsulClient({ address: consul.addr })
    clients.push(c)
    return c
  }

  before(async () => {
    consul = await sharedAgent()
    scratch = mkdtempSync(join(tmpdir(), 'rxsem-exclusive-'))
  })
  after(async () => {
    for (const sub of subs) sub.unsubscribe()
    // Killed, and gone before the clients close (waited for, not given 200 ms).
    await Promise.all(
      [...children]
        .filter((child) => child.exitCode === null && child.signalCode === null)
        .map((child) => {
          const exited = new Promise((done) => child.once('exit', done))
          child.kill('SIGKILL')
          return exited
        }),
    )
    await Promise.all(clients.map((c) => c.close()))
    rmSync(scratch, { recursive: true, force: true })
    await consul.close()
  })

  it('runs each of 100 tasks exactly once across three consumers that each try all of them', async (t) => {
    const prefix = testPrefix(t, consul.url, 'exclusive-three')
    const ids = Array.from({ length: 100 }, (_, i) => i)
    const starts = new Map<number, string[]>()
    const closed: Promise<ExclusiveClosed>[] = []
    // No task runs before each consumer has one to run: on a loaded machine a consumer that
    // started late would otherwise find all 100 done by the other two, and run none. The held
    // keys are at most 2 × 4 of 100, so the last one always finds a free task.
    const running = new Set<string>()
    let allRunning = (): void => undefined
    const everyoneRunning = new Promise<void>((done) => (allRunning = done))

    const consumer = (name: string, order: number[]) => {
      const client = newClient()
      const doneKey = (id: number) => `${prefix}/done/${id}`
      let onClosed!: (c: ExclusiveClosed) => void
      closed.push(new Promise((done) => (onClosed = done)))
      return lastValueFrom(
        from(order).pipe(
          exclusive<number, string>({
            consul: client,
            value: name,
            watchPrefix: prefix,
            keyOf: (id) => `${prefix}/task/${id}`,
            // Checked while holding the key: a task another consumer finished is skipped.
            isDone: async (id) => {
              const entry = await client.kv.get(doneKey(id))()
              return E.isRight(entry) && entry.right !== null
            },
            run: async (id) => {
              starts.set(id, [...(starts.get(id) ?? []), name])
              running.add(name)
              if (running.size === 3) allRunning()
              await everyoneRunning
              await sleep(5 + Math.random() * 15)
              const marked = await client.kv.put(doneKey(id), name)()
              if (E.isLeft(marked)) throw new Error(marked.left.message)
              return name
            },
            concurrency: 4,
            onDone: 'delete',
            onClosed,
          }),
          toArray(),
        ),
      )
    }
    const shuffled = () => [...ids].sort(() => Math.random() - 0.5)
    const results = await Promise.all([
      consumer('a', ids),
      consumer('b', [...ids].reverse()),
      consumer('c', shuffled()),
    ])
    const reports = await Promise.all(closed)

    for (const id of ids) {
      assert.equal(starts.get(id)?.length, 1, `task ${id} ran ${starts.get(id)?.length ?? 0} times`)
    }
    const ran = ['a', 'b', 'c'].map(
      (name) => results[['a', 'b', 'c'].indexOf(name)]!.filter((r) => r.outcome === 'done').length,
    )
    const skips = results.flatMap((rs) =>
      rs.flatMap((r) => (r.outcome === 'skipped' ? [r.reason] : [])),
    )
    // Some retries must have met a finished task, or the done check proved nothing.
    assert.ok(skips.includes('already-done'), 'a consumer met a task another had finished')
    console.log(
      `# done per consumer: ${ran.join(' / ')}; skipped as held: ${skips.filter((r) => r === 'held').length}, ` +
        `as already done: ${skips.filter((r) => r === 'already-done').length}`,
    )
    for (const count of ran) assert.ok(count > 0, 'each consumer ran some tasks')
    assert.equal(
      ran.reduce((a, b) => a + b, 0),
      100,
    )
    for (const rs of results) {
      assert.equal(rs.length, 100, 'one result per task')
      assert.deepEqual(
        rs.filter((r) => r.outcome === 'failed' || r.outcome === 'lost'),
        [],
      )
    }
    const left = await listPrefix(consul.url, `${prefix}/task`)
    assert.deepEqual(
      left.map((e) => e.Key),
      [],
      'no task key is left',
    )
    for (const report of reports) {
      assert.equal(report.error, undefined)
      for (const session of report.sessions)
        assert.equal(await sessionAlive(consul.url, session), false)
    }
  })

  it('runs the task of a consumer killed with SIGKILL again only after its session is invalidated', async (t) => {
    const prefix = testPrefix(t, consul.url, 'exclusive-sigkill')
    const key = `${prefix}/task/1`
    const script = join(scratch, 'doomed-consumer.mjs')
    writeFileSync(
      script,
      [
        // The repo's rxjs, resolved here: the script lives outside the repo.
        `import { of } from ${JSON.stringify(import.meta.resolve('rxjs'))}`,
        `import { createConsulClient, exclusive } from ${JSON.stringify(pathToFileURL(join(repoRoot, 'src/index.ts')).href)}`,
        `const consul = createConsulClient({ address: process.env.ADDR })`,
        `of(1).pipe(exclusive({ consul, ttl: '10s', lockDelay: '1s', value: 'doomed', keyOf: () => process.env.KEY,`,
        `  run: () => { console.log('started'); return new Promise(() => {}) } })).subscribe()`,
      ].join('\n'),
    )
    const doomed = spawn(process.execPath, ['--import', 'tsx', script], {
      cwd: repoRoot,
      env: { ...process.env, ADDR: consul.addr, KEY: key },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    children.add(doomed)
    await new Promise<void>((done, fail) => {
      doomed.stdout?.on('data', (chunk: Buffer) => chunk.toString().includes('started') && done())
      doomed.once('exit', (code) => fail(new Error(`the consumer exited early (${code})`)))
    })
    const doomedSession = await eventually(
      'the key is held',
      async () => (await listPrefix(consul.url, prefix)).find((e) => e.Key === key)?.Session,
    )

    // The survivor offers the task again every 100 ms, as a job server's next pass would.
    const client = newClient()
    const offers = new Subject<number>()
    let ranAt = Infinity
    const results: ExclusiveResult<number, void>[] = []
    subs.push(
      offers
        .pipe(
          exclusive<number, void>({
            consul: client,
            value: 'survivor',
            keyOf: () => key,
            run: () => {
              ranAt = Math.min(ranAt, now())
              return Promise.resolve()
            },
          }),
        )
        .subscribe((result) => results.push(result)),
    )
    const killedAt = now()
    doomed.kill('SIGKILL')
    let lastAliveAt = killedAt
    let goneAt = Infinity
    // Until the task ran and the session was seen gone: on a loaded machine the task can run
    // between two reads of the session, and the one after it is the first to see it gone.
    while ((ranAt === Infinity || goneAt === Infinity) && now() - killedAt < 45_000) {
      if (ranAt === Infinity) offers.next(1)
      const sentAt = now()
      if (goneAt === Infinity) {
        if (await sessionAlive(consul.url, doomedSession)) lastAliveAt = sentAt
        else goneAt = now()
      }
      await sleep(100)
    }
    console.log(
      `# SIGKILL: session gone ${(goneAt - killedAt).toFixed(0)} ms after the kill; task ran again ` +
        `${(ranAt - goneAt).toFixed(0)} ms after that (${(ranAt - killedAt).toFixed(0)} ms after the kill)`,
    )
    assert.ok(goneAt < Infinity, 'Consul invalidated the killed consumer’s session')
    assert.ok(ranAt < Infinity, 'the task ran again')
    assert.ok(ranAt > lastAliveAt, 'never ran while the killed session lived')
    assert.ok(ranAt - goneAt < 3000, 'ran soon after the lock-delay')
    const skipped = results
      .filter((r) => r.outcome === 'skipped')
      .map((r) => r.outcome === 'skipped' && r.reason)
    assert.ok(skipped.includes('held'), 'skipped while the killed consumer held it')
    offers.complete()
  })

  it('aborts the signal and reports lost when the held key is deleted while the task runs', async (t) => {
    const prefix = testPrefix(t, consul.url, 'exclusive-lost')
    const key = `${prefix}/task/1`
    let signal: AbortSignal | undefined
    const result = lastValueFrom(
      from([1]).pipe(
        exclusive<number, void>({
          consul: newClient(),
          keyOf: () => key,
          run: (_id, s) => {
            signal = s
            return new Promise<void>((_done, fail) =>
              s.addEventListener('abort', () => fail(s.reason as Error)),
            )
          },
        }),
      ),
    )
    // Held in Consul and running here: the answer to the acquire may still be on its way.
    await eventually('the key is held and the task runs', async () =>
      signal !== undefined &&
      (await listPrefix(consul.url, prefix)).find((e) => e.Key === key && e.Session)
        ? true
        : undefined,
    )
    const deletedAt = now()
    await deleteTree(consul.url, prefix)
    const lost = await result
    console.log(`# lost reported ${(now() - deletedAt).toFixed(0)} ms after the key was deleted`)
    assert.equal(lost.outcome, 'lost')
    assert.equal(lost.outcome === 'lost' && lost.reason, 'removed')
    assert.equal(signal?.aborted, true)
    assert.equal(lost.outcome === 'lost' && signal?.reason === lost.error, true)
  })

  it('aborts running tasks, releases their keys and destroys the session on unsubscribe', async (t) => {
    const prefix = testPrefix(t, consul.url, 'exclusive-unsubscribe')
    const client = newClient()
    const signals: AbortSignal[] = []
    let onClosed!: (c: ExclusiveClosed) => void
    const closed = new Promise<ExclusiveClosed>((done) => (onClosed = done))
    const sub = keep(
      t,
      from([1, 2, 3])
        .pipe(
          exclusive<number, void>({
            consul: client,
            concurrency: 2,
            keyOf: (id) => `${prefix}/task/${id}`,
            run: (_id, signal) => {
              signals.push(signal)
              return new Promise<void>(() => {})
            },
            onClosed,
          }),
        )
        .subscribe(),
    )
    // Held in Consul and running here: Consul shows a key held before its answer has arrived.
    const held = await eventually('two keys held and their tasks running', async () => {
      const entries = (await listPrefix(consul.url, prefix)).filter((e) => e.Session)
      return entries.length === 2 && signals.length === 2 ? entries : undefined
    })
    assert.equal(signals.length, 2)
    sub.unsubscribe()
    assert.deepEqual(
      signals.map((s) => s.aborted),
      [true, true],
      'signals aborted at once',
    )
    const report = await closed
    assert.equal(report.error, undefined)
    assert.deepEqual(report.sessions, [held[0]!.Session])
    const after = await listPrefix(consul.url, prefix)
    assert.deepEqual(
      after.filter((e) => e.Session),
      [],
      'keys released',
    )
    assert.equal(after.length, 2, 'released (onDone release), not deleted')
    assert.equal(await sessionAlive(consul.url, held[0]!.Session!), false, 'session destroyed')
  })
})
