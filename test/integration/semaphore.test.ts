// semaphore(...) end to end against a real Consul agent.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { firstValueFrom, filter, type Subscription } from 'rxjs'
import { semaphore, SemaphoreError, type Semaphore } from '../../src/index.js'
import { agentSuite } from '../support/agent-suite.js'
import { keep, testPrefix } from '../support/tracked.js'
import {
  LOCK_FLAGS,
  SEMAPHORE_FLAGS,
  createRawSession,
  destroyRawSession,
  eventually,
  holdersOf,
  listPrefix,
  putRaw,
  readLock,
  sessionsNamed,
  sleep,
} from '../support/observe.js'
import { SafetyRecorder } from '../support/safety-recorder.js'

describe('semaphore', () => {
  const agent = agentSuite()

  const held = (sem: Semaphore) => firstValueFrom(sem.holding$.pipe(filter(Boolean)))

  it('acquires an uncontended slot, and close() leaves no contender key and no session', async (t) => {
    const prefix = testPrefix(t, agent.url, 'uncontended')
    const name = `uncontended ${prefix}`
    const sem = semaphore({ prefix, limit: 1, consul: agent.client, sessionName: name })
    const seen: boolean[] = []
    const sub = keep(
      t,
      sem.holding$.subscribe((h) => seen.push(h)),
    )
    await held(sem)
    const state = await firstValueFrom(sem.state$.pipe(filter((s) => s.holding)))
    assert.ok(state.session, 'the state names the session')
    assert.ok(state.fencingToken !== undefined && state.fencingToken > 0n)
    assert.deepEqual(state.holders, [state.session])
    const lock = await readLock(agent.url, prefix)
    assert.equal(lock?.entry.Flags, SEMAPHORE_FLAGS)
    assert.deepEqual(lock?.body, { Limit: 1, Holders: { [state.session]: true } })

    await sem.close()
    sub.unsubscribe()
    assert.deepEqual(seen, [false, true, false])
    const left = await listPrefix(agent.url, prefix)
    assert.deepEqual(
      left.map((e) => e.Key),
      [`${prefix}/.lock`],
      'only the coordinating key stays',
    )
    assert.deepEqual(holdersOf((await readLock(agent.url, prefix))?.body), [])
    assert.deepEqual(await sessionsNamed(agent.url, name), [])
  })

  it('hands the slot over to a waiter when the holder closes', async (t) => {
    const prefix = testPrefix(t, agent.url, 'handover')
    const a = semaphore({ prefix, limit: 1, consul: agent.client })
    const b = semaphore({ prefix, limit: 1, consul: agent.client })
    const subs = [a.holding$.subscribe()]
    await held(a)
    subs.push(b.holding$.subscribe())
    const waiting = await firstValueFrom(b.state$.pipe(filter((s) => s.waiting.length > 0)))
    assert.equal(waiting.holding, false)
    const tokenA = (await firstValueFrom(a.state$)).fencingToken
    await a.close()
    await held(b)
    const tokenB = (await firstValueFrom(b.state$)).fencingToken
    assert.ok(
      tokenA !== undefined && tokenB !== undefined && tokenB > tokenA,
      'fencing tokens increase',
    )
    await b.close()
    subs.forEach((s) => s.unsubscribe())
  })

  it('never lets more than 3 of 10 contenders hold at once, and serves all in arrival order', async (t) => {
    const prefix = testPrefix(t, agent.url, 'ten')
    const recorder = new SafetyRecorder(3)
    const subs: Subscription[] = []
    const done: Promise<void>[] = []
    const arrival: string[] = []
    /** Each contender's fencing token: the .lock ModifyIndex its acquisition wrote (Consul's order). */
    const tokens = new Map<string, bigint>()
    for (let i = 0; i < 10; i++) {
      const who = `c${i}`
      const sem = semaphore({ prefix, limit: 3, consul: agent.client, value: who })
      done.push(
        new Promise<void>((resolve, reject) => {
          let holding = false
          subs.push(
            sem.state$.subscribe({
              next: (s) => {
                if (s.holding === holding) return
                holding = s.holding
                recorder.record(who, s.holding)
                if (s.holding) {
                  if (s.fencingToken !== undefined) tokens.set(who, s.fencingToken)
                  setTimeout(() => void sem.close().then(resolve, reject), 30 + Math.random() * 120)
                }
              },
              error: reject,
            }),
          )
        }),
      )
      // Arrival: the contender key exists before the next contender starts.
      await firstValueFrom(sem.state$.pipe(filter((s) => s.session !== undefined && s.contending)))
      arrival.push(who)
    }
    await Promise.all(done)
    subs.forEach((s) => s.unsubscribe())
    assert.ok(recorder.maxConcurrent() <= 3, `max concurrent holders ${recorder.maxConcurrent()}`)
    assert.equal(recorder.acquisitionOrder().length, 10, 'every contender got a slot')
    assert.equal(tokens.size, 10, 'every acquisition has its fencing token')
    // Arrival order, in Consul's order of acquisitions (the fencing tokens), not in times that a
    // loaded machine stretches: a waiter tries only while fewer than `free slots` wait ahead of it
    // (when k slots free up together the first k try at once, and either may win the CAS first),
    // so whoever acquires does so with fewer than 3 earlier arrivals still waiting.
    for (const [j, late] of arrival.entries()) {
      const token = tokens.get(late) ?? 0n
      const overtaken = arrival.slice(0, j).filter((early) => (tokens.get(early) ?? 0n) > token)
      assert.ok(
        overtaken.length < 3,
        `${late} acquired while ${overtaken.join(', ')} (arrived before it) still waited`,
      )
    }
  })

  it('drops to false when an operator removes its session from .lock, and takes a slot again', async (t) => {
    const prefix = testPrefix(t, agent.url, 'operator-cas')
    const sem = semaphore({ prefix, limit: 1, consul: agent.client })
    const seen: { holding: boolean; at: number }[] = []
    const sub = keep(
      t,
      sem.holding$.subscribe((holding) => seen.push({ holding, at: Date.now() })),
    )
    await held(sem)
    const lock = await readLock(agent.url, prefix)
    assert.ok(lock)
    const removedAt = Date.now()
    assert.ok(
      await putRaw(
        agent.url,
        `${prefix}/.lock`,
        JSON.stringify({ Limit: 1, Holders: {} }),
        `cas=${lock.entry.ModifyIndex}&flags=${SEMAPHORE_FLAGS}`,
      ),
    )
    // The slot is free again, so the contender drops it and then takes it back by itself.
    await eventually('holding again', () => (seen.length === 4 ? true : undefined), 5000)
    assert.deepEqual(
      seen.map((s) => s.holding),
      [false, true, false, true],
    )
    const droppedAfter = (seen[2]?.at ?? Infinity) - removedAt
    assert.ok(
      droppedAfter < 2000,
      `dropped ${droppedAfter} ms after the edit: one watch round trip`,
    )
    await sem.close()
    sub.unsubscribe()
  })

  it('drops to false when an operator destroys its session, then contends again with a new session', async (t) => {
    const prefix = testPrefix(t, agent.url, 'operator-destroy')
    const sem = semaphore({ prefix, limit: 1, consul: agent.client })
    const sub = keep(t, sem.holding$.subscribe())
    await held(sem)
    const first = await firstValueFrom(sem.state$)
    assert.ok(first.session)
    const destroyedAt = Date.now()
    await destroyRawSession(agent.url, first.session)
    const lost = await firstValueFrom(sem.state$.pipe(filter((s) => !s.holding)))
    assert.ok(
      lost.reason === 'session-invalidated' || lost.reason === 'removed',
      String(lost.reason),
    )
    const again = await firstValueFrom(
      sem.state$.pipe(filter((s) => s.holding && s.session !== first.session)),
    )
    assert.notEqual(again.session, first.session)
    // Noticed from the watch and the refused re-acquire, not only at the next renewal (TTL/2).
    assert.ok(Date.now() - destroyedAt < 3000, `took ${Date.now() - destroyedAt} ms to hold again`)
    await sem.close()
    sub.unsubscribe()
  })

  it('prunes a dead holder listed in .lock and uses its slot', async (t) => {
    const prefix = testPrefix(t, agent.url, 'dead-holder')
    const dead = '00000000-dead-dead-dead-000000000000'
    await putRaw(
      agent.url,
      `${prefix}/.lock`,
      JSON.stringify({ Limit: 1, Holders: { [dead]: true } }),
      `flags=${SEMAPHORE_FLAGS}`,
    )
    const sem = semaphore({ prefix, limit: 1, consul: agent.client })
    const sub = keep(t, sem.holding$.subscribe())
    await held(sem)
    const session = (await firstValueFrom(sem.state$)).session
    assert.deepEqual(holdersOf((await readLock(agent.url, prefix))?.body), [session])
    await sem.close()
    sub.unsubscribe()
  })

  for (const [shape, body, expected] of [
    ['guide-list', { Limit: 2, Holders: [] }, (s: string) => ({ Limit: 2, Holders: [s] })],
    ['java-list', { limit: 2, holders: [] }, (s: string) => ({ limit: 2, holders: [s] })],
    ['go-map', { Limit: 2, Holders: {} }, (s: string) => ({ Limit: 2, Holders: { [s]: true } })],
  ] as const) {
    it(`reads a .lock in the ${shape} shape and writes it back in that shape`, async (t) => {
      const prefix = testPrefix(t, agent.url, `shape-${shape}`)
      await putRaw(agent.url, `${prefix}/.lock`, JSON.stringify(body))
      const sem = semaphore({ prefix, limit: 2, consul: agent.client })
      const sub = keep(t, sem.holding$.subscribe())
      await held(sem)
      const session = (await firstValueFrom(sem.state$)).session ?? ''
      assert.deepEqual((await readLock(agent.url, prefix))?.body, expected(session))
      await sem.close()
      sub.unsubscribe()
    })
  }

  it('errors with a typed Conflict and writes nothing when `consul lock` holds the prefix', async (t) => {
    const prefix = testPrefix(t, agent.url, 'conflict')
    await putRaw(agent.url, `${prefix}/.lock`, 'node-a', `flags=${LOCK_FLAGS}`)
    const before = await listPrefix(agent.url, prefix)
    const sem = semaphore({
      prefix,
      limit: 2,
      consul: agent.client,
      sessionName: `conflict ${prefix}`,
    })
    const seen: boolean[] = []
    const error = await new Promise<unknown>((resolve) =>
      keep(t, sem.holding$.subscribe({ next: (h) => seen.push(h), error: resolve })),
    )
    assert.ok(error instanceof SemaphoreError)
    assert.equal(error.kind, 'Conflict')
    assert.match(error.message, /\.lock/)
    assert.deepEqual(seen, [false])
    const entries = await listPrefix(agent.url, prefix)
    assert.deepEqual(
      entries.map((e) => e.Key),
      [`${prefix}/.lock`],
      'no contender key left',
    )
    assert.deepEqual(entries, before, '.lock untouched')
    // Again on the same client, which has now seen the prefix: still nothing written (a join in
    // one transaction would write the contender key before reading .lock; it is not tried here).
    const again = semaphore({
      prefix,
      limit: 2,
      consul: agent.client,
      sessionName: `conflict ${prefix}`,
    })
    const againError = await new Promise<unknown>((resolve) =>
      keep(t, again.holding$.subscribe({ error: resolve })),
    )
    assert.ok(againError instanceof SemaphoreError && againError.kind === 'Conflict')
    assert.deepEqual(await listPrefix(agent.url, prefix), before, 'nothing written the second time')
    await eventually('session destroyed', async () =>
      (await sessionsNamed(agent.url, `conflict ${prefix}`)).length === 0 ? true : undefined,
    )
  })

  it('errors with a typed LimitConflict naming both limits and writes nothing', async (t) => {
    const prefix = testPrefix(t, agent.url, 'limit-conflict')
    await putRaw(
      agent.url,
      `${prefix}/.lock`,
      JSON.stringify({ Limit: 5, Holders: {} }),
      `flags=${SEMAPHORE_FLAGS}`,
    )
    const before = await readLock(agent.url, prefix)
    const sem = semaphore({ prefix, limit: 2, consul: agent.client })
    const error = await new Promise<unknown>((resolve) =>
      keep(t, sem.holding$.subscribe({ error: resolve })),
    )
    assert.ok(error instanceof SemaphoreError)
    assert.equal(error.kind, 'LimitConflict')
    assert.match(error.message, /5/)
    assert.match(error.message, /2/)
    assert.equal((await readLock(agent.url, prefix))?.entry.ModifyIndex, before?.entry.ModifyIndex)
  })

  it('cleans up when unsubscribed while still waiting', async (t) => {
    const prefix = testPrefix(t, agent.url, 'cancel-wait')
    const holder = semaphore({ prefix, limit: 1, consul: agent.client })
    const hsub = keep(t, holder.holding$.subscribe())
    await held(holder)
    const name = `waiter ${prefix}`
    const waiter = semaphore({ prefix, limit: 1, consul: agent.client, sessionName: name })
    const wsub = keep(t, waiter.holding$.subscribe())
    await firstValueFrom(waiter.state$.pipe(filter((s) => s.contending)))
    wsub.unsubscribe()
    await eventually('waiter cleaned up', async () => {
      const keys = (await listPrefix(agent.url, prefix)).map((e) => e.Key)
      const sessions = await sessionsNamed(agent.url, name)
      return keys.length === 2 && sessions.length === 0 ? true : undefined
    })
    await holder.close()
    hsub.unsubscribe()
  })

  it('shares the slots correctly with a session of another client listed by hand', async (t) => {
    // A foreign contender following the guide: its own session, contender key and .lock entry.
    const prefix = testPrefix(t, agent.url, 'foreign')
    const foreign = await createRawSession(agent.url, {
      Name: 'foreign',
      TTL: '15s',
      Behavior: 'delete',
    })
    await putRaw(
      agent.url,
      `${prefix}/${foreign}`,
      'foreign',
      `acquire=${foreign}&flags=${SEMAPHORE_FLAGS}`,
    )
    await putRaw(
      agent.url,
      `${prefix}/.lock`,
      JSON.stringify({ Limit: 1, Holders: { [foreign]: true } }),
      `cas=0&flags=${SEMAPHORE_FLAGS}`,
    )
    const sem = semaphore({ prefix, limit: 1, consul: agent.client })
    const seen: boolean[] = []
    const sub = keep(
      t,
      sem.holding$.subscribe((h) => seen.push(h)),
    )
    // The 500 ms in which nothing may happen start once it contends and sees the foreign holder
    // (on a loaded machine it might otherwise not have looked yet).
    await firstValueFrom(
      sem.state$.pipe(filter((s) => s.contending && s.holders.includes(foreign))),
    )
    await sleep(500)
    assert.deepEqual(seen, [false], 'waits while the foreign holder is alive')
    await destroyRawSession(agent.url, foreign)
    await held(sem)
    await sem.close()
    sub.unsubscribe()
  })
})
