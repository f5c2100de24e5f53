// A dev agent restarted under holders and waiters comes back empty (sessions gone, indexes
// backwards): every holder drops to false, everyone contends again with a new session, and the
// slots are filled up to the limit again, with no overlap.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { filter, firstValueFrom, type Subscription } from 'rxjs'
import {
  createConsulClient,
  semaphore,
  type ConsulClient,
  type Semaphore,
} from '../../src/index.js'
import { startAgent, type ConsulAgent } from '../support/consul-agent.js'
import { testPrefix } from '../support/tracked.js'
import { eventually, listPrefix, sessionsNamed } from '../support/observe.js'
import { SafetyRecorder } from '../support/safety-recorder.js'

const LIMIT = 2
const CONTENDERS = 5

describe('an agent restart', () => {
  let agent: ConsulAgent
  const clients: ConsulClient[] = []
  before(async () => {
    agent = await startAgent()
    for (let i = 0; i < 2; i++) clients.push(createConsulClient({ address: agent.addr }))
  })
  after(async () => {
    await Promise.all(clients.map((c) => c.close()))
    await agent.stop()
  })

  it('drops every holder to false, then refills the slots up to the limit with no overlap', async (t) => {
    const prefix = testPrefix(t, agent.url, 'restart')
    const name = `restart ${prefix}`
    const recorder = new SafetyRecorder(LIMIT, () => Date.now())
    const holdingNow = new Set<string>()
    const lastFalseAt = new Map<string, number>()
    const sems: Semaphore[] = []
    const subs: Subscription[] = []
    for (let i = 0; i < CONTENDERS; i++) {
      const who = `c${i}`
      const sem = semaphore({
        prefix,
        limit: LIMIT,
        consul: clients[i % clients.length],
        ttl: '10s',
        sessionName: name,
      })
      sems.push(sem)
      subs.push(
        sem.holding$.subscribe({
          next: (h) => {
            recorder.record(who, h)
            if (h) holdingNow.add(who)
            else {
              holdingNow.delete(who)
              lastFalseAt.set(who, Date.now())
            }
          },
          error: (e: unknown) => assert.fail(`${who} errored: ${String(e)}`),
        }),
      )
    }
    try {
      await eventually('the slots filled', () => (holdingNow.size === LIMIT ? true : undefined))
      const before = [...holdingNow]
      await Promise.all(
        sems.map((s) =>
          firstValueFrom(s.state$.pipe(filter((x) => x.holding || x.rank !== undefined))),
        ),
      )

      const restartAt = Date.now()
      await agent.restart()
      const readyAt = Date.now()
      // Everyone who held dropped, and did so before the agent was back.
      for (const who of before) {
        const droppedAt = lastFalseAt.get(who)
        assert.ok(droppedAt !== undefined && droppedAt >= restartAt, `${who} dropped`)
        assert.ok(droppedAt <= readyAt, `${who} dropped while the agent was away`)
      }
      const dropMs = Math.max(...before.map((w) => (lastFalseAt.get(w) ?? 0) - restartAt))
      await eventually(
        'the slots filled again',
        () => (holdingNow.size === LIMIT ? true : undefined),
        30_000,
      )
      const recoveredAt = Date.now()
      // And the new tenure is real: .lock on the fresh agent lists exactly the holders' sessions.
      const states = await Promise.all(sems.map((s) => firstValueFrom(s.state$)))
      const holders = states.filter((s) => s.holding).map((s) => s.session)
      const lock = (await listPrefix(agent.url, prefix)).find((e) => e.Key === `${prefix}/.lock`)
      assert.ok(
        lock,
        `.lock rewritten on the empty agent; states: ${JSON.stringify(
          states.map((s) => ({
            h: s.holding,
            s: s.session,
            r: s.reason,
            c: s.connected,
            l: s.holders,
          })),
        )}; keys: ${JSON.stringify(await listPrefix(agent.url, prefix))}; sessions: ${JSON.stringify(
          await sessionsNamed(agent.url, name),
        )}`,
      )
      for (const session of holders) {
        assert.ok(
          Buffer.from(lock.Value ?? '', 'base64')
            .toString()
            .includes(session ?? '?'),
        )
      }
      assert.equal(recorder.assertSafe(), 0, 'no overlap')
      assert.ok(recorder.maxConcurrent() <= LIMIT)
      t.diagnostic(
        `restart: holders dropped within ${dropMs} ms of the restart; the agent was away ` +
          `${readyAt - restartAt} ms; the slots were full again ${recoveredAt - readyAt} ms after ` +
          `it was back (${recoveredAt - restartAt} ms after the restart began)`,
      )
    } finally {
      await Promise.all(sems.map((s) => s.close()))
      subs.forEach((s) => s.unsubscribe())
    }
    await eventually('nothing left', async () => {
      const keys = (await listPrefix(agent.url, prefix)).map((e) => e.Key)
      const sessions = await sessionsNamed(agent.url, name)
      return keys.every((k) => k === `${prefix}/.lock`) && sessions.length === 0 ? true : undefined
    })
  })
})
