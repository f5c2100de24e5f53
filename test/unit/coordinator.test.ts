// The prefix coordinator and its members (src/effects/coordinator/) in virtual time, on the
// in-memory Consul double (test/support/consul-double.ts, proven against a real agent by the
// shared scenario table). These are the orderings that used to need a live agent: a watch that
// fails under a holder, a renewal that never answers, a session that expires, a process of many
// waiters; and the coordinator's own promises: one view per snapshot, one decision per contender
// per snapshot, one long poll per prefix, nothing kept once its contenders are gone.
import assert from 'node:assert/strict'
import { afterEach, beforeEach, describe, it } from 'node:test'
import { VirtualTimeScheduler, filter, firstValueFrom, timer, type Subscription } from 'rxjs'
import * as E from 'fp-ts/lib/Either.js'
import { SEMAPHORE_FLAGS } from '../../src/base/flags.js'
import type { KVSnapshot } from '../../src/base/kv-snapshot.js'
import type { ContenderState } from '../../src/core/contender/contender-state-model.js'
import { contend, type Member } from '../../src/effects/coordinator/contend.js'
import { coordinatorCount } from '../../src/effects/coordinator/prefix-coordinator.js'
import type { ContenderProtocol } from '../../src/effects/protocol/contender-protocol.js'
import { semaphoreProtocol } from '../../src/effects/protocol/semaphore-protocol.js'
import { resolveContenderOptions } from '../../src/options/contender-options.js'
import { leaderElection } from '../../src/recipes/leader-election.js'
import { semaphore, type Semaphore, type SemaphoreState } from '../../src/recipes/semaphore.js'
import {
  autoAdvance,
  createConsulDouble,
  unreachable,
  type ConsulDouble,
} from '../support/consul-double.js'

const prefix = 'svc/coordinated'

