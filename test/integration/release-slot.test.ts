// releaseSlot against the real agent, its requests counted by the fault proxy: with the last
// snapshot as a hint it skips the read before its CAS; a stale or useless hint costs at most one
// failed CAS and never a wrong write.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import { filter, firstValueFrom } from 'rxjs'
import {
  CONTENDER_FLAGS,
  HOLDER_FLAGS,
  createConsulClient,
  semaphore,
  type ConsulClient,
} from '../../src/index.js'
import type { KVSnapshot } from '../../src/base/kv-snapshot.js'
import { releaseSlot } from '../../src/effects/release/release-slot.js'
import { sharedAgent } from '../support/consul-agent.js'
import { keep, onEnd, testPrefix, type Scope } from '../support/tracked.js'
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js'
import {
  SEMAPHORE_FLAGS,
  createRawSession,
  destroyRawSession,
  eventually,
  holdersOf,
  listPrefix,
  putRaw,
  readLock,
  sessionsNamed,
} from '../support/observe.js'

describe('releaseSlot', () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  let proxy: FaultProxy
  let client: ConsulClient
  before(async () => {
    consul = await sharedAgent()
    proxy = await startFaultProxy(consul.addr)
    client = createConsulClient({ address: proxy.addr, env: {} })
  })
  after(async () => {
    await client.close()
    await proxy.close()
    await consul.close()
  })

  /** A holder of `prefix` (limit 2) made by hand: session, contender key, `.lock` listing it. */
  const holder = async (prefix: string, name: string): Promise<string> => {
    const session = await createRawSession(consul.url, {
      Name: name,
      TTL: '30s',
      Behavior: 'delete',
    })
    const flags = `flags=${SEMAPHORE_FLAGS}`
    assert.ok(await putRaw(consul.url, `${prefix}/${session}`, '', `acquire=${session}&${flags}`))
    const lock = await readLock(consul.url, prefix)
    const holders = [...holdersOf(lock?.body), session]
    const body = JSON.stringify({
      Limit: 2,
      Holders: Object.fromEntries(holders.map((h) => [h, true])),
    })
    const cas = lock?.entry.ModifyIndex ?? 0
    assert.ok(await putRaw(consul.url, `${prefix}/.lock`, body, `cas=${cas}&${flags}`))
    return session
  }
  const snapshot = async (prefix: string): Promise<KVSnapshot> => {
    const listed = await client.kv.list(`${prefix}/`)()
    assert.ok(E.isRight(listed))
    return listed.right
  }
  /** What the release sent, as `METHOD path` with the session and prefix left out. */
  const sent = (prefix: string, session: string) =>
    proxy
      .requests()
      .map((r) => `${r.method} ${r.path.replace(session, ':session').replace(prefix, ':prefix')}`)
  const afterRelease = async (prefix: string, session: string, name: string) => {
    const lock = await readLock(consul.url, prefix)
    assert.ok(!holdersOf(lock?.body).includes(session), '.lock no longer lists the session')
    const keys = (await listPrefix(consul.url, prefix)).map((e) => e.Key)
    assert.ok(!keys.includes(`${prefix}/${session}`), 'the contender key is gone')
    assert.deepEqual(await sessionsNamed(consul.url, name), [], 'the session is destroyed')
    return holdersOf(lock?.body)
  }

  /**
   * A holder whose hint is stale: taken, then another holder joined (.lock's ModifyIndex moved
   * on). Runs `test`, then removes the other holder and the prefix.
   */
  const withStaleHint = async (
    t: Scope,
    label: string,
    test: (h: {
      prefix: string
      name: string
      session: string
      hint: KVSnapshot
      other: string
    }) => Promise<void>,
  ): Promise<void> => {
    const prefix = testPrefix(t, consul.url, label)
    const name = `${label} ${prefix}`
    const session = await holder(prefix, name)
    const hint = await snapshot(prefix)
    const other = await holder(prefix, `other ${prefix}`)
    try {
      await test({ prefix, name, session, hint, other })
    } finally {
      await destroyRawSession(consul.url, other)
    }
  }

  it('with a current hint, CASes at once: one transaction and the session destroy, no read', async (t) => {
    const prefix = testPrefix(t, consul.url, 'release-hint')
    const name = `release-hint ${prefix}`
    const session = await holder(prefix, name)
    const hint = await snapshot(prefix)
    proxy.resetCounts()
    const result = await releaseSlot({ client, prefix, session, limit: 2, hint })
    assert.ok(E.isRight(result), JSON.stringify(result))
    assert.deepEqual(sent(prefix, session), ['PUT /v1/txn', 'PUT /v1/session/destroy/:session'])
    assert.deepEqual(await afterRelease(prefix, session, name), [])
  })

  it('without a hint, reads only .lock first (not the whole prefix)', async (t) => {
    const prefix = testPrefix(t, consul.url, 'release-nohint')
    const name = `release-nohint ${prefix}`
    const session = await holder(prefix, name)
    proxy.resetCounts()
    assert.ok(E.isRight(await releaseSlot({ client, prefix, session, limit: 2 })))
    assert.deepEqual(sent(prefix, session), [
      'GET /v1/kv/:prefix/.lock',
      'PUT /v1/txn',
      'PUT /v1/session/destroy/:session',
    ])
    await afterRelease(prefix, session, name)
  })

  it('with a stale hint (.lock changed since), loses one CAS, re-reads .lock, and keeps the new holder', (t) =>
    withStaleHint(t, 'release-stale', async ({ prefix, name, session, hint, other }) => {
      proxy.resetCounts()
      assert.ok(E.isRight(await releaseSlot({ client, prefix, session, limit: 2, hint })))
      assert.deepEqual(sent(prefix, session), [
        'PUT /v1/txn',
        'GET /v1/kv/:prefix/.lock',
        'PUT /v1/txn',
        'PUT /v1/session/destroy/:session',
      ])
      assert.deepEqual(await afterRelease(prefix, session, name), [other])
    }))

  it('ignores a hint that does not list the session (taken before its CAS), and reads .lock instead', async (t) => {
    const prefix = testPrefix(t, consul.url, 'release-early')
    const name = `release-early ${prefix}`
    const early = await snapshot(prefix) // empty: before the session held anything
    const session = await holder(prefix, name)
    proxy.resetCounts()
    assert.ok(E.isRight(await releaseSlot({ client, prefix, session, limit: 2, hint: early })))
    assert.deepEqual(sent(prefix, session), [
      'GET /v1/kv/:prefix/.lock',
      'PUT /v1/txn',
      'PUT /v1/session/destroy/:session',
    ])
    await afterRelease(prefix, session, name)
  })

  it('with a stale hint naming a waiter of this library, loses one CAS, reads .lock, and hands the slot to that waiter', async (t) => {
    const prefix = testPrefix(t, consul.url, 'release-hand-off-stale')
    const name = `release-hand-off-stale ${prefix}`
    const session = await holder(prefix, name)
    const heir = await createRawSession(consul.url, {
      Name: `heir ${prefix}`,
      TTL: '30s',
      Behavior: 'delete',
    })
    const heirFlags = `flags=${String(CONTENDER_FLAGS)}`
    assert.ok(await putRaw(consul.url, `${prefix}/${heir}`, 'heir', `acquire=${heir}&${heirFlags}`))
    const hint = await snapshot(prefix)
    const other = await holder(prefix, `other ${prefix}`) // .lock moves on after the hint
    try {
      proxy.resetCounts()
      assert.ok(E.isRight(await releaseSlot({ client, prefix, session, limit: 2, hint })))
      assert.deepEqual(sent(prefix, session), [
        'PUT /v1/txn',
        'GET /v1/kv/:prefix/.lock',
        'PUT /v1/txn',
        'PUT /v1/session/destroy/:session',
      ])
      assert.deepEqual((await afterRelease(prefix, session, name)).sort(), [heir, other].sort())
      const heirKey = (await listPrefix(consul.url, prefix)).find(
        (e) => e.Key === `${prefix}/${heir}`,
      )
      assert.equal(heirKey?.Flags, String(HOLDER_FLAGS))
      assert.equal(heirKey?.Session, heir)
    } finally {
      await destroyRawSession(consul.url, heir)
      await destroyRawSession(consul.url, other)
    }
  })

  it('a waiter handed the slot between its read of .lock and the deletion of its key CASes itself out', async (t) => {
    const prefix = testPrefix(t, consul.url, 'release-handed-late')
    const holderName = `holder ${prefix}`
    const holding = await holder(prefix, holderName)
    const waiterName = `waiter ${prefix}`
    const waiter = await createRawSession(consul.url, {
      Name: waiterName,
      TTL: '30s',
      Behavior: 'delete',
    })
    const waiterFlags = `flags=${String(CONTENDER_FLAGS)}`
    assert.ok(
      await putRaw(consul.url, `${prefix}/${waiter}`, 'w', `acquire=${waiter}&${waiterFlags}`),
    )
    const holderHint = await snapshot(prefix)
    // The waiter's client runs the holder's release (a hand-off to the waiter) right after the
    // waiter's first read of .lock has been answered: the read says "not listed", which is stale
    // by the time the waiter acts on it.
    let handedOff = false
    const racing: ConsulClient = {
      ...client,
      kv: {
        ...client.kv,
        get: (key, options) => async () => {
          const answer = await client.kv.get(key, options)()
          if (!handedOff) {
            handedOff = true
            const hint = holderHint
            const result = await releaseSlot({ client, prefix, session: holding, limit: 2, hint })
            assert.ok(E.isRight(result), JSON.stringify(result))
            assert.deepEqual(holdersOf((await readLock(consul.url, prefix))?.body), [waiter])
          }
          return answer
        },
      },
    }
    try {
      proxy.resetCounts()
      const result = await releaseSlot({ client: racing, prefix, session: waiter, limit: 2 })
      assert.ok(E.isRight(result), JSON.stringify(result))
      assert.ok(handedOff, 'the hand-off ran during the release')
      const waiterSent = sent(prefix, waiter).filter((r) => !r.includes(holding))
      assert.deepEqual(waiterSent.slice(-4), [
        'DELETE /v1/kv/:prefix/:session',
        'GET /v1/kv/:prefix/.lock',
        'PUT /v1/txn',
        'PUT /v1/session/destroy/:session',
      ])
      assert.deepEqual(await afterRelease(prefix, waiter, waiterName), [], 'no holder left')
      assert.deepEqual(await afterRelease(prefix, holding, holderName), [])
      assert.deepEqual(await listPrefix(consul.url, prefix).then((l) => l.map((e) => e.Key)), [
        `${prefix}/.lock`,
      ])
    } finally {
      await destroyRawSession(consul.url, waiter)
    }
  })

  it('when every CAS loses, destroys the session: its key goes with it and an acquirer prunes it', (t) =>
    withStaleHint(t, 'release-fallback', async ({ prefix, name, session, hint, other }) => {
      // One attempt only: the stale hint's CAS is all the release gets.
      const result = await releaseSlot({ client, prefix, session, limit: 2, hint, attempts: 1 })
      assert.ok(E.isRight(result), JSON.stringify(result))
      assert.deepEqual(await sessionsNamed(consul.url, name), [], 'the session is destroyed')
      const keys = (await listPrefix(consul.url, prefix)).map((e) => e.Key)
      assert.ok(!keys.includes(`${prefix}/${session}`), 'Consul deleted the contender key')
      const lock = await readLock(consul.url, prefix)
      assert.deepEqual(
        holdersOf(lock?.body).sort(),
        [other, session].sort(),
        '.lock still lists it',
      )
      // A new contender prunes the dead session and takes the second slot.
      const sem = semaphore({ prefix, limit: 2, consul: client, sessionName: `next ${prefix}` })
      const sub = keep(t, sem.holding$.subscribe())
      const { session: next } = await firstValueFrom(sem.state$.pipe(filter((s) => s.holding)))
      const pruned = holdersOf((await readLock(consul.url, prefix))?.body).sort()
      assert.deepEqual(pruned, [other, next ?? ''].sort())
      await sem.close()
      sub.unsubscribe()
    }))

  it("semaphore close() passes its last snapshot: the holder's release reads nothing first", async (t) => {
    const prefix = testPrefix(t, consul.url, 'release-close')
    const name = `release-close ${prefix}`
    const sem = semaphore({ prefix, limit: 2, consul: client, sessionName: name })
    const sub = keep(t, sem.holding$.subscribe())
    // A second holder of the process: a process of several contenders watches the whole prefix,
    // so its last snapshot is as fresh as a read would be.
    const other = semaphore({ prefix, limit: 2, consul: client, value: 'other' })
    const otherSub = keep(t, other.holding$.subscribe())
    onEnd(t, () => other.close())
    const { session } = await firstValueFrom(sem.state$.pipe(filter((s) => s.holding)))
    await firstValueFrom(other.state$.pipe(filter((s) => s.holding)))
    // Once the watch blocks on an index at or after the CAS, its last snapshot lists the session.
    const casIndex = (await readLock(consul.url, prefix))?.entry.ModifyIndex ?? Infinity
    await eventually('the watch to see both CASes', () =>
      proxy
        .requests()
        .some(
          (r) => r.method === 'GET' && Number(/(?:^|&)index=(\d+)/.exec(r.query)?.[1]) >= casIndex,
        )
        ? true
        : undefined,
    )
    proxy.resetCounts()
    await sem.close()
    sub.unsubscribe()
    const reads = proxy.requests().filter((r) => r.method === 'GET' && !/(^|&)index=/.test(r.query))
    assert.deepEqual(reads, [], 'no non-blocking read of the prefix during the release')
    assert.ok(
      proxy.requests().some((r) => r.path === '/v1/txn'),
      'the release transaction was sent',
    )
    await afterRelease(prefix, session ?? '', name)
    await other.close()
    otherSub.unsubscribe()
  })

  it('a holder alone in its process watches the prefix while nobody waits, parks on its key and .lock once someone does, and its release finds a waiter that joined unseen', async (t) => {
    const prefix = testPrefix(t, consul.url, 'release-lone')
    const sem = semaphore({ prefix, limit: 1, consul: client, value: 'holder' })
    const sub = keep(t, sem.holding$.subscribe())
    const { session } = await firstValueFrom(sem.state$.pipe(filter((s) => s.holding)))
    const parkedOn = (p: FaultProxy): string[] =>
      p
        .inFlightRequests()
        .filter((q) => q.method === 'GET' && /(^|&)index=/.test(q.query))
        .map((q) => decodeURIComponent(q.path))
        .sort()
    await eventually('the holder, nobody waiting, to long-poll the prefix', () =>
      parkedOn(proxy).join() === `/v1/kv/${prefix}` ? true : undefined,
    )
    /** A waiter of another process, on a proxy of its own, parked on its own key. */
    const waiterOf = async (value: string) => {
      const waiterProxy = await startFaultProxy(consul.addr)
      const waiterClient = createConsulClient({ address: waiterProxy.addr, env: {} })
      onEnd(t, async () => {
        await waiterClient.close()
        await waiterProxy.close()
      })
      const waiter = semaphore({ prefix, limit: 1, consul: waiterClient, value })
      const waiterSub = keep(t, waiter.holding$.subscribe())
      onEnd(t, () => waiter.close())
      const waiting = await firstValueFrom(waiter.state$.pipe(filter((s) => s.contending)))
      await eventually(`${value} to park on its own key`, () =>
        parkedOn(waiterProxy).join() === `/v1/kv/${prefix}/${waiting.session ?? ''}`
          ? true
          : undefined,
      )
      return { waiter, waiterSub, waiterProxy }
    }
    // The first to join wakes the holder, which parks on its key and `.lock` from then on.
    const first = await waiterOf('first')
    const own = `/v1/kv/${prefix}/${session ?? ''}`
    await eventually('the holder to park on its key and .lock', () =>
      parkedOn(proxy).join() === [`/v1/kv/${prefix}/.lock`, own].sort().join() ? true : undefined,
    )
    // It leaves, and another joins: neither changes the holder's key or `.lock`.
    await first.waiter.close()
    first.waiterSub.unsubscribe()
    const { waiter, waiterSub, waiterProxy } = await waiterOf('second')
    assert.equal(
      parkedOn(proxy).join(),
      [`/v1/kv/${prefix}/.lock`, own].sort().join(),
      'the holder did not wake for either',
    )
    proxy.resetCounts()
    waiterProxy.resetCounts()
    await sem.close()
    sub.unsubscribe()
    await firstValueFrom(waiter.holding$.pipe(filter(Boolean)))
    const sent = proxy.requests().map((r) => `${r.method} ${decodeURIComponent(r.path)}`)
    assert.ok(sent.includes(`GET /v1/kv/${prefix}/`), 'the release listed the prefix')
    assert.ok(
      !waiterProxy.requests().some((r) => r.path === '/v1/txn'),
      'the waiter that joined unseen wrote nothing: it was handed the slot',
    )
    await waiter.close()
    waiterSub.unsubscribe()
  })
})
