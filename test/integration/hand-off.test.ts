// Direct hand-off: a holder of this library that releases names the first waiter in line holder in
// its own transaction when that waiter runs this library too, and releases the plain way when the
// first waiter is one of Consul's Go client (`consul lock -n`), which would not know it was handed
// a slot. Requests are counted at the fault proxy; holders are read from Consul.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { filter, firstValueFrom, type Subscription } from 'rxjs'
import { HOLDER_FLAGS, createConsulClient, semaphore, type ConsulClient } from '../../src/index.js'
import type { Semaphore } from '../../src/recipes/semaphore.js'
import { startConsulLock, stopAllConsulLocks } from '../support/cli.js'
import { sharedAgent } from '../support/consul-agent.js'
import { keep, testPrefix } from '../support/tracked.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import { eventually, holdersOf, listPrefix, readLock, type RawEntry } from '../support/observe.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'

describe('hand-off', { timeout: SUITE_TIMEOUT_MS }, () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  let proxy: FaultProxy
  let client: ConsulClient
  const subs: Subscription[] = []
  before(async () => {
    consul = await sharedAgent()
    proxy = await startFaultProxy(consul.addr)
    client = createConsulClient({ address: proxy.addr, env: {} })
  })
  after(async () => {
    subs.forEach((s) => s.unsubscribe())
    await stopAllConsulLocks()
    await client.close()
    await proxy.close()
    await consul.close()
  })

  const contender = (prefix: string, limit: number, value: string): Semaphore => {
    const sem = semaphore({
      prefix,
      limit,
      consul: client,
      value,
      sessionName: `${value} ${prefix}`,
    })
    subs.push(sem.holding$.subscribe())
    return sem
  }
  const holding = (sem: Semaphore) => firstValueFrom(sem.state$.pipe(filter((s) => s.holding)))
  const keyOf = async (prefix: string, session: string): Promise<RawEntry | undefined> =>
    (await listPrefix(consul.url, prefix)).find((e) => e.Key === `${prefix}/${session}`)
  const contenderKeys = async (prefix: string): Promise<string[]> =>
    (await listPrefix(consul.url, prefix)).map((e) => e.Key).filter((k) => !k.endsWith('/.lock'))
  /**
   * Waits until `sem` (a holder: it sees every snapshot) sees `holders` holders and `count`
   * contenders waiting: a holder's snapshot from before another holder's CAS lists it waiting.
   */
  const seesWaiting = (sem: Semaphore, count: number, holders = 1) =>
    firstValueFrom(
      sem.state$.pipe(
        filter((s) => s.holding && s.holders.length === holders && s.waiting.length === count),
      ),
    )

  it("marks a CAS winner's key, and hands the slot to the first waiter in the release transaction; its fencing token is the hand-off index", async (t) => {
    const prefix = testPrefix(t, consul.url, 'hand-off')
    const first = contender(prefix, 1, 'first')
    const took = await holding(first)
    // Its own CAS rewrote its key in the same transaction: the key's index is its token.
    const firstKey = await keyOf(prefix, took.session ?? '')
    assert.equal(firstKey?.Flags, String(HOLDER_FLAGS))
    assert.equal(firstKey?.Session, took.session, 'the rewrite kept the lock')
    assert.equal(took.fencingToken, BigInt(firstKey?.ModifyIndex ?? 0))
    const next = contender(prefix, 1, 'next')
    const { waiting } = await seesWaiting(first, 1)
    const heir = waiting[0]?.session ?? ''

    proxy.resetCounts()
    await first.close()
    const held = await holding(next)
    assert.equal(held.session, heir)
    const txns = proxy.requests().filter((r) => r.path === '/v1/txn')
    assert.equal(txns.length, 1, 'one transaction: the release that handed the slot over')
    const casPuts = proxy.requests().filter((r) => r.method === 'PUT' && /(^|&)cas=/.test(r.query))
    assert.deepEqual(casPuts, [], 'the heir wrote no CAS of its own')

    const key = await keyOf(prefix, heir)
    const lock = await readLock(consul.url, prefix)
    assert.equal(key?.Flags, String(HOLDER_FLAGS), "the hand-off rewrote the heir's key")
    assert.equal(key?.Session, heir, 'and the heir still locks it')
    assert.equal(held.fencingToken, BigInt(key?.ModifyIndex ?? 0))
    assert.equal(held.fencingToken, BigInt(lock?.entry.ModifyIndex ?? 0), ".lock's index too")
    assert.deepEqual(holdersOf(lock?.body), [heir])

    await next.close()
    assert.deepEqual(await contenderKeys(prefix), [])
    assert.deepEqual(holdersOf((await readLock(consul.url, prefix))?.body), [])
  })

  it('releases the plain way when a consul lock -n waiter is first in line, and hands over to ours behind it later', async (t) => {
    const prefix = testPrefix(t, consul.url, 'hand-off-go')
    // Never more live holders than the limit, as Consul shows them at every change.
    let most = 0
    const watch = keep(
      t,
      client.watchPrefix(`${prefix}/`, { waitMs: 5000 }).subscribe((event) => {
        if (event.type !== 'snapshot') return
        const lock = event.snapshot.entries.find((e) => e.key === `${prefix}/.lock`)
        const live = new Set(event.snapshot.entries.flatMap((e) => (e.session ? [e.session] : [])))
        const listed = lock?.value
          ? holdersOf(JSON.parse(Buffer.from(lock.value).toString('utf8')) as unknown)
          : []
        most = Math.max(most, listed.filter((s) => live.has(s)).length)
      }),
    )
    subs.push(watch) // ended before the client closes, even when the test fails
    const a = contender(prefix, 2, 'a')
    const b = contender(prefix, 2, 'b')
    await Promise.all([holding(a), holding(b)])
    const go = startConsulLock(consul.addr, ['-n=2', prefix, 'echo go-holds; sleep 300'])
    await seesWaiting(a, 1, 2)
    const ours = contender(prefix, 2, 'ours')
    await seesWaiting(a, 2, 2)

    await a.close()
    await eventually('consul lock to run its command', () =>
      go.stdout().includes('go-holds') ? true : undefined,
    ).catch(async (error: unknown) => {
      const keys = await listPrefix(consul.url, prefix)
      const lock = await readLock(consul.url, prefix)
      throw new Error(
        `${String(error)}; .lock ${JSON.stringify(lock?.body)}; keys ${JSON.stringify(keys.map((k) => [k.Key, k.Session, k.CreateIndex, k.Flags]))}; consul lock said ${go.stderr()}`,
      )
    })
    const { session: ourSession } = await firstValueFrom(
      ours.state$.pipe(filter((s) => s.rank === 0)),
    )
    assert.notEqual((await keyOf(prefix, ourSession ?? ''))?.Flags, String(HOLDER_FLAGS))
    assert.equal(await firstValueFrom(ours.holding$), false, 'ours still waits behind consul lock')

    await b.close()
    const held = await holding(ours)
    assert.equal(
      (await keyOf(prefix, held.session ?? ''))?.Flags,
      String(HOLDER_FLAGS),
      'handed by b',
    )
    await stopAllConsulLocks([go])
    await ours.close()
    watch.unsubscribe()
    assert.ok(most <= 2, `at most 2 live holders at once, saw ${most}`)
  })

  it('frees a slot handed to a waiter that is closing at that moment', async (t) => {
    const prefix = testPrefix(t, consul.url, 'hand-off-closing')
    const first = contender(prefix, 1, 'first')
    await holding(first)
    const next = contender(prefix, 1, 'next')
    await seesWaiting(first, 1)
    await Promise.all([first.close(), next.close()])
    const later = contender(prefix, 1, 'later')
    const { session } = await holding(later)
    assert.deepEqual(holdersOf((await readLock(consul.url, prefix))?.body), [session])
    await later.close()
    assert.deepEqual(await contenderKeys(prefix), [], 'no key left: the handed slot was freed')
    assert.deepEqual(holdersOf((await readLock(consul.url, prefix))?.body), [])
  })
})
