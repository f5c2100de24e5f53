// The read-write lock on the real agent: readers share, a writer holds alone, a writer waiting
// first in line is served within twice the longest read under a steady stream of readers, and no
// reader that arrived after it (its key created later) takes a slot while it waits, as Consul's
// own listings show; beside `consul lock -n`, which counts a writer as every slot.
import assert from 'node:assert/strict'
import { setTimeout as delay } from 'node:timers/promises'
import { after, describe, it, type TestContext } from 'node:test'
import {
  readWriteLock,
  SemaphoreError,
  withReadLock,
  withWriteLock,
  type ConsulClient,
} from '../../src/index.js'
import { weightOfFlags } from '../../src/base/flags.js'
import { holdingConsulLock, stopAllConsulLocks } from '../support/cli.js'
import { agentSuite } from '../support/agent-suite.js'
import { holdersOf, listPrefix, readLock } from '../support/observe.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'
import { keep, mostLiveListed, onEnd, testPrefix, tracked, type Scope } from '../support/tracked.js'

/**
 * Watches `prefix` until the test ends and names every holder that took its slot while a writer
 * whose key is older than the holder's own waited: a reader that passed a waiting writer.
 */
function passedWriters(t: Scope, consul: ConsulClient, prefix: string): () => readonly string[] {
  const passed = new Set<string>()
  keep(
    t,
    consul.watchPrefix(`${prefix}/`, { waitMs: 5000 }).subscribe((event) => {
      if (event.type !== 'snapshot') return
      const { entries } = event.snapshot
      const lock = entries.find((e) => e.key === `${prefix}/.lock`)
      if (lock?.value == null) return
      const listed = new Set(holdersOf(JSON.parse(Buffer.from(lock.value).toString('utf8'))))
      const keyOf = (e: (typeof entries)[number]): string | undefined =>
        e.session !== undefined && e.key === `${prefix}/${e.session}` ? e.session : undefined
      const waitingWriters = entries.filter(
        (e) => keyOf(e) !== undefined && !listed.has(e.session ?? '') && weightOfFlags(e.flags) > 1,
      )
      for (const writer of waitingWriters) {
        for (const e of entries) {
          const session = keyOf(e)
          if (session !== undefined && listed.has(session) && e.createIndex > writer.createIndex) {
            passed.add(session)
          }
        }
      }
    }),
  )
  return () => [...passed]
}

/**
 * A writer that joins while readers hold: the claim under test is about a writer that waits for
 * reads in flight. On a loaded machine every reader can be between two reads at the moment the
 * writer joins (each read loop takes a new contender, whose join and CAS take longer there); such
 * a writer, finding the lock free, is stopped and another joins, up to 20 times.
 */
async function writerArrivingWhileReadersHold(
  t: TestContext,
  create: () => ReturnType<typeof readWriteLock>,
): Promise<{ w: ReturnType<typeof tracked>; queued: number }> {
  const attempts = 20
  for (let attempt = 1; attempt <= attempts; attempt += 1) {
    const w = tracked(t, create().writer)
    const arrived = await w.when((s) => s.rank !== undefined || s.holding)
    const queued = performance.now()
    if (arrived.holders.some((h) => h !== arrived.session)) return { w, queued }
    t.diagnostic(`the writer joined while no reader held (attempt ${attempt}); it joins again`)
    await w.stop()
  }
  assert.fail(`no reader held when the writer joined, in ${attempts} attempts`)
}

