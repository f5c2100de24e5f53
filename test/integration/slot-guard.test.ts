// The synchronous guard (`isHolding`, `assertHolding`) and the fenced write (`fencedTxn`) of a
// contender, against a real agent.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { filter, firstValueFrom } from 'rxjs'
import {
  SemaphoreError,
  leaderElection,
  semaphore,
  withSlot,
  type ConsulClient,
} from '../../src/index.js'
import { agentSuite } from '../support/agent-suite.js'
import { closing, keep, testPrefix } from '../support/tracked.js'
import { destroyRawSession, putRaw } from '../support/observe.js'

const utf8 = new TextEncoder()

async function readValue(url: string, key: string): Promise<string | undefined> {
  const res = await fetch(`${url}/v1/kv/${key}?raw`)
  const text = await res.text()
  return res.status === 404 ? undefined : text
}

const isSlotLost = (error: unknown): boolean =>
  error instanceof SemaphoreError && error.kind === 'SlotLost'

describe('the slot guard and the fenced write', () => {
  const agent = agentSuite()

  it('isHolding and assertHolding follow the slot, and assertHolding gives the fencing token', async (t) => {
    const prefix = testPrefix(t, agent.url, 'guard')
    const holder = closing(t, semaphore({ prefix, limit: 1, consul: agent.client }))
    const waiter = closing(t, semaphore({ prefix, limit: 1, consul: agent.client }))
    assert.equal(holder.isHolding(), false, 'not subscribed: not holding')
    assert.throws(() => holder.assertHolding(), isSlotLost)
    const holderSub = keep(t, holder.holding$.subscribe())
    const state = await firstValueFrom(holder.state$.pipe(filter((s) => s.holding)))
    assert.equal(holder.isHolding(), true)
    assert.equal(holder.assertHolding(), state.fencingToken)
    assert.ok(state.leaseDeadline !== undefined && state.leaseDeadline > Date.now())

    const waiterSub = keep(t, waiter.holding$.subscribe())
    await firstValueFrom(waiter.state$.pipe(filter((s) => s.rank === 0)))
    assert.equal(waiter.isHolding(), false, 'a waiter does not hold')
    assert.throws(() => waiter.assertHolding(), isSlotLost)

    await holder.close()
    assert.equal(holder.isHolding(), false, 'closed: not holding')
    await firstValueFrom(waiter.holding$.pipe(filter(Boolean)))
    assert.ok(
      waiter.assertHolding() > (state.fencingToken ?? 0n),
      'the next tenure has a larger token',
    )
    await waiter.close()
    holderSub.unsubscribe()
    waiterSub.unsubscribe()
  })

  it('fencedTxn commits while held; its answer covers only the given operations', async (t) => {
    const prefix = testPrefix(t, agent.url, 'fenced')
    const counter = `${prefix}-data/counter`
    const sem = closing(t, semaphore({ prefix, limit: 1, consul: agent.client }))
    const sub = keep(t, sem.holding$.subscribe())
    await firstValueFrom(sem.holding$.pipe(filter(Boolean)))
    const result = await sem.fencedTxn([{ verb: 'set', key: counter, value: utf8.encode('1') }])
    assert.equal(result.committed, true)
    assert.deepEqual(
      result.committed ? result.results.map((r) => r.key) : [],
      [counter],
      'the check of the contender key is not among the results',
    )
    assert.equal(await readValue(agent.url, counter), '1')

    // An operation of the caller's that fails rolls back with its own index, not a lost slot.
    const lost = await sem.fencedTxn([
      { verb: 'set', key: counter, value: utf8.encode('2') },
      { verb: 'cas', key: counter, value: utf8.encode('3'), index: 1n },
    ])
    assert.equal(lost.committed, false)
    assert.deepEqual(lost.committed ? [] : lost.errors.map((e) => e.opIndex), [1])
    assert.equal(await readValue(agent.url, counter), '1', 'a rollback writes nothing')

    // Consul 1.8.7 takes 64 operations in one transaction, the fence's check included: 63 of the
    // caller's commit, 64 are refused before anything is sent (test/integration/txn-limit.test.ts
    // has the limits of other versions).
    const many = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        verb: 'set' as const,
        key: `${counter}-${i}`,
        value: utf8.encode('x'),
      }))
    assert.equal((await sem.fencedTxn(many(63))).committed, true)
    await assert.rejects(sem.fencedTxn(many(64)), (error: unknown) => {
      assert.ok(error instanceof SemaphoreError, String(error))
      assert.equal(error.kind, 'InvalidOptions')
      assert.match(error.message, /given 64 operations; it takes at most 63 .*Nothing was sent/)
      return true
    })
    assert.equal(await readValue(agent.url, `${counter}-63`), undefined)

    await sem.close()
    sub.unsubscribe()
    await assert.rejects(
      sem.fencedTxn([{ verb: 'set', key: counter, value: utf8.encode('4') }]),
      isSlotLost,
    )
    assert.equal(await readValue(agent.url, counter), '1')
  })

  it('fencedTxn is refused by Consul when the session is gone before the holder noticed', async (t) => {
    const prefix = testPrefix(t, agent.url, 'fenced-late')
    const counter = `${prefix}-data/counter`
    await putRaw(agent.url, counter, 'before')
    // The holder's watch is held back, as a partition or a pause would: it cannot learn that its
    // session ended. TTL 60 s: no renewal (every 30 s) answers in the meantime either.
    let frozen = false
    const gated: ConsulClient = {
      ...agent.client,
      watchPrefix: (p, o) => agent.client.watchPrefix(p, o).pipe(filter(() => !frozen)),
    }
    const sem = closing(t, semaphore({ prefix, limit: 1, consul: gated, ttl: '60s' }))
    const sub = keep(t, sem.holding$.subscribe())
    const state = await firstValueFrom(sem.state$.pipe(filter((s) => s.holding)))
    frozen = true
    await destroyRawSession(agent.url, state.session ?? '')
    assert.equal(sem.isHolding(), true, 'the holder has not noticed (its lease is still valid)')
    await assert.rejects(
      sem.fencedTxn([{ verb: 'set', key: counter, value: utf8.encode('stale write') }]),
      (error: unknown) =>
        isSlotLost(error) &&
        error instanceof Error &&
        /Consul refused the fenced write, nothing was written/.test(error.message),
    )
    assert.equal(await readValue(agent.url, counter), 'before', 'nothing was written')
    frozen = false
    await sem.close()
    sub.unsubscribe()
  })

  it("a leader election's fenced write checks the lock key; withSlot's work gets the guard", async (t) => {
    const prefix = testPrefix(t, agent.url, 'fenced-leader')
    const key = `${prefix}-data/leader-wrote`
    const election = closing(t, leaderElection({ prefix, consul: agent.client, value: 'node-a' }))
    const sub = keep(t, election.holding$.subscribe())
    await firstValueFrom(election.holding$.pipe(filter(Boolean)))
    assert.equal(election.isHolding(), true)
    const led = await election.fencedTxn([{ verb: 'set', key, value: utf8.encode('a') }])
    assert.equal(led.committed, true)
    await election.close()
    sub.unsubscribe()

    const slotPrefix = testPrefix(t, agent.url, 'fenced-with-slot')
    const token = await withSlot(
      { prefix: slotPrefix, limit: 1, consul: agent.client },
      async (_, slot) => {
        const written = await slot.fencedTxn([{ verb: 'set', key, value: utf8.encode('b') }])
        assert.equal(written.committed, true)
        return slot.assertHolding()
      },
    )
    assert.ok(token > 0n)
    assert.equal(await readValue(agent.url, key), 'b')
  })
})