describe('the prefix coordinator, in virtual time on the Consul double', () => {
  let scheduler: VirtualTimeScheduler
  let double: ConsulDouble
  let stopTime: () => void
  const subscriptions: Subscription[] = []

  beforeEach(() => {
    scheduler = new VirtualTimeScheduler()
    double = createConsulDouble({ scheduler })
    stopTime = autoAdvance(scheduler)
  })
  afterEach(async () => {
    for (const s of subscriptions.splice(0)) s.unsubscribe()
    stopTime()
    await double.close()
  })

  const contender = (options: { ttl?: string; limit?: number } = {}): Semaphore =>
    semaphore({
      prefix,
      limit: options.limit ?? 1,
      consul: double.client,
      scheduler,
      ...(options.ttl !== undefined ? { ttl: options.ttl } : {}),
    })
  const follow = (sem: Semaphore): SemaphoreState[] => {
    const seen: SemaphoreState[] = []
    subscriptions.push(sem.state$.subscribe((s) => seen.push(s)))
    return seen
  }
  const reach = (sem: Semaphore, ok: (s: SemaphoreState) => boolean): Promise<SemaphoreState> =>
    firstValueFrom(sem.state$.pipe(filter(ok)))

  /**
   * The indexes of `sems` in the order of the queue: their keys by the index that made them,
   * then by key (keys of one client taken together share the index of their transaction).
   */
  const queueOrder = async (sems: readonly Semaphore[]): Promise<number[]> => {
    const keys = await Promise.all(
      sems.map(
        async (sem) => `${prefix}/${(await reach(sem, (st) => st.contending)).session as string}`,
      ),
    )
    const made = new Map(double.entries(`${prefix}/`).map((e) => [e.key, e.createIndex]))
    return [...sems.keys()].sort((a, b) => {
      const [ka, kb] = [keys[a] as string, keys[b] as string]
      const [ia, ib] = [made.get(ka) as bigint, made.get(kb) as bigint]
      return ia !== ib ? (ia < ib ? -1 : 1) : ka < kb ? -1 : 1
    })
  }

  it('drops holding the moment the watch fails, and takes it back (restored) when it answers again', async () => {
    const holder = contender()
    const seen = follow(holder)
    await reach(holder, (s) => s.holding)
    // The next long poll fails (a dropped connection), and the retries after it, for a while.
    double.fail('kv.list', unreachable(), { times: 3 })
    const listed = double.index()
    double.put(`${prefix}/unrelated`, 'x') // wakes the long poll, which then fails
    await reach(holder, (s) => !s.holding)
    assert.equal(seen.at(-1)?.reason, 'watch-failed')
    const back = await reach(holder, (s) => s.holding)
    assert.equal(back.reason, 'restored')
    assert.ok(double.index() > listed)
    await holder.close()
    assert.equal(double.sessions().length, 0, 'close() destroyed the session')
  })

  it('drops holding at the lease deadline when a renewal never answers, not a moment later', async () => {
    const holder = contender({ ttl: '10s' })
    const seen = follow(holder)
    const held = await reach(holder, (s) => s.holding)
    const deadline = held.leaseDeadline as number
    // Every renewal from now on hangs (a frozen agent, a partition that drops packets).
    const gate = double.hold('session.renew')
    await gate.reached
    const dropped = await reach(holder, (s) => !s.holding)
    assert.equal(dropped.reason, 'lease-expired')
    assert.equal(scheduler.now(), deadline, 'at exactly the deadline (TTL − 10 % margin)')
    assert.ok(seen.filter((s) => s.holding).length > 0)
    gate.release()
    await holder.close().catch(() => undefined)
  })

  it('starts over with a new session when Consul expires its session, and holds again', async () => {
    const holder = contender()
    follow(holder)
    const first = await reach(holder, (s) => s.holding)
    double.expireSession(first.session as string)
    const lost = await reach(holder, (s) => !s.holding)
    assert.ok(
      lost.reason === 'session-invalidated' || lost.reason === 'removed',
      String(lost.reason),
    )
    const again = await reach(holder, (s) => s.holding && s.session !== first.session)
    assert.notEqual(again.session, first.session)
    await holder.close()
    assert.deepEqual(
      double.entries(prefix + '/').filter((e) => e.session !== undefined),
      [],
    )
  })

  it('parks a process whose waiters are all far back on one long poll of the key ahead', async () => {
    // Another process holds and has the two front places; this one has five waiters behind.
    const other = double.connect('other')
    const theirs = Array.from({ length: 3 }, () =>
      semaphore({ prefix, limit: 1, consul: other, scheduler }),
    )
    for (const s of theirs) follow(s)
    await reach(theirs[0] as Semaphore, (s) => s.holding)
    await Promise.all(theirs.map((s) => reach(s, (st) => st.contending)))
    const ours = Array.from({ length: 5 }, () => contender())
    for (const s of ours) follow(s)
    await Promise.all(ours.map((s) => reach(s, (st) => st.rank !== undefined)))
    const polls = async (): Promise<readonly string[]> => {
      for (;;) {
        const inFlight = double
          .calls()
          .filter((c) => c.client === 'client' && c.method === 'kv.list' && c.answer === undefined)
        if (inFlight.length > 0) return inFlight.map((c) => c.keys[0] ?? '')
        await new Promise((done) => setTimeout(done, 2))
      }
    }
    const everyone = [...theirs, ...ours]
    const sessions = await Promise.all(
      everyone.map(async (s) => (await reach(s, (st) => st.contending)).session as string),
    )
    const queue = await queueOrder(everyone)
    assert.deepEqual(queue.slice(0, 3).sort(), [0, 1, 2], 'theirs came first')
    assert.deepEqual(
      await polls(),
      [`${prefix}/${sessions[queue[2] as number] as string}`],
      'one poll, on the key ahead',
    )
    // Hand over one by one: everyone is served, in the order of the queue.
    const order: number[] = []
    const left = new Set(everyone.keys())
    while (left.size > 0) {
      const next = await Promise.race(
        [...left].map((i) => reach(everyone[i] as Semaphore, (st) => st.holding).then(() => i)),
      )
      order.push(next)
      left.delete(next)
      await (everyone[next] as Semaphore).close()
    }
    assert.deepEqual(order, queue)
    assert.equal(coordinatorCount(), 0, 'the coordinators are gone with their last contenders')
    assert.equal(double.sessions().length, 0)
  })

  it('has a waiter asleep on its own key hold a slot handed to it before the listing that follows, with the hand-off index as its token', async () => {
    const other = double.connect('other')
    const holder = semaphore({ prefix, limit: 1, consul: other, scheduler })
    follow(holder)
    await reach(holder, (s) => s.holding)
    const waiter = contender()
    const seen = follow(waiter)
    const session = (await reach(waiter, (s) => s.session !== undefined)).session as string
    const own = `${prefix}/${session}`
    // Asleep: its one call in flight is the long poll of its own key.
    for (;;) {
      const inFlight = double
        .calls()
        .filter((c) => c.client === 'client' && c.method === 'kv.list' && c.answer === undefined)
      if (inFlight.length === 1 && inFlight[0]?.keys[0] === own) break
      await new Promise((done) => setTimeout(done, 2))
    }
    const listings = (): number =>
      double.calls().filter((c) => c.client === 'client' && c.keys[0] === `${prefix}/` && c.answer)
        .length
    const listing = double.hold('kv.list', {
      when: (c) => c.client === 'client' && c.keys[0] === `${prefix}/`,
    })
    const listedBefore = listings()
    await holder.close()
    await listing.reached
    const key = await double.client.kv.get(own)()
    const marked = E.isRight(key) ? key.right?.modifyIndex : undefined
    assert.ok(marked !== undefined, 'the hand-off marked its key')
    // No listing answered since the hand-off (the next is held): its key's news made it a holder.
    const held = await reach(waiter, (s) => s.holding)
    assert.equal(listings(), listedBefore)
    assert.equal(held.fencingToken, marked, 'its token is the index of the hand-off')
    listing.release()
    await reach(
      waiter,
      (s) => s.holding && s.session !== undefined && s.holders.includes(s.session),
    )
    assert.deepEqual(
      [...new Set(seen.filter((s) => s.holding).map((s) => s.fencingToken))],
      [marked],
      'the listing confirms the same token',
    )
    await waiter.close()
  })

  for (const parked of ['its own key', 'the key ahead'] as const) {
    it(`shows a parked waiter connected again when its key poll and the listing after it failed, in a quiet prefix (${parked})`, async () => {
      // Another process holds and has the two front places; this one waits far back, parked on
      // one long poll: of its own key when it is the process's only contender, of the key ahead
      // of its best-placed one when it has two.
      const other = double.connect('other')
      const theirs = Array.from({ length: 3 }, () =>
        semaphore({ prefix, limit: 1, consul: other, scheduler }),
      )
      for (const s of theirs) follow(s)
      await Promise.all(theirs.map((s) => reach(s, (st) => st.contending)))
      const last = theirs[(await queueOrder(theirs))[2] as number] as Semaphore
      const ahead = `${prefix}/${(await reach(last, (s) => s.session !== undefined)).session as string}`
      const keyPoll = double.hold('kv.list', {
        when: (c) =>
          c.client === 'client' &&
          c.keys[0]?.startsWith(`${prefix}/`) === true &&
          c.keys[0] !== `${prefix}/` &&
          (parked === 'its own key' || c.keys[0] === ahead),
      })
      const waiter = contender()
      follow(waiter)
      const second = parked === 'the key ahead' ? contender() : undefined
      if (second) follow(second)
      const poll = await keyPoll.reached
      if (parked === 'its own key') {
        const own = (await reach(waiter, (s) => s.session !== undefined)).session as string
        assert.equal(poll.keys[0], `${prefix}/${own}`, 'the waiter long-polls its own key')
      }
      // The key poll fails (a dropped connection); its retry answers, and the listing of the
      // prefix that follows a reconnect fails too. Nothing under the prefix changes from now on.
      double.fail('kv.list', unreachable(), {
        when: (c) => c.client === 'client' && c.keys[0] === `${prefix}/`,
      })
      keyPoll.fail(unreachable())
      await reach(waiter, (s) => !s.connected)
      const back = await Promise.race([
        reach(waiter, (s) => s.connected).then(() => 'connected' as const),
        firstValueFrom(timer(60_000, scheduler)).then(() => 'still disconnected' as const),
      ])
      assert.equal(back, 'connected')
      assert.ok(
        double.calls().some((c) => c.keys[0] === `${prefix}/` && c.answer === 'Unreachable'),
        'the listing after the reconnect failed, as the test means',
      )
      await waiter.close()
      await second?.close()
      for (const s of theirs) await s.close()
    })
  }

  it('lets a waiter far back count its grace on the last snapshot, though no other snapshot follows it', async () => {
    const holder = semaphore({ prefix, limit: 1, consul: double.connect('holder'), scheduler })
    subscriptions.push(holder.state$.subscribe())
    await reach(holder, (s) => s.holding)
    // Two `consul lock` waiters whose processes died, first and second in line: their keys stay
    // until Consul expires their sessions, 20 minutes from now.
    for (const name of ['dead-1', 'dead-2']) {
      const created = await double.client.session.create({ name, ttl: '600s' })()
      assert.ok(E.isRight(created))
      const session = created.right
      await double.client.kv.put(`${prefix}/${session}`, name, {
        acquire: session,
        flags: SEMAPHORE_FLAGS,
      })()
    }
    const waiter = contender()
    follow(waiter)
    await reach(waiter, (s) => s.rank === 2)
    // The holder leaves; nothing under the prefix changes after its release. The snapshots of
    // the release come within a second of the last one the waiter stepped on, and leave it
    // third in line: the last of them is the one that shows the free slot.
    const freedAt = scheduler.now()
    await holder.close()
    await reach(waiter, (s) => s.holding)
    const waitedMs = scheduler.now() - freedAt
    // The refresh (1 to 2 s) and the grace of the third in line (2.5 s), not the dead sessions' end.
    assert.ok(waitedMs <= 4500, `held ${waitedMs} ms after the slot was freed`)
    assert.equal(double.entries(`${prefix}/`).length, 4, 'the dead waiters are still queued')
    await waiter.close()
  })

  it('writes its contender key again when the key is deleted before any snapshot showed it', async () => {
    const holder = contender()
    follow(holder)
    await reach(holder, (s) => s.holding)
    // A process new to the prefix lists it, then writes its key (`NotContending`). Its next long
    // poll is held until an operator has deleted that key again: no snapshot ever shows it.
    const gate = double.hold('kv.list', {
      when: (c) => c.client === 'waiter' && c.args.includes('@'),
    })
    const waiter = semaphore({ prefix, limit: 1, consul: double.connect('waiter'), scheduler })
    follow(waiter)
    await gate.reached
    const session = (await reach(waiter, (s) => s.session !== undefined)).session as string
    const key = `${prefix}/${session}`
    const written = (): boolean =>
      double
        .calls()
        .some((c) => c.client === 'waiter' && c.method === 'kv.put' && c.answer === 'ok')
    while (!written()) await new Promise((done) => setTimeout(done, 2))
    double.deleteKey(key)
    const deletedAt = scheduler.now()
    gate.release()
    const back = await Promise.race([
      reach(waiter, (s) => s.contending).then(() => 'contending' as const),
      firstValueFrom(timer(60_000, scheduler)).then(() => 'still without a key' as const),
    ])
    assert.equal(back, 'contending', `${scheduler.now() - deletedAt} ms after the delete`)
    assert.ok(double.entries(`${prefix}/`).some((e) => e.key === key && e.session === session))
    await waiter.close()
    await holder.close()
  })

  it('serves a leading election with a long poll of .lock, and its leader$ with the process’s poll of the prefix', async () => {
    const election = leaderElection({ prefix, value: 'node-a', consul: double.client, scheduler })
    subscriptions.push(election.state$.subscribe(), election.leader$.subscribe())
    await firstValueFrom(election.state$.pipe(filter((s) => s.holding)))
    await firstValueFrom(election.leader$.pipe(filter((l) => l?.value === 'node-a')))
    const inFlight = () =>
      double
        .calls()
        .filter((c) => c.method === 'kv.list' && c.answer === undefined)
        .map((c) => c.keys[0])
        .sort()
    while (inFlight().length < 2) await new Promise((done) => setTimeout(done, 2))
    // The leader's own news (the key lost, a request to step down) is under .lock; leader$
    // reads the process's common watch of the prefix, which waiters joining wake.
    assert.deepEqual(inFlight(), [prefix, `${prefix}/.lock`])
    await election.close()
  })

  describe('decisions counted (a member and a protocol whose decide step counts)', () => {
    /** The semaphore, counting each contender's decisions per snapshot and the views computed. */
    function countingProtocol(): {
      protocol: ContenderProtocol
      decisions: Map<string, number>
      views: () => number
    } {
      const decisions = new Map<string, number>()
      let views = (): number => 0
      const protocol: ContenderProtocol = {
        ...semaphoreProtocol,
        decide: (c) => {
          views = c.cache.computed
          const step = semaphoreProtocol.decide(c)
          return (snapshot: KVSnapshot, options) => {
            if (options.ignoreRank !== true) {
              const key = `${options.session}@${snapshot.index}`
              decisions.set(key, (decisions.get(key) ?? 0) + 1)
            }
            return step(snapshot, options)
          }
        },
      }
      return { protocol, decisions, views: () => views() }
    }

    it('computes one view per snapshot (and per release), and each contender decides once per snapshot', async () => {
      const { protocol, decisions, views } = countingProtocol()
      const states = new Map<number, ContenderState>()
      const runs: Member[] = []
      const releases: Promise<unknown>[] = []
      const snapshotsSeen = new Set<bigint>()
      for (let i = 0; i < 30; i++) {
        runs.push(
          contend(
            {
              ...resolveContenderOptions({ prefix }, 'coordinator test'),
              client: double.client,
              protocol,
              limit: 3,
              fairness: true,
              // No fairness grace runs out in this test: a wake-up decides again on the same
              // snapshot, which is a new decision (time moved), not a repeated one.
              fairnessGraceMs: 3_600_000,
              scheduler,
              onRelease: (r) => releases.push(r),
            },
            {
              next: (s) => {
                states.set(i, s)
                if (s.snapshot) snapshotsSeen.add(s.snapshot.index)
              },
              error: (e) => assert.fail(e),
              complete: () => undefined,
            },
          ),
        )
      }
      const until = async (ok: () => boolean): Promise<void> => {
        while (!ok()) await new Promise((done) => setTimeout(done, 2))
      }
      const holders = (): number[] => [...states].filter(([, s]) => s.holding).map(([i]) => i)
      await until(() => holders().length === 3)
      // Churn: the holders give their slots back one by one, twelve times.
      for (let round = 0; round < 12; round++) {
        const h = holders()[0] as number
        runs[h]?.close()
        await until(() => holders().length === 3 && !holders().includes(h))
      }
      for (const run of runs) run.close()
      await Promise.all(releases)
      const repeated = [...decisions].filter(([, n]) => n > 1)
      assert.deepEqual(repeated, [], 'a contender decided twice on one snapshot')
      assert.ok(decisions.size > 30, `decisions: ${decisions.size}`)
      // One view per snapshot the contenders stepped on (a wake-up decides again on the same one),
      // and at most one more per release that gave a slot back (12 in the churn, 3 at the end): one
      // built on the `.lock` the process's own writes left since the last snapshot.
      const slotsGivenBack = 12 + 3
      assert.ok(
        views() <= snapshotsSeen.size + slotsGivenBack,
        `views ${views()} for ${snapshotsSeen.size} snapshots and ${slotsGivenBack} releases`,
      )
      assert.equal(coordinatorCount(), 0)
      assert.equal(double.sessions().length, 0)
    })
  })
})
