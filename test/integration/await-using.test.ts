// `await using`: a contender held for one scope is closed when the scope ends, by a throw too.
// tsx (esbuild) lowers `await using` for Node 20, which does not parse it yet; the disposal itself
// runs the library's own Symbol.asyncDispose method.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { filter, firstValueFrom, type Subscription } from 'rxjs'
import { leaderElection, semaphore, tryAcquire } from '../../src/index.js'
import { agentSuite } from '../support/agent-suite.js'
import { keep, testPrefix } from '../support/tracked.js'
import { holdersOf, listPrefix, readLock, sessionsNamed } from '../support/observe.js'

describe('await using', () => {
  const agent = agentSuite()

  /** What is left of a semaphore under `prefix`: keys other than `.lock`, holders, sessions. */
  async function leftovers(prefix: string, name: string) {
    return {
      keys: (await listPrefix(agent.url, prefix)).map((e) => e.Key),
      holders: holdersOf((await readLock(agent.url, prefix))?.body),
      sessions: await sessionsNamed(agent.url, name),
    }
  }

  /** The leader's `.lock` key, whose value is the leader's, not JSON. */
  async function lockEntry(prefix: string) {
    return (await listPrefix(agent.url, prefix)).find((e) => e.Key === `${prefix}/.lock`)
  }

  it('releases the semaphore slot when the scope ends normally', async (t) => {
    const prefix = testPrefix(t, agent.url, 'await-using')
    const name = `await-using ${prefix}`
    let subscription: Subscription | undefined
    {
      await using sem = semaphore({ prefix, limit: 3, consul: agent.client, sessionName: name })
      // A subscriber for the whole scope: only the disposal may release the slot.
      subscription = sem.holding$.subscribe()
      const state = await firstValueFrom(sem.state$.pipe(filter((s) => s.holding)))
      assert.deepEqual(holdersOf((await readLock(agent.url, prefix))?.body), [state.session])
      assert.equal((await sessionsNamed(agent.url, name)).length, 1)
    }
    assert.equal(subscription.closed, true, 'close() completed the subscription')
    assert.deepEqual(await leftovers(prefix, name), {
      keys: [`${prefix}/.lock`],
      holders: [],
      sessions: [],
    })
  })

  it('releases the semaphore slot when the scope throws, and passes the error on', async (t) => {
    const prefix = testPrefix(t, agent.url, 'await-using-throw')
    const name = `await-using-throw ${prefix}`
    await assert.rejects(async () => {
      await using sem = semaphore({ prefix, limit: 3, consul: agent.client, sessionName: name })
      keep(t, sem.holding$.subscribe())
      await firstValueFrom(sem.holding$.pipe(filter(Boolean)))
      assert.equal(holdersOf((await readLock(agent.url, prefix))?.body).length, 1)
      assert.equal((await sessionsNamed(agent.url, name)).length, 1)
      throw new Error('the guarded work failed')
    }, /the guarded work failed/)
    assert.deepEqual(await leftovers(prefix, name), {
      keys: [`${prefix}/.lock`],
      holders: [],
      sessions: [],
    })
  })

  it('gives a tryAcquire slot back when the scope ends', async (t) => {
    const prefix = testPrefix(t, agent.url, 'await-using-try')
    const name = `await-using-try ${prefix}`
    {
      await using sem = await tryAcquire({
        prefix,
        limit: 1,
        consul: agent.client,
        sessionName: name,
      })
      assert.ok(sem, 'the slot was free')
      assert.equal(holdersOf((await readLock(agent.url, prefix))?.body).length, 1)
    }
    assert.deepEqual(await leftovers(prefix, name), {
      keys: [`${prefix}/.lock`],
      holders: [],
      sessions: [],
    })
  })

  it('steps down from a leader election when the scope throws', async (t) => {
    const prefix = testPrefix(t, agent.url, 'await-using-lead')
    const name = `await-using-lead ${prefix}`
    await assert.rejects(async () => {
      await using election = leaderElection({ prefix, consul: agent.client, sessionName: name })
      keep(t, election.holding$.subscribe())
      await firstValueFrom(election.holding$.pipe(filter(Boolean)))
      assert.ok((await lockEntry(prefix))?.Session, 'the lock key is held')
      throw new Error('the leader work failed')
    }, /the leader work failed/)
    assert.equal((await lockEntry(prefix))?.Session, undefined, 'the lock key has no holder')
    assert.deepEqual(await sessionsNamed(agent.url, name), [])
  })
})
