// Changing a semaphore's limit live (issue 24): `setLimit` / `rxsem set-limit` rewrite `.lock`'s
// limit by CAS, keeping its holders. Contenders that follow the limit take a raise at once and,
// after a lowering, admit no one until the holders are fewer than it; the others keep a slot they
// hold and fail with LimitConflict when they next try. Beside `consul lock -n`: a Go contender
// given the old limit fails as it always did, one given the new limit joins, and a Go holder
// releases under the new limit. Nothing is deleted by hand.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { filter, firstValueFrom, type Subscription } from 'rxjs'
import {
  semaphore,
  SemaphoreError,
  setLimit,
  type Semaphore,
  type SemaphoreState,
} from '../../src/index.js'
import { startCli, startConsulLock, stopAllConsulLocks } from '../support/cli.js'
import { agentSuite } from '../support/agent-suite.js'
import { keep, testPrefix } from '../support/tracked.js'
import { eventually, holdersOf, listPrefix, readLock } from '../support/observe.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'

/** One tenure as its contender saw it: from holding$ true to false, and its fencing token. */
interface Tenure {
  readonly who: string
  readonly token: bigint
  readonly from: number
  to: number
}

/** The limit `.lock` stated at ModifyIndex `index`, from the changes made (and the first one). */
function limitAt(changes: readonly { index: bigint; limit: number }[], index: bigint): number {
  let limit = changes[0]?.limit ?? 0
  for (const change of changes) if (change.index < index) limit = change.limit
  return limit
}

/**
 * Checks "never more than the limit in force": at each tenure's start, the tenures then running
 * were all listed in `.lock` when the latest of them was written (each was listed before it and
 * had not released yet), and that write kept to the limit `.lock` stated at its index. So their
 * count may not exceed the limit in force at the largest of their tokens.
 */
function overLimit(
  tenures: readonly Tenure[],
  changes: readonly { index: bigint; limit: number }[],
) {
  const found: string[] = []
  for (const t of tenures) {
    const running = tenures.filter((u) => u.from <= t.from && t.from < u.to)
    const latest = running.reduce((a, b) => (b.token > a ? b.token : a), 0n)
    const limit = limitAt(changes, latest)
    if (running.length > limit) {
      found.push(`${running.length} held at ${t.from} (latest token ${latest}, limit ${limit})`)
    }
  }
  return found
}

