// Waiters are never stranded while slots stand free. The queue's head can be dead (a killed,
// frozen or cut-off contender keeps its key until Consul expires its session, TTL to 2 × TTL
// later), and contenders that do not queue (`consul lock -n`) may take and give back free slots,
// rewriting `.lock` all the while. A live waiter behind must still get a free slot after its
// fairness grace: it must not sleep parked on the key of a dead waiter ahead, and others' writes
// of `.lock` must not keep restarting its grace.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { filter, firstValueFrom, timeout } from 'rxjs'
import { CONTENDER_FLAGS, semaphore } from '../../src/index.js'
import { agentSuite } from '../support/agent-suite.js'
import { keep, testPrefix } from '../support/tracked.js'
import { SEMAPHORE_FLAGS, createRawSession, destroyRawSession, putRaw } from '../support/observe.js'

describe('waiters behind a dead head of the queue', () => {
  const sessions: string[] = []
  // Registered above agentSuite(), so it runs before the client and the agent close.
  after(async () => {
    await Promise.all(sessions.map((id) => destroyRawSession(agent.url, id)))
  })
  const agent = agentSuite()

  /**
   * `count` contenders of this library that queued and then died: their keys stay, locked by
   * sessions that nobody renews (a long TTL, so that Consul does not expire them during the test).
   */
  async function deadWaiters(prefix: string, count: number): Promise<void> {
    for (let i = 0; i < count; i++) {
      const id = await createRawSession(agent.url, { TTL: '300s', Behavior: 'delete' })
      sessions.push(id)
      const ok = await putRaw(
        agent.url,
        `${prefix}/${id}`,
        '',
        `acquire=${id}&flags=${String(CONTENDER_FLAGS)}`,
      )
      assert.ok(ok, 'the dead waiter took its key')
    }
  }

  it('a waiter parked behind three dead ones takes the slot its holder frees, after its grace', async (t) => {
    const prefix = testPrefix(t, agent.url, 'stranded-parked')
    // A live holder (a raw session), then three dead waiters: the slot is taken when ours queues
    // fourth, so it parks on the key of the waiter just ahead, which will never change.
    const holder = await createRawSession(agent.url, { TTL: '300s', Behavior: 'delete' })
    sessions.push(holder)
    await putRaw(agent.url, `${prefix}/${holder}`, '', `acquire=${holder}`)
    await putRaw(
      agent.url,
      `${prefix}/.lock`,
      JSON.stringify({ Limit: 1, Holders: { [holder]: true } }),
      `flags=${SEMAPHORE_FLAGS}`,
    )
    await deadWaiters(prefix, 3)
    const sem = semaphore({ prefix, limit: 1, consul: agent.client, fairness: { graceMs: 1000 } })
    const sub = keep(t, sem.holding$.subscribe())
    const queued = await firstValueFrom(sem.state$.pipe(filter((s) => s.rank !== undefined)))
    assert.equal(queued.rank, 3, 'three dead waiters ahead')
    // The holder leaves; its key goes with its session, so `.lock` lists it dead: a free slot,
    // which no write to the key ahead of ours tells us about.
    await destroyRawSession(agent.url, holder)
    const since = Date.now()
    // A re-check of the prefix within 5 s, then a grace of 1 s plus a quarter for each of the 2
    // places further back. Parked until the key ahead changes, it would wait for that dead
    // session's TTL (300 s).
    // Bounded, so that a stranded waiter fails the test rather than hangs it.
    await firstValueFrom(sem.holding$.pipe(filter(Boolean), timeout(30_000)))
    const waited = Date.now() - since
    assert.ok(waited < 15_000, `held ${waited} ms after the slot came free`)
    await sem.close()
    sub.unsubscribe()
  })

  it('a waiter behind a dead head takes a free slot that a contender outside the queue keeps rewriting', async (t) => {
    const prefix = testPrefix(t, agent.url, 'stranded-churn')
    await putRaw(
      agent.url,
      `${prefix}/.lock`,
      '{"Limit":1,"Holders":{}}',
      `flags=${SEMAPHORE_FLAGS}`,
    )
    await deadWaiters(prefix, 1)
    const sem = semaphore({ prefix, limit: 1, consul: agent.client, fairness: { graceMs: 1000 } })
    const sub = keep(t, sem.holding$.subscribe())
    await firstValueFrom(sem.state$.pipe(filter((s) => s.rank === 1)))
    // Every 200 ms `.lock` is written again, as by `consul lock -n` contenders that take the slot
    // and give it back: with no holder, or naming one whose session is gone (pruned: the slot is
    // still free). The bodies alternate: Consul does not move the index for an identical write.
    // Before, each of these writes restarted the grace.
    let writes = 0
    const churn = setInterval(() => {
      writes++
      const body = writes % 2 === 0 ? {} : { 'gone-contender': true }
      void putRaw(
        agent.url,
        `${prefix}/.lock`,
        JSON.stringify({ Limit: 1, Holders: body }),
        `flags=${SEMAPHORE_FLAGS}`,
      )
    }, 200)
    try {
      await firstValueFrom(sem.holding$.pipe(filter(Boolean), timeout(30_000)))
    } finally {
      clearInterval(churn)
    }
    assert.ok(writes >= 3, `held while .lock was being rewritten (${writes} writes)`)
    await sem.close()
    sub.unsubscribe()
  })
})
