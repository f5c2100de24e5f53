// tryAcquire / tryLead against a real Consul agent: one attempt, answered at once, nothing left
// behind when not held.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { firstValueFrom } from 'rxjs'
import { leaderElection, semaphore, SemaphoreError, tryAcquire, tryLead } from '../../src/index.js'
import { agentSuite } from '../support/agent-suite.js'
import { keep, testPrefix } from '../support/tracked.js'
import { eventually, listPrefix, readLock, holdersOf, sessionsNamed } from '../support/observe.js'

describe('tryAcquire and tryLead', () => {
  const closers: (() => Promise<void>)[] = []

  // Registered above agentSuite(), so it runs before the client and the agent close.
  after(async () => {
    await Promise.allSettled(closers.map((close) => close()))
  })
  const agent = agentSuite()

  it('answers null at once on a full semaphore and leaves no key and no session', async (t) => {
    const prefix = testPrefix(t, agent.url, 'try-full')
    const holder = semaphore({ prefix, limit: 1, consul: agent.client, value: 'holder' })
    closers.push(() => holder.close())
    const sub = keep(t, holder.holding$.subscribe())
    await eventually('the holder holds', async () =>
      holdersOf((await readLock(agent.url, prefix))?.body).length === 1 ? true : undefined,
    )
    const before = await listPrefix(agent.url, prefix)

    const name = `try-full ${prefix}`
    const started = performance.now()
    const answer = await tryAcquire({ prefix, limit: 1, consul: agent.client, sessionName: name })
    const tookMs = performance.now() - started
    console.log(`# tryAcquire on a full semaphore answered null in ${tookMs.toFixed(0)} ms`)

    assert.equal(answer, null)
    assert.ok(tookMs < 1000, `answered in ${tookMs.toFixed(0)} ms`)
    assert.deepEqual(
      (await listPrefix(agent.url, prefix)).map((e) => e.Key),
      before.map((e) => e.Key),
      'its contender key is gone',
    )
    assert.deepEqual(await sessionsNamed(agent.url, name), [], 'its session is destroyed')
    sub.unsubscribe()
    await holder.close()
  })

  it('holds a free semaphore slot, keeps it without a subscriber, and gives it back on close', async (t) => {
    const prefix = testPrefix(t, agent.url, 'try-free')
    const sem = await tryAcquire({ prefix, limit: 2, consul: agent.client })
    assert.ok(sem, 'held')
    closers.push(() => sem.close())
    const state = await firstValueFrom(sem.state$)
    assert.equal(state.holding, true)
    assert.ok(state.session)
    assert.deepEqual(holdersOf((await readLock(agent.url, prefix))?.body), [state.session])
    const other = await tryAcquire({ prefix, limit: 2, consul: agent.client })
    assert.ok(other, 'the second slot is free too')
    const third = await tryAcquire({ prefix, limit: 2, consul: agent.client })
    assert.equal(third, null, 'both slots are taken')
    await other.close()
    await sem.close()
    assert.deepEqual(holdersOf((await readLock(agent.url, prefix))?.body), [])
  })

  it('answers null at once when another session leads, and leads when nobody does', async (t) => {
    const prefix = testPrefix(t, agent.url, 'try-lead')
    const leader = leaderElection({ prefix, consul: agent.client, value: 'leader' })
    closers.push(() => leader.close())
    const sub = keep(t, leader.holding$.subscribe())
    await eventually('the leader leads', async () =>
      (await listPrefix(agent.url, prefix)).find((e) => e.Session) ? true : undefined,
    )
    const name = `try-lead ${prefix}`
    const started = performance.now()
    const answer = await tryLead({ prefix, consul: agent.client, sessionName: name })
    const tookMs = performance.now() - started
    console.log(`# tryLead on a held lock answered null in ${tookMs.toFixed(0)} ms`)
    assert.equal(answer, null)
    assert.ok(tookMs < 1000, `answered in ${tookMs.toFixed(0)} ms`)
    assert.deepEqual(await sessionsNamed(agent.url, name), [], 'its session is destroyed')

    sub.unsubscribe()
    await leader.close()
    const mine = await tryLead({ prefix, consul: agent.client, value: 'me' })
    assert.ok(mine, 'leads once the lock is free')
    closers.push(() => mine.close())
    const state = await firstValueFrom(mine.state$)
    assert.equal(state.holding, true)
    const lock = (await listPrefix(agent.url, prefix)).find((e) => e.Key === `${prefix}/.lock`)
    assert.equal(lock?.Session, state.session)
    await mine.close()
    const after = (await listPrefix(agent.url, prefix)).find((e) => e.Key === `${prefix}/.lock`)
    assert.equal(after?.Session, undefined, 'released on close')
  })

  it('answers null during the lock-delay of an invalidated leader', async (t) => {
    const prefix = testPrefix(t, agent.url, 'try-lead-delay')
    const leader = leaderElection({ prefix, consul: agent.client, lockDelay: '5s' })
    const sub = keep(t, leader.holding$.subscribe())
    const holder = await eventually(
      'the leader leads',
      async () => (await listPrefix(agent.url, prefix)).find((e) => e.Session)?.Session,
    )
    // Invalidate the leader's session behind its back: Consul puts the key under lock-delay.
    await agent.client.session.destroy(holder)()
    await eventually('the key is free', async () =>
      (await listPrefix(agent.url, prefix)).find((e) => e.Session) ? undefined : true,
    )
    sub.unsubscribe()
    await leader.close()
    const started = performance.now()
    const answer = await tryLead({ prefix, consul: agent.client })
    const tookMs = performance.now() - started
    assert.equal(answer, null, 'refused by the lock-delay')
    assert.ok(tookMs < 1000, `answered in ${tookMs.toFixed(0)} ms`)
  })

  it('rejects invalid options with SemaphoreError InvalidOptions', async () => {
    await assert.rejects(
      tryAcquire({ prefix: '/bad', limit: 1, consul: agent.client }),
      (error: unknown) => error instanceof SemaphoreError && error.kind === 'InvalidOptions',
    )
    await assert.rejects(
      tryLead({ prefix: 'ok', ttl: '1s', consul: agent.client }),
      (error: unknown) => error instanceof SemaphoreError && error.kind === 'InvalidOptions',
    )
  })
})