describe('changing the limit live', { timeout: SUITE_TIMEOUT_MS }, () => {
  // Registered above agentSuite(), so it runs before the client and the agent close.
  after(async () => {
    await stopAllConsulLocks()
  })
  const agent = agentSuite()

  it('raises 2 to 3 and lowers it back under load: never over the limit in force, everyone served', async (t) => {
    const prefix = testPrefix(t, agent.url, 'live-limit')
    const CONTENDERS = 5
    const tenures: Tenure[] = []
    const live = new Set<string>()
    let most = 0
    let stopping = false
    const first = await setLimit({ prefix, limit: 2, consul: agent.client })
    const changes = [{ index: first.index, limit: 2 }]

    // Each contender holds ~150 ms, gives the slot back, and contends again, until stopped.
    const loop = async (who: string): Promise<void> => {
      while (!stopping) {
        const sem = semaphore({
          prefix,
          limit: 2,
          followLimit: true,
          consul: agent.client,
          value: who,
        })
        let tenure: Tenure | undefined
        const sub = keep(
          t,
          sem.state$.subscribe((s: SemaphoreState) => {
            if (s.holding && tenure === undefined) {
              tenure = { who, token: s.fencingToken ?? 0n, from: performance.now(), to: Infinity }
              tenures.push(tenure)
              live.add(who)
              most = Math.max(most, live.size)
            } else if (!s.holding && tenure !== undefined && tenure.to === Infinity) {
              tenure.to = performance.now()
              live.delete(who)
            }
          }),
        )
        await firstValueFrom(sem.holding$.pipe(filter((h) => h || stopping)))
        await new Promise((done) => setTimeout(done, 150))
        await sem.close()
        sub.unsubscribe()
      }
    }
    const loops = Array.from({ length: CONTENDERS }, (_, i) => loop(`c${i}`))
    const servedSince = (index: bigint) =>
      new Set(tenures.filter((t) => t.token > index).map((t) => t.who)).size

    await eventually(
      'every contender served under limit 2',
      () => (servedSince(0n) === CONTENDERS ? true : undefined),
      60_000,
    )
    assert.ok(most <= 2, `${most} held at once under limit 2`)

    const raised = await setLimit({ prefix, limit: 3, consul: agent.client })
    assert.deepEqual([raised.previous, raised.limit], [2, 3])
    changes.push({ index: raised.index, limit: 3 })
    most = live.size
    await eventually(
      '3 holding at once after the raise',
      () => (most === 3 ? true : undefined),
      60_000,
    )

    const lowered = await setLimit({ prefix, limit: 2, consul: agent.client })
    assert.deepEqual([lowered.previous, lowered.limit], [3, 2])
    changes.push({ index: lowered.index, limit: 2 })
    await eventually(
      'every contender served again after the lowering',
      () => (servedSince(lowered.index) === CONTENDERS ? true : undefined),
      60_000,
    )
    stopping = true
    await Promise.all(loops)

    assert.deepEqual(overLimit(tenures, changes), [])
    const afterLowering = tenures.filter((t) => t.token > lowered.index)
    assert.ok(afterLowering.length >= CONTENDERS, `${afterLowering.length} tenures after`)
    // `.lock` was never deleted by hand: it states the last limit, with no holders left.
    const lock = await readLock(agent.url, prefix)
    assert.ok(lock, '.lock is still there')
    assert.deepEqual(lock.body, { Limit: 2, Holders: {} })
    const keys = (await listPrefix(agent.url, prefix)).map((e) => e.Key)
    assert.deepEqual(keys, [`${prefix}/.lock`], 'no contender key left')
  })

  it('lets a holder that does not follow the limit keep its slot, stops such a waiter, and admits a follower', async (t) => {
    const prefix = testPrefix(t, agent.url, 'live-limit-strict')
    const states = new Map<string, SemaphoreState>()
    const errors = new Map<string, unknown>()
    const subs: Subscription[] = []
    const start = (who: string, followLimit: boolean): Semaphore => {
      const sem = semaphore({ prefix, limit: 1, followLimit, consul: agent.client, value: who })
      subs.push(
        sem.state$.subscribe({
          next: (s) => states.set(who, s),
          error: (e: unknown) => errors.set(who, e),
        }),
      )
      return sem
    }
    const strict = start('strict', false)
    await firstValueFrom(strict.holding$.pipe(filter(Boolean)))
    const waiter = start('waiter', false)
    const follower = start('follower', true)
    await eventually('both waiting', () =>
      states.get('waiter')?.rank !== undefined && states.get('follower')?.rank !== undefined
        ? true
        : undefined,
    )

    await setLimit({ prefix, limit: 2, consul: agent.client })
    await eventually('the follower holds beside the holder', () =>
      states.get('follower')?.holding === true ? true : undefined,
    )
    assert.equal(states.get('follower')?.limit, 2, "the follower's state tells the limit in force")
    const stopped = await eventually('the waiter stopped', () => errors.get('waiter'))
    assert.ok(
      stopped instanceof SemaphoreError && stopped.kind === 'LimitConflict',
      String(stopped),
    )
    assert.match(stopped.message, /limit is 2, but this contender was given limit 1/)
    assert.match(stopped.message, /followLimit/)
    assert.equal(states.get('strict')?.holding, true, 'the holder kept its slot')
    assert.equal(errors.has('strict'), false)

    // It leaves `.lock` by CAS under the new limit: only the follower is listed after.
    await strict.close()
    const lock = await readLock(agent.url, prefix)
    assert.ok(lock)
    assert.deepEqual(holdersOf(lock.body), [states.get('follower')?.session])
    assert.equal((lock.body as { Limit: number }).Limit, 2)
    await Promise.all([waiter.close(), follower.close()])
    subs.forEach((s) => s.unsubscribe())
  })

  it('keeps one limit in .lock beside consul lock -n: the old limit fails, the new one joins, a Go holder releases', async (t) => {
    const prefix = testPrefix(t, agent.url, 'live-limit-go')
    // A Go contender first in line, holding until stopped.
    const goHolder = startConsulLock(agent.addr, ['-n=2', prefix, 'sleep 600'])
    await eventually(
      'consul lock -n 2 holds',
      async () => {
        const lock = await readLock(agent.url, prefix)
        return lock && holdersOf(lock.body).length === 1 ? true : undefined
      },
      60_000,
    )
    const ours = [0, 1].map((i) =>
      semaphore({ prefix, limit: 2, followLimit: true, consul: agent.client, value: `ours-${i}` }),
    )
    const held = ours.map(() => false)
    const subs = ours.map((sem, i) => sem.holding$.subscribe((h) => (held[i] = h)))
    await eventually('one of ours holds beside Go, the other waits', async () => {
      const lock = await readLock(agent.url, prefix)
      const keys = await listPrefix(agent.url, prefix)
      return held.filter(Boolean).length === 1 &&
        lock &&
        holdersOf(lock.body).length === 2 &&
        keys.length === 4
        ? true
        : undefined
    })

    const change = await setLimit({ prefix, limit: 3, consul: agent.client })
    assert.deepEqual([change.previous, change.limit, change.holders], [2, 3, 2])
    await eventually('both of ours hold beside Go', () => (held.every(Boolean) ? true : undefined))

    // A Go contender given the old limit fails, and says why.
    const old = startConsulLock(agent.addr, ['-n=2', prefix, 'true'])
    assert.equal(await old.exited, 1)
    assert.match(old.stderr(), /semaphore limit conflict \(lock: 3, local: 2\)/)
    // One given the new limit joins the queue behind the three holders.
    const fresh = startConsulLock(agent.addr, ['-n=3', prefix, 'true'])
    await eventually(
      'consul lock -n 3 waits in line',
      async () => {
        const keys = await listPrefix(agent.url, prefix)
        return keys.length === 5 ? true : undefined
      },
      60_000,
    )

    // The Go holder releases under the new limit; the -n 3 waiter takes the slot and ends.
    await stopAllConsulLocks([goHolder])
    assert.equal(await fresh.exited, 0, fresh.stderr())
    const lock = await readLock(agent.url, prefix)
    assert.ok(lock)
    const body = lock.body as { Limit: number }
    assert.equal(body.Limit, 3, 'one consistent limit in .lock')
    assert.equal(holdersOf(body).length, 2, 'our two holders, the Go ones gone')
    await Promise.all(ours.map((sem) => sem.close()))
    subs.forEach((s) => s.unsubscribe())
  })

  it('gives up on an aborted signal with SemaphoreError Aborted, writing nothing', async (t) => {
    const prefix = testPrefix(t, agent.url, 'live-limit-abort')
    const signal = AbortSignal.abort(new Error('deploy cancelled'))
    await assert.rejects(
      setLimit({ prefix, limit: 3, consul: agent.client, signal }),
      (e: unknown) => e instanceof SemaphoreError && e.kind === 'Aborted',
    )
    assert.equal(await readLock(agent.url, prefix), undefined, 'no .lock was written')
  })

  it('rxsem set-limit tells what changed, and never writes over a consul lock key', async (t) => {
    const prefix = testPrefix(t, agent.url, 'live-limit-cli')
    const run = startCli(['set-limit', '--prefix', prefix, '--limit', '3'], { addr: agent.addr })
    assert.equal(await run.exited, 0, run.stderr())
    assert.match(run.stdout(), new RegExp(`^${prefix}: limit set to 3 \\(there was no .lock`, 'm'))
    const json = startCli(['set-limit', '--prefix', prefix, '--limit', '2', '--json'], {
      addr: agent.addr,
    })
    assert.equal(await json.exited, 0, json.stderr())
    const printed = JSON.parse(json.stdout()) as Record<string, unknown>
    assert.deepEqual(
      { ...printed, index: typeof printed['index'] },
      { prefix, previous: 3, limit: 2, holders: 0, waiting: 0, index: 'string' },
    )

    const leaderPrefix = testPrefix(t, agent.url, 'live-limit-cli-leader')
    const leader = startConsulLock(agent.addr, [leaderPrefix, 'sleep 600'])
    await eventually(
      'consul lock holds',
      async () => (await readLock(agent.url, leaderPrefix)) ?? undefined,
      60_000,
    )
    const before = await readLock(agent.url, leaderPrefix)
    const refused = startCli(['set-limit', '--prefix', leaderPrefix, '--limit', '2'], {
      addr: agent.addr,
    })
    assert.equal(await refused.exited, 1)
    assert.match(refused.stderr(), /has flags \d+, so another kind of client uses this prefix/)
    assert.deepEqual(await readLock(agent.url, leaderPrefix), before, 'left as it was')
    await stopAllConsulLocks([leader])
  })
})
