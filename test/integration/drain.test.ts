// A drain lets a semaphore's holders finish and admits no one until it is lifted, for our
// contenders and `consul lock -n` alike, which keep waiting (none fails); once lifted, both kinds
// are admitted again. Draining twice or lifting twice writes nothing; a leader lock is refused, a
// prefix without `.lock` needs the limit.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { drain, liftDrain, semaphore, setLimit, SemaphoreError } from '../../src/index.js'
import { startConsulLock, stopAllConsulLocks, type CliRun } from '../support/cli.js'
import { agentSuite } from '../support/agent-suite.js'
import {
  LOCK_FLAGS,
  destroyRawSession,
  eventually,
  holdersOf,
  listPrefix,
  putRaw,
  readLock,
  parkedAt,
  prefixIndex,
  sessionsNamed,
} from '../support/observe.js'
import { startFaultProxy } from '../support/fault-proxy.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'
import { onEnd, testPrefix, tracked } from '../support/tracked.js'

/** The live holders `.lock` at `prefix` lists: sessions that lock some key of the prefix. */
async function liveHolders(url: string, prefix: string): Promise<string[]> {
  const entries = await listPrefix(url, prefix)
  const live = new Set(entries.flatMap((e) => (e.Session ? [e.Session] : [])))
  const lock = await readLock(url, prefix)
  return holdersOf(lock?.body).filter((h) => live.has(h))
}

const sameSet = (a: readonly string[], b: readonly string[]): boolean =>
  a.length === b.length && a.every((x) => b.includes(x))

/** Destroys every drain session of `prefix` left (clean-up that runs even when a test fails). */
async function destroyDrainSessions(url: string, prefix: string): Promise<void> {
  for (const s of await sessionsNamed(url, `rxsem drain of ${prefix}`))
    await destroyRawSession(url, s.ID)
}

