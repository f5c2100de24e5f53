// A waiter cut off from Consul while the agent restarts twice and loses its state (a dev agent
// comes back empty: every session and key gone, indexes back near 1) is served within 2 × TTL of
// its network healing. Its session is gone, so it contends again with a new one (the design: a
// lost session is replaced, not reported as an error), and holding$ turns true only once Consul's
// new `.lock` lists that new session.
//
// The waiter shares its process's watch with another contender of the prefix whose renewal is not
// due yet (a longer TTL): that contender keeps the watch running through the state loss, so the
// waiter's new session decides on what the watch shows. The watch must learn at once that the
// agent's indexes went back, not block on an index the new agent has not reached.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { filter, firstValueFrom, timeout, type Subscription } from 'rxjs'
import {
  CONTENDER_FLAGS,
  createConsulClient,
  semaphore,
  type ConsulClient,
  type SemaphoreState,
  type Semaphore,
} from '../../src/index.js'
import { startAgent, type ConsulAgent } from '../support/consul-agent.js'
import { testPrefix } from '../support/tracked.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import {
  SEMAPHORE_FLAGS,
  createRawSession,
  deleteTree,
  destroyRawSession,
  holdersOf,
  listPrefix,
  putRaw,
  readLock,
} from '../support/observe.js'

const LIMIT = 2
const TTL_MS = 10_000

/** The index a listing of `prefix` answers with now (X-Consul-Index). */
async function indexOf(url: string, prefix: string): Promise<bigint> {
  const res = await fetch(`${url}/v1/kv/${prefix}?recurse`)
  await res.body?.cancel()
  return BigInt(res.headers.get('x-consul-index') ?? '0')
}

describe('a waiter cut off while the agent restarts and loses its state', () => {
  let agent: ConsulAgent
  let proxy: FaultProxy
  let client: ConsulClient
  before(async () => {
    agent = await startAgent()
    proxy = await startFaultProxy(agent.addr)
    client = createConsulClient({ address: proxy.addr })
  })
  after(async () => {
    await client?.close()
    await proxy?.close()
    await agent?.stop()
  })

  it('is served within 2 × TTL of the network healing, with a new session', async (t) => {
    const prefix = testPrefix(t, agent.url, 'state-loss')
    const name = `state-loss ${prefix}`
    const sems: Semaphore[] = []
    const subs: Subscription[] = []
    const holders: string[] = []
    try {
      // Both slots held by sessions of another process, which the state loss takes away.
      for (let i = 0; i < LIMIT; i++) {
        const id = await createRawSession(agent.url, { TTL: '300s', Behavior: 'delete' })
        holders.push(id)
        await putRaw(
          agent.url,
          `${prefix}/${id}`,
          '',
          `acquire=${id}&flags=${String(CONTENDER_FLAGS)}`,
        )
      }
      await putRaw(
        agent.url,
        `${prefix}/.lock`,
        JSON.stringify({
          Limit: LIMIT,
          Holders: Object.fromEntries(holders.map((h) => [h, true])),
        }),
        `flags=${SEMAPHORE_FLAGS}`,
      )
      // Raise the index well above where the restarted agent will be, as a long-lived agent's is.
      for (let i = 0; i < 50; i++) await putRaw(agent.url, `${prefix}/.pump`, String(i))
      await fetch(`${agent.url}/v1/kv/${prefix}/.pump`, { method: 'DELETE' }).then((r) => r.text())

      // The waiter, and beside it in the same process (same client) a contender whose session
      // lives 60 s: its first renewal comes 30 s after it was made, long after the network heals.
      const waiter = semaphore({
        prefix,
        limit: LIMIT,
        consul: client,
        ttl: '10s',
        sessionName: name,
      })
      const neighbour = semaphore({
        prefix,
        limit: LIMIT,
        consul: client,
        ttl: '60s',
        sessionName: name,
      })
      sems.push(waiter, neighbour)
      const states: SemaphoreState[] = []
      subs.push(waiter.state$.subscribe((s) => states.push(s)))
      for (const sem of sems) subs.push(sem.holding$.subscribe())
      const queued = await Promise.all(
        sems.map((s) => firstValueFrom(s.state$.pipe(filter((x) => x.rank !== undefined)))),
      )
      const firstSession = queued[0]?.session
      assert.ok(firstSession !== undefined, 'the waiter has a session')
      const indexBefore = await indexOf(agent.url, prefix)

      // Cut the waiter's process off; restart the agent twice, each time losing its state.
      proxy.setMode('blackhole')
      await agent.restart()
      await putRaw(agent.url, `rxsem-test-between/${prefix}`, 'x')
      await agent.restart()
      const indexAfter = await indexOf(agent.url, prefix)
      assert.ok(
        indexAfter < indexBefore,
        `the agent lost its state: index ${indexAfter} after, ${indexBefore} before`,
      )
      // Heal once the waiter has seen its renewal time out: the client counted the network's
      // failure, as a cut longer than the request timeout makes it.
      await firstValueFrom(
        waiter.state$.pipe(
          filter((s) => s.lastError?.during === 'renewal'),
          timeout(30_000),
        ),
      )
      proxy.setMode('pass')
      const healedAt = Date.now()

      // Bounded by more than 2 × TTL, so that a failure says how long it took.
      const held = await firstValueFrom(
        waiter.state$.pipe(
          filter((s) => s.holding),
          timeout(60_000),
        ),
      ).catch(() => undefined)
      const heldAfterMs = Date.now() - healedAt
      const lock = await readLock(agent.url, prefix)
      t.diagnostic(
        `index ${indexBefore} before the state loss, ${indexAfter} after; the waiter held ` +
          `${held ? `${heldAfterMs} ms` : 'not within 60 s'} after the network healed`,
      )
      assert.ok(
        held !== undefined,
        `the waiter was not served within 60 s of healing; last state: ${JSON.stringify({
          session: states.at(-1)?.session,
          rank: states.at(-1)?.rank,
          connected: states.at(-1)?.connected,
        })}; keys: ${JSON.stringify((await listPrefix(agent.url, prefix)).map((e) => e.Key))}`,
      )
      assert.ok(
        heldAfterMs <= 2 * TTL_MS,
        `the waiter held ${heldAfterMs} ms after the network healed, more than 2 × TTL`,
      )
      // A new session, which Consul's new `.lock` lists: the slot is really held.
      assert.notEqual(held.session, firstSession, 'a new session after the state loss')
      assert.ok(
        lock !== undefined && holdersOf(lock.body).includes(held.session ?? '?'),
        `.lock lists the waiter's new session: ${JSON.stringify(lock?.body)}`,
      )
    } finally {
      await Promise.all(sems.map((s) => s.close().catch(() => undefined)))
      subs.forEach((s) => s.unsubscribe())
      await Promise.all(holders.map((h) => destroyRawSession(agent.url, h)))
      await deleteTree(agent.url, `rxsem-test-between/${prefix}`)
    }
  })
})
