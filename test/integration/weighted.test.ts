// Several permits on the real agent, beside Consul's own client: a contender of k permits is k
// sessions, k keys and k holders in `.lock`, so `consul lock -n` counts them; a request of several
// permits at the front of the queue is served before a smaller one that arrived after it, however
// long a slot it cannot use stays free; a holder of several permits gives them all back.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { semaphore, SemaphoreError, tryAcquire, withSlot } from '../../src/index.js'
import { holdingConsulLock, stopAllConsulLocks } from '../support/cli.js'
import { agentSuite } from '../support/agent-suite.js'
import {
  destroyRawSession,
  eventually,
  holdersOf,
  listPrefix,
  readLock,
} from '../support/observe.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'
import { mostLiveListed, testPrefix, tracked } from '../support/tracked.js'

describe('several permits', { timeout: SUITE_TIMEOUT_MS }, () => {
  after(() => stopAllConsulLocks())
  const agent = agentSuite()

  /** The live holders `.lock` lists now, as Go's client counts them. */
  const goCount = async (prefix: string): Promise<number> => {
    const entries = await listPrefix(agent.url, prefix)
    const live = new Set(entries.flatMap((e) => (e.Session ? [e.Session] : [])))
    const lock = await readLock(agent.url, prefix)
    return holdersOf(lock?.body).filter((s) => live.has(s)).length
  }

  it('beside consul lock -n 5: holders of 2 and 3 permits count as 5 for Go, and a request of 4 at the front goes before 1 that came after it', async (t) => {
    const prefix = testPrefix(t, agent.url, 'weighted-go')
    const most = mostLiveListed(t, agent.client, prefix)
    const options = { prefix, limit: 5, consul: agent.client, fairness: { graceMs: 20 } }
    const two = tracked(t, semaphore({ ...options, value: 'two', permits: 2 }))
    const three = tracked(t, semaphore({ ...options, value: 'three', permits: 3 }))
    await two.when((s) => s.holding)
    await three.when((s) => s.holding)
    assert.equal(await goCount(prefix), 5, 'Go counts five holders')
    // consul lock -n 5 waits: Go's count is full.
    const { go } = await holdingConsulLockWaiting()
    async function holdingConsulLockWaiting() {
      await three.stop()
      return holdingConsulLock(t, agent, prefix, 5)
    }
    assert.equal(await goCount(prefix), 3, 'two permits of ours and one Go holder')

    // Four permits at the front, with two free; then one permit behind it.
    const order: string[] = []
    const four = tracked(t, semaphore({ ...options, value: 'four', permits: 4 }))
    await four.when((s) => s.rank === 0)
    const one = tracked(t, semaphore({ ...options, value: 'one' }))
    void four.when((s) => s.holding).then(() => order.push('four'))
    void one.when((s) => s.holding).then(() => order.push('one'))
    // Two slots stay free that the front cannot use: the one behind it does not take them.
    await one.when((s) => s.rank === 1 && s.limit - s.holders.length === 2)
    await two.stop()
    await stopAllConsulLocks([go])
    await four.when((s) => s.holding)
    // Four of ours, and the one behind may take the fifth slot now.
    assert.ok((await goCount(prefix)) >= 4)
    await four.stop()
    await one.when((s) => s.holding)
    assert.deepEqual(order, ['four', 'one'], 'served in arrival order')
    assert.ok(most() <= 5, `never more than 5 live holders listed (${most()})`)
  })

  it('drops every permit the moment one of its sessions is gone, and contends again with new ones', async (t) => {
    const prefix = testPrefix(t, agent.url, 'weighted-lost')
    // It starts over when the renewal of the session that is gone fails: within half the TTL.
    const options = { prefix, limit: 3, consul: agent.client, permits: 2, ttl: '10s' }
    const sem = tracked(t, semaphore(options))
    const held = await sem.when((s) => s.holding)
    const companion = holdersOf((await readLock(agent.url, prefix))?.body).find(
      (s) => s !== held.session,
    )
    assert.ok(companion !== undefined)
    await destroyRawSession(agent.url, companion)
    const lost = await sem.when((s) => !s.holding)
    // Seen first in the listing (its key gone) or in the renewal: either way, at once.
    assert.ok(lost.reason === 'removed' || lost.reason === 'session-invalidated', lost.reason)
    const again = await sem.when((s) => s.holding && s.session !== held.session)
    assert.ok((again.fencingToken ?? 0n) > (held.fencingToken ?? 0n))
    // The first run's session went too: only the new run's two sessions are listed and live.
    await eventually('the old session gone', async () => {
      const list = (await (await fetch(`${agent.url}/v1/session/list`)).json()) as { ID: string }[]
      return list.some((s) => s.ID === held.session) ? undefined : true
    })
  })

  it('runs withSlot jobs of several permits, never more slots at once than the limit, each job under a token of its own', async (t) => {
    const prefix = testPrefix(t, agent.url, 'weighted-jobs')
    const most = mostLiveListed(t, agent.client, prefix)
    const tokens = new Set<bigint>()
    let running = 0
    let mostRunning = 0
    const job = () =>
      withSlot({ prefix, limit: 4, consul: agent.client, permits: 2 }, async (_signal, slot) => {
        tokens.add(slot.assertHolding())
        running += 2
        mostRunning = Math.max(mostRunning, running)
        await new Promise((done) => setImmediate(done))
        running -= 2
      })
    await Promise.all(Array.from({ length: 20 }, job))
    assert.equal(tokens.size, 20, 'a fencing token per job')
    assert.ok(mostRunning <= 4, `at most 4 permits at once (${mostRunning})`)
    assert.ok(most() <= 4, `at most 4 holders listed (${most()})`)
    await eventually('no session of the pool left', async () => {
      const list = (await (await fetch(`${agent.url}/v1/session/list`)).json()) as {
        Name: string
      }[]
      return list.some((s) => s.Name.includes(prefix)) ? undefined : true
    })
  })

  it('tries once: a request of two permits is not held with one slot free, and one permit is', async (t) => {
    const prefix = testPrefix(t, agent.url, 'weighted-try')
    const options = { prefix, limit: 3, consul: agent.client }
    const first = await tryAcquire({ ...options, permits: 2 })
    assert.ok(first !== null, 'two of three free')
    t.after(() => first.close())
    assert.equal(await tryAcquire({ ...options, permits: 2 }), null, 'one free, two asked')
    const one = await tryAcquire(options)
    assert.ok(one !== null, 'the one free slot')
    await one.close()
  })

  it('refuses more permits than the limit, and a session given with several', () => {
    assert.throws(
      () => semaphore({ prefix: 'p', limit: 3, permits: 4 }),
      (error: unknown) =>
        error instanceof SemaphoreError &&
        error.kind === 'InvalidOptions' &&
        /permits/.test(error.message),
    )
    assert.throws(
      () => semaphore({ prefix: 'p', limit: 3, permits: 2, session: 'abc' }),
      (error: unknown) =>
        error instanceof SemaphoreError && /sessions of their own/.test(error.message),
    )
  })

  it('leaves no session and no key behind once closed', async (t) => {
    const prefix = testPrefix(t, agent.url, 'weighted-clean')
    const sem = semaphore({ prefix, limit: 3, consul: agent.client, value: 'w', permits: 3 })
    const held = await tracked(t, sem).when((s) => s.holding)
    assert.equal(holdersOf((await readLock(agent.url, prefix))?.body).length, 3)
    await sem.close()
    const keys = (await listPrefix(agent.url, prefix)).map((e) => e.Key)
    assert.deepEqual(keys, [`${prefix}/.lock`])
    assert.deepEqual(holdersOf((await readLock(agent.url, prefix))?.body), [])
    const sessions = (await (await fetch(`${agent.url}/v1/session/list`)).json()) as {
      ID: string
    }[]
    assert.ok(!sessions.some((s) => s.ID === held.session))
    await eventually('no session of the prefix', async () =>
      ((await (await fetch(`${agent.url}/v1/session/list`)).json()) as { Name: string }[]).some(
        (s) => s.Name.includes(prefix),
      )
        ? undefined
        : true,
    )
  })
})