describe('drain', { timeout: SUITE_TIMEOUT_MS }, () => {
  after(() => stopAllConsulLocks())
  const agent = agentSuite()

  it('lets holders of both kinds finish, admits neither kind while drained (Go waiters keep waiting), and both once lifted', async (t) => {
    const prefix = testPrefix(t, agent.url, 'drain')
    onEnd(t, () => destroyDrainSessions(agent.url, prefix))
    const dir = mkdtempSync(join(tmpdir(), 'rxsem-drain-'))
    const release = (i: number) => writeFileSync(join(dir, `go-${i}.release`), '')
    const gos: CliRun[] = []
    onEnd(t, async () => {
      for (let i = 0; i < 2; i++) release(i)
      await stopAllConsulLocks(gos)
      rmSync(dir, { recursive: true, force: true })
    })
    // The Go waiter reaches the agent through a proxy, which shows when it has read the drained
    // prefix and gone back to waiting.
    const proxy = await startFaultProxy(agent.addr)
    onEnd(t, () => proxy.close())
    const go = (i: number, addr = agent.addr): CliRun => {
      const file = join(dir, `go-${i}.release`)
      const run = startConsulLock(addr, [
        '-n=2',
        prefix,
        `echo started; while [ ! -e ${file} ]; do sleep 0.05; done`,
      ])
      gos.push(run)
      return run
    }
    const contenderKeys = async () =>
      (await listPrefix(agent.url, prefix)).filter(
        (e) => e.Session && e.Key === `${prefix}/${e.Session}`,
      )

    // Go first in line: a consul lock -n 2 holder, then one of ours; a Go waiter, then ours.
    const goHolder = go(0)
    await eventually(
      'the Go holder',
      () => (goHolder.stdout().includes('started') ? true : undefined),
      30_000,
    )
    const holder = tracked(
      t,
      semaphore({ prefix, limit: 2, consul: agent.client, value: 'holder' }),
    )
    await holder.when((s) => s.holding)
    const goWaiter = go(1, proxy.addr)
    await eventually(
      'the Go waiter in line',
      async () => ((await contenderKeys()).length === 3 ? true : undefined),
      30_000,
    )
    const waiter = tracked(
      t,
      semaphore({ prefix, limit: 2, consul: agent.client, value: 'waiter' }),
    )
    assert.equal(
      (await waiter.when((s) => s.rank !== undefined)).rank,
      1,
      'ours behind the Go waiter',
    )

    const drained = await drain({ prefix, consul: agent.client })
    assert.equal(drained.limit, 2)
    assert.equal(drained.added, 2)
    assert.equal(drained.sessions.length, 2)
    assert.equal(drained.holders, 2, 'the two holders finish')
    assert.equal(BigInt((await readLock(agent.url, prefix))?.entry.ModifyIndex ?? 0), drained.index)
    const again = await drain({ prefix, consul: agent.client })
    assert.equal(again.added, 0, 'draining a drained prefix adds nothing')
    assert.equal(again.index, drained.index, 'and writes nothing')
    assert.deepEqual([...again.sessions].sort(), [...drained.sessions].sort())

    // The holders finish: only the drain holds.
    release(0)
    await holder.stop()
    assert.equal(await goHolder.exited, 0, 'the Go holder finished its command and released')
    await eventually('only the drain holding', async () =>
      sameSet(await liveHolders(agent.url, prefix), drained.sessions) ? true : undefined,
    )
    // Both waiters have read the drained prefix and decided: ours says so in its state, Go's is
    // back in a blocking read at the prefix's index.
    await waiter.when((s) => sameSet(s.holders, drained.sessions))
    await parkedAt(proxy, prefix, await prefixIndex(agent.url, prefix), 30_000)
    assert.ok(sameSet(await liveHolders(agent.url, prefix), drained.sessions), 'no one admitted')
    assert.equal(goWaiter.stdout().includes('started'), false, 'the Go waiter was not admitted')
    assert.equal(goWaiter.child.exitCode, null, 'the Go waiter keeps waiting; it did not fail')
    const still = await waiter.when(() => true)
    assert.equal(still.holding, false, 'ours was not admitted')
    assert.notEqual(still.rank, undefined, 'ours keeps waiting')

    const lifted = await liftDrain({ prefix, consul: agent.client })
    assert.deepEqual([...lifted.sessions].sort(), [...drained.sessions].sort())
    assert.deepEqual(
      await sessionsNamed(agent.url, `rxsem drain of ${prefix}`),
      [],
      'no drain session left',
    )
    await eventually(
      'the Go waiter admitted',
      () => (goWaiter.stdout().includes('started') ? true : undefined),
      30_000,
    )
    await waiter.when((s) => s.holding)
    const lock = await readLock(agent.url, prefix)
    const twice = await liftDrain({ prefix, consul: agent.client })
    assert.deepEqual(
      twice,
      { prefix, sessions: [], index: undefined },
      'lifting twice: nothing to lift',
    )
    assert.deepEqual(await readLock(agent.url, prefix), lock, 'and nothing written')
    release(1)
    assert.equal(await goWaiter.exited, 0, 'the Go waiter ran its command and ended well')
  })

  it('refuses a leader lock, needs the limit without .lock, refuses a limit .lock does not state, and tops up to a raised limit', async (t) => {
    const leaderPrefix = testPrefix(t, agent.url, 'drain-leader')
    assert.equal(
      await putRaw(agent.url, `${leaderPrefix}/.lock`, 'me', `flags=${LOCK_FLAGS}`),
      true,
    )
    await assert.rejects(
      drain({ prefix: leaderPrefix, consul: agent.client }),
      (e: unknown) =>
        e instanceof SemaphoreError && e.kind === 'Conflict' && /leader lock/.test(e.message),
    )
    assert.deepEqual(
      (await listPrefix(agent.url, leaderPrefix)).map((e) => e.Key),
      [`${leaderPrefix}/.lock`],
    )

    const prefix = testPrefix(t, agent.url, 'drain-new')
    onEnd(t, () => destroyDrainSessions(agent.url, prefix))
    await assert.rejects(
      drain({ prefix, consul: agent.client }),
      (e: unknown) =>
        e instanceof SemaphoreError &&
        e.kind === 'InvalidOptions' &&
        /no \.lock yet/.test(e.message),
    )
    assert.deepEqual(await listPrefix(agent.url, prefix), [], 'nothing written')
    assert.deepEqual(await sessionsNamed(agent.url, `rxsem drain of ${prefix}`), [])

    const drained = await drain({ prefix, limit: 3, consul: agent.client })
    assert.equal(drained.added, 3)
    assert.deepEqual((await readLock(agent.url, prefix))?.body, {
      Limit: 3,
      Holders: Object.fromEntries([...drained.sessions].sort().map((s) => [s, true])),
    })
    await assert.rejects(
      drain({ prefix, limit: 2, consul: agent.client }),
      (e: unknown) => e instanceof SemaphoreError && e.kind === 'LimitConflict',
    )
    // A raised limit: draining again tops the drain up to it.
    await setLimit({ prefix, limit: 4, consul: agent.client })
    const toppedUp = await drain({ prefix, consul: agent.client })
    assert.equal(toppedUp.added, 1)
    assert.equal(toppedUp.sessions.length, 4)
    const waiter = tracked(t, semaphore({ prefix, limit: 4, consul: agent.client, value: 'w' }))
    await waiter.when((s) => s.rank === 0 && sameSet(s.holders, toppedUp.sessions))
    await liftDrain({ prefix, consul: agent.client })
    await waiter.when((s) => s.holding)
  })
})
