// Herd-free waiting across processes: each contender here has a client of its own (as a replica
// has), through a fault proxy of its own that shows what it long-polls. A replica whose contender
// waits further back than the first two places long-polls the key of the waiter ahead of it, not
// the prefix, so a handover in front of it costs it nothing; it still gets its turn.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { filter, firstValueFrom, type Subscription } from 'rxjs'
import {
  CONTENDER_FLAGS,
  createConsulClient,
  semaphore,
  type ConsulClient,
} from '../../src/index.js'
import type { Semaphore } from '../../src/recipes/semaphore.js'
import { sharedAgent } from '../support/consul-agent.js'
import { keep, testPrefix } from '../support/tracked.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import { eventually, listPrefix } from '../support/observe.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'

interface Replica {
  readonly proxy: FaultProxy
  readonly client: ConsulClient
  readonly sem: Semaphore
  readonly held: boolean[]
  readonly sub: Subscription
}

describe('queue watch', { timeout: SUITE_TIMEOUT_MS }, () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  const replicas: Replica[] = []
  before(async () => {
    consul = await sharedAgent()
  })
  after(async () => {
    for (const r of replicas) {
      r.sub.unsubscribe()
      await r.sem.close().catch(() => undefined)
      await r.client.close()
      await r.proxy.close()
    }
    await consul.close()
  })

  const replica = async (prefix: string, name: string): Promise<Replica> => {
    const proxy = await startFaultProxy(consul.addr)
    const client = createConsulClient({ address: proxy.addr, env: {} })
    const sem = semaphore({ prefix, limit: 1, consul: client, value: name })
    const held: boolean[] = []
    const sub = sem.holding$.subscribe((h) => held.push(h))
    const r = { proxy, client, sem, held, sub }
    replicas.push(r)
    return r
  }
  const session = async (r: Replica): Promise<string> =>
    (await firstValueFrom(r.sem.state$.pipe(filter((s) => s.contending)))).session ?? ''
  /**
   * What the replica's long poll is parked on now: the prefix (listed without its trailing slash,
   * so that a recursive delete wakes it), or a key.
   */
  const parkedOn = (r: Replica, prefix: string): string[] =>
    r.proxy
      .inFlightRequests()
      .filter((q) => q.method === 'GET' && /(^|&)index=/.test(q.query))
      .map((q) =>
        /(^|&)recurse/.test(q.query) && decodeURIComponent(q.path) === `/v1/kv/${prefix}`
          ? 'prefix'
          : q.path,
      )

  it('parks each replica on its own key (a holder, `.lock` too), wakes a waiter only when it is handed the slot, and serves everyone in order', async (t) => {
    const prefix = testPrefix(t, consul.url, 'queue-watch')
    const all: Replica[] = []
    const sessions: string[] = []
    for (let i = 0; i < 5; i++) {
      const r = await replica(prefix, `r${i}`)
      all.push(r)
      sessions.push(await session(r))
      if (i === 0) await firstValueFrom(r.sem.holding$.pipe(filter(Boolean)))
    }
    const [r0, r1, r2, r3, r4] = all as [Replica, Replica, Replica, Replica, Replica]
    // Every replica is alone in its process, every holder and waiter runs this library: each
    // long-polls its own key, the holder `.lock` beside it. Looked at once all five have their
    // long polls in flight: between two polls a replica has none, and a loaded machine can be
    // caught there.
    const own = (i: number): string => `/v1/kv/${prefix}/${sessions[i]}`
    const parked = await eventually('every replica parked on its own key', () => {
      const now = all.map((r) => parkedOn(r, prefix).sort())
      const lock = `/v1/kv/${prefix}/.lock`
      return now[0]?.join() === [lock, own(0)].sort().join() &&
        now.slice(1).every((p, i) => p.join() === own(i + 1))
        ? now
        : undefined
    })
    assert.ok(!parked.flat().includes('prefix'), 'nobody long-polls the prefix')

    // Two handovers in front of r4 (r0 → r1 → r2): r4 sends nothing, its key did not change.
    r4.proxy.resetCounts()
    await r0.sem.close()
    await firstValueFrom(r1.sem.holding$.pipe(filter(Boolean)))
    await r1.sem.close()
    await firstValueFrom(r2.sem.holding$.pipe(filter(Boolean)))
    assert.deepEqual(r4.proxy.requests(), [], 'r4 sent nothing during two handovers ahead of it')

    // The queue still moves to the end, one holder at a time, each in turn.
    for (const [holder, next] of [
      [r2, r3],
      [r3, r4],
    ] as const) {
      await holder.sem.close()
      await firstValueFrom(next.sem.holding$.pipe(filter(Boolean)))
    }
    await r4.sem.close()
    for (const r of all) assert.deepEqual(r.held, [false, true, false], 'each held once, in turn')
  })

  /** The requests a replica sent, as `METHOD path` with its session and the prefix left out. */
  const sentBy = (r: Replica, prefix: string, session: string): string[] =>
    r.proxy
      .requests()
      .map(
        (q) =>
          `${q.method} ${decodeURIComponent(q.path).replace(prefix, ':prefix').replace(session, ':session')}` +
          (/(^|&)index=/.test(q.query) ? ' (blocking)' : ''),
      )

  it("joins a contender in one transaction (key and snapshot at once) on a prefix its client has seen, as a replica's next tenure", async (t) => {
    const prefix = testPrefix(t, consul.url, 'queue-join')
    const first = await replica(prefix, 'first')
    await session(first)
    await firstValueFrom(first.sem.holding$.pipe(filter(Boolean)))
    // A client that has not seen the prefix lists it before it writes anything.
    const waiter = await replica(prefix, 'waiter')
    const waiterSession = await session(waiter)
    assert.deepEqual(sentBy(waiter, prefix, waiterSession).slice(0, 3), [
      'PUT /v1/session/create',
      'GET /v1/kv/:prefix',
      'PUT /v1/kv/:prefix/:session',
    ])
    await first.sem.close()
    await firstValueFrom(waiter.sem.holding$.pipe(filter(Boolean)))

    // The first replica's next tenure, on the same client: one transaction joins it.
    first.proxy.resetCounts()
    const again = semaphore({ prefix, limit: 1, consul: first.client, value: 'again' })
    const againSub = keep(t, again.holding$.subscribe())
    try {
      const againSession =
        (await firstValueFrom(again.state$.pipe(filter((s) => s.contending)))).session ?? ''
      const [key] = (await listPrefix(consul.url, prefix)).filter((e) => e.Session === againSession)
      assert.equal(key?.Key, `${prefix}/${againSession}`)
      assert.equal(key?.Flags, String(CONTENDER_FLAGS))
      assert.equal(Buffer.from(key?.Value ?? '', 'base64').toString('utf8'), 'again')
      await eventually('the joiner to long-poll', () =>
        parkedOn(first, prefix).length > 0 ? true : undefined,
      )
      // No listing of the prefix, no acquire of the key, no wake-up for its own write (a session
      // renewal, due 7.5 s after the create, is no part of the join: a loaded machine may get
      // there). Behind a holder of this library, it long-polls its own key.
      const sent = sentBy(first, prefix, againSession).filter(
        (q) => !q.startsWith('PUT /v1/session/renew/'),
      )
      assert.deepEqual(sent, [
        'PUT /v1/session/create',
        'PUT /v1/txn',
        'GET /v1/kv/:prefix/:session (blocking)',
      ])
      const joinTxn = first.proxy.requests().find((q) => q.path === '/v1/txn')?.sent ?? ''
      assert.match(joinTxn, /"Verb":"lock"/)
      assert.match(joinTxn, /"Verb":"get-tree"/)
      // The join's snapshot counts: it is served when the holder leaves.
      await waiter.sem.close()
      await firstValueFrom(again.holding$.pipe(filter(Boolean)))
    } finally {
      await again.close()
      againSub.unsubscribe()
    }
  })

  it("a process's later contenders of the prefix take their keys the usual way, on the shared watch", async (t) => {
    const prefix = testPrefix(t, consul.url, 'queue-join-second')
    const r = await replica(prefix, 'one')
    const oneSession = await session(r)
    await firstValueFrom(r.sem.holding$.pipe(filter(Boolean)))
    const second = semaphore({ prefix, limit: 1, consul: r.client, value: 'two' })
    const sub = keep(t, second.holding$.subscribe())
    try {
      const twoSession = (await firstValueFrom(second.state$.pipe(filter((s) => s.contending))))
        .session
      const acquired = r.proxy
        .requests()
        .filter((q) => q.method === 'PUT' && decodeURIComponent(q.path).endsWith(`/${twoSession}`))
      assert.equal(acquired.length, 1, 'the second contender acquired its key with a PUT')
      assert.match(acquired[0]?.query ?? '', /acquire=/)
      const joins = r.proxy
        .requests()
        .filter((q) => q.path === '/v1/txn' && q.sent?.includes('"Verb":"lock"'))
      assert.deepEqual(joins, [], 'no join transaction while the shared watch serves the process')
      assert.notEqual(twoSession, oneSession)
    } finally {
      await second.close()
      sub.unsubscribe()
      await r.sem.close()
    }
  })
})