describe('read-write lock', { timeout: SUITE_TIMEOUT_MS }, () => {
  after(() => stopAllConsulLocks())
  const agent = agentSuite()

  it('under a steady stream of readers, serves a waiting writer within twice the longest read, alone, and no later reader passes it', async (t) => {
    const prefix = testPrefix(t, agent.url, 'rw-stream')
    const options = { prefix, maxReaders: 4, consul: agent.client }
    const passed = passedWriters(t, agent.client, prefix)
    const most = mostLiveListed(t, agent.client, prefix)
    const READ_MS = 250
    let reading = 0
    let mostReading = 0
    let longestRead = 0
    let stop = false
    let firstRead!: () => void
    const reading$ = new Promise<void>((resolve) => (firstRead = resolve))
    const read = async (): Promise<void> => {
      const began = performance.now()
      reading += 1
      mostReading = Math.max(mostReading, reading)
      firstRead()
      await delay(READ_MS)
      reading -= 1
      longestRead = Math.max(longestRead, performance.now() - began)
    }
    // Two processes of readers (told apart by their value), two reads in flight in each, started
    // a quarter of a read apart: some reader always holds (a lock that let readers in while a
    // writer waits would never serve it), and none waits for a slot, so the writer waits only for
    // the reads in flight when it arrives.
    const loops = ['readers-a', 'readers-b'].flatMap((value, p) =>
      [0, 1].map(async (i) => {
        await delay(((2 * i + p) * READ_MS) / 4)
        while (!stop) await withReadLock({ ...options, value }, read)
      }),
    )
    onEnd(t, async () => {
      stop = true
      await Promise.allSettled(loops)
    })
    await reading$

    for (let round = 0; round < 2; round += 1) {
      const { w, queued } = await writerArrivingWhileReadersHold(t, () =>
        readWriteLock({ ...options, value: 'writer' }),
      )
      await w.when((s) => s.holding)
      const waited = performance.now() - queued
      t.diagnostic(
        `round ${round}: the writer waited ${waited.toFixed(0)} ms; longest read ${longestRead.toFixed(0)} ms`,
      )
      assert.equal(reading, 0, 'no reader reads while the writer holds')
      assert.ok(
        waited <= 2 * longestRead,
        `the writer waited ${waited.toFixed(0)} ms; the longest read took ${longestRead.toFixed(0)} ms`,
      )
      await w.stop()
    }
    stop = true
    await Promise.all(loops)
    assert.ok(mostReading >= 2, `readers share (${mostReading} at once)`)
    assert.deepEqual(passed(), [], 'no reader that arrived after a waiting writer took a slot')
    assert.ok(most() <= 4, `never more than 4 slots listed (${most()})`)
  })

  it('runs readers together and writers alone, withReadLock beside withWriteLock', async (t) => {
    const prefix = testPrefix(t, agent.url, 'rw-mixed')
    const options = { prefix, maxReaders: 4, consul: agent.client }
    let readers = 0
    let writers = 0
    let mostReaders = 0
    const overlaps: string[] = []
    const tokens = new Set<bigint>()
    const job = async (kind: 'read' | 'write', slot: { assertHolding(): bigint }) => {
      tokens.add(slot.assertHolding())
      if (kind === 'read') readers += 1
      else writers += 1
      mostReaders = Math.max(mostReaders, readers)
      if (writers > 1 || (writers === 1 && readers > 0)) overlaps.push(`${readers}r ${writers}w`)
      await delay(20)
      if (kind === 'read') readers -= 1
      else writers -= 1
    }
    const jobs = Array.from({ length: 24 }, (_, i) =>
      i % 6 === 5
        ? withWriteLock({ ...options, value: 'rw-w' }, (_s, slot) => job('write', slot))
        : withReadLock({ ...options, value: `rw-r${i % 2}` }, (_s, slot) => job('read', slot)),
    )
    await Promise.all(jobs)
    assert.deepEqual(overlaps, [], 'a writer never beside a reader or another writer')
    assert.ok(mostReaders >= 2, `readers share (${mostReaders} at once)`)
    assert.equal(tokens.size, 24, 'a fencing token per job')
  })

  it('beside consul lock -n 3: the writer waits for a Go holder, and Go counts it as every slot', async (t) => {
    const prefix = testPrefix(t, agent.url, 'rw-go')
    const { go } = await holdingConsulLock(t, agent, prefix, 3)
    const { writer, reader } = readWriteLock({ prefix, maxReaders: 3, consul: agent.client })
    const w = tracked(t, writer)
    await w.when((s) => s.rank === 0)
    const r = tracked(t, reader)
    // The reader arrived after the writer: it waits behind it although two slots are free.
    await r.when((s) => s.rank === 1 && s.holders.length === 1)
    await stopAllConsulLocks([go])
    await w.when((s) => s.holding)
    const lock = await readLock(agent.url, prefix)
    assert.equal(holdersOf(lock?.body).length, 3, 'Go counts the writer as all three holders')
    assert.equal((await r.when(() => true)).holding, false)
    await w.stop()
    await r.when((s) => s.holding)
    const keys = (await listPrefix(agent.url, prefix)).map((e) => e.Key).sort()
    assert.equal(keys.length, 2, `the reader's key and .lock (${keys.join(', ')})`)
  })

  it('refuses a maxReaders no writer can take in one transaction, and options it does not take', async (t) => {
    assert.throws(
      () => readWriteLock({ prefix: 'p', maxReaders: 127 }),
      (error: unknown) =>
        error instanceof SemaphoreError &&
        error.kind === 'InvalidOptions' &&
        /maxReaders: 127 must be a whole number from 1 to 126/.test(error.message),
    )
    // 63 readers fit Consul from 1.14 on; on this agent (1.8.7) the writer fails as it starts.
    const prefix = testPrefix(t, agent.url, 'rw-many-readers')
    let ran = false
    await assert.rejects(
      withWriteLock({ prefix, maxReaders: 63, consul: agent.client }, () => {
        ran = true
        return Promise.resolve()
      }),
      (error: unknown) =>
        error instanceof SemaphoreError &&
        error.kind === 'InvalidOptions' &&
        /a request of 63 permits .* Consul 1\.8\.7 takes at most 64/.test(error.message),
    )
    assert.equal(ran, false)
    const reader = await withReadLock({ prefix, maxReaders: 63, consul: agent.client }, () =>
      Promise.resolve('read'),
    )
    assert.equal(reader, 'read', 'a reader of the same lock takes one slot')
    await assert.rejects(
      withWriteLock({ prefix: 'p', limit: 3 } as never, () => Promise.resolve()),
      (error: unknown) => error instanceof SemaphoreError && /limit/.test(error.message),
    )
  })
})
