// A 3-server cluster loses its Raft leader while contenders (pointed at the two other servers)
// hold and wait: holders may blip to false while there is no leader, but never overlap; once a new
// leader is elected the slots are full again and a release hands a slot on; nothing is left.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { filter, firstValueFrom, type Subscription } from 'rxjs'
import {
  createConsulClient,
  semaphore,
  type ConsulClient,
  type Semaphore,
} from '../../src/index.js'
import { startCluster, uniquePrefix, type ConsulCluster } from '../support/consul-agent.js'
import { eventually, listPrefix, sessionsNamed } from '../support/observe.js'
import { SafetyRecorder } from '../support/safety-recorder.js'

const LIMIT = 2
const CONTENDERS = 4

describe('a leader failover', () => {
  let cluster: ConsulCluster
  before(async () => {
    cluster = await startCluster(3)
  })
  after(async () => {
    await cluster.stop()
  })

  it('keeps at most the limit holding through the loss of the leader, and works with the new one', async (t) => {
    const leader = await cluster.leader()
    const followers = cluster.servers.filter((s) => s !== leader)
    const clients: ConsulClient[] = followers.map((s) => createConsulClient({ address: s.addr }))
    const survivor = followers[0]
    assert.ok(survivor)
    const prefix = uniquePrefix('failover')
    const name = `failover ${prefix}`
    const recorder = new SafetyRecorder(LIMIT, () => Date.now())
    const holdingNow = new Set<string>()
    const blips: string[] = []
    let killAt = Infinity
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
            else if (holdingNow.delete(who) && Date.now() >= killAt) blips.push(who)
          },
          error: (e: unknown) => assert.fail(`${who} errored: ${String(e)}`),
        }),
      )
    }
    try {
      await eventually(
        'the slots filled',
        () => (holdingNow.size === LIMIT ? true : undefined),
        20_000,
      )
      await Promise.all(
        sems.map((s) =>
          firstValueFrom(s.state$.pipe(filter((x) => x.holding || x.rank !== undefined))),
        ),
      )
      killAt = Date.now()
      await leader.kill()
      const electedAt = await eventually(
        'a new leader',
        async () => {
          try {
            const res = await fetch(`${survivor.url}/v1/status/leader`)
            const addr = (await res.json()) as string
            return addr !== '' && addr !== `127.0.0.1:${leader.ports.server}`
              ? Date.now()
              : undefined
          } catch {
            return undefined
          }
        },
        30_000,
      )
      // Full again, and stays full for a moment (not a snapshot between two blips).
      let fullSince: number | undefined
      const recoveredAt = await eventually(
        'the slots full again',
        () => {
          if (holdingNow.size !== LIMIT) fullSince = undefined
          else fullSince ??= Date.now()
          return fullSince !== undefined && Date.now() - fullSince >= 2000 ? fullSince : undefined
        },
        45_000,
      )
      // The semaphore still works: a holder leaves, a waiter takes its slot.
      const states = await Promise.all(sems.map((s) => firstValueFrom(s.state$)))
      const leaving = states.findIndex((s) => s.holding)
      const releasedAt = Date.now()
      await sems[leaving]?.close()
      await eventually('a waiter took the slot', () =>
        holdingNow.size === LIMIT ? true : undefined,
      )
      const handoverMs = Date.now() - releasedAt
      assert.equal(recorder.assertSafe(), 0, 'no overlap')
      assert.ok(recorder.maxConcurrent() <= LIMIT)
      t.diagnostic(
        `failover: new leader ${electedAt - killAt} ms after the kill; holders that blipped: ` +
          `${blips.length === 0 ? 'none' : blips.join(', ')}; slots full again (and stable 2 s) ` +
          `${Math.max(0, recoveredAt - killAt)} ms after the kill; hand-over after a release ` +
          `${handoverMs} ms`,
      )
    } finally {
      await Promise.all(sems.map((s) => s.close()))
      subs.forEach((s) => s.unsubscribe())
      await Promise.all(clients.map((c) => c.close()))
    }
    await eventually('nothing left', async () => {
      const keys = (await listPrefix(survivor.url, prefix)).map((e) => e.Key)
      const sessions = await sessionsNamed(survivor.url, name)
      return keys.every((k) => k === `${prefix}/.lock`) && sessions.length === 0 ? true : undefined
    })
  })
})
