// The release driver in virtual time, on the in-memory Consul double: the orderings that only a
// live agent used to produce (a hint gone stale under the CAS, a CAS that loses every time, a
// hand-off that names a waiter between its read and its delete) are forced here with the double's
// gates, and every wait of the release (retry backoff, the pause after a lost CAS) is virtual.
import assert from 'node:assert/strict'
import { afterEach, beforeEach, describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import { VirtualTimeScheduler } from 'rxjs'
import type { ConsulClient } from '../../src/consul/client-api.js'
import { CONTENDER_FLAGS, HOLDER_FLAGS, LOCK_FLAGS, SEMAPHORE_FLAGS } from '../../src/base/flags.js'
import type { KVSnapshot } from '../../src/base/kv-snapshot.js'
import { releaseNext, releaseStart } from '../../src/core/release/release-slot-plan.js'
import { runReleasePlan } from '../../src/effects/release/release-driver.js'
import { releaseLeaderKey } from '../../src/effects/release/leader-key-release.js'
import { releaseSlot } from '../../src/effects/release/release-slot.js'
import {
  autoAdvance,
  createConsulDouble,
  unreachable,
  type ConsulDouble,
  type DoubleCall,
} from '../support/consul-double.js'
import { ok, utf8 } from '../integration/consul-test-kit.js'

const prefix = 'svc/release'
const lockKey = `${prefix}/.lock`
/** The driver's jitter: the pause after the n-th lost CAS is half its ceiling (2.5 ms, 5 ms, …). */
const random = () => 0.5

describe('release driver on the Consul double, in virtual time', () => {
  let scheduler: VirtualTimeScheduler
  let double: ConsulDouble
  let stop: () => void
  beforeEach(() => {
    scheduler = new VirtualTimeScheduler()
    double = createConsulDouble({ scheduler })
    stop = autoAdvance(scheduler)
  })
  afterEach(async () => {
    stop()
    await double.close()
    assert.deepEqual(scheduler.actions, [], 'no timer left scheduled')
  })

  /** A session without TTL (so that no expiry runs while a call is held), behavior delete. */
  const session = (client: ConsulClient) =>
    ok(client.session.create({ behavior: 'delete', lockDelay: 0 }))

  /** The holders `.lock` lists now, in order. */
  const holders = (): string[] => {
    const entry = double.entries(prefix).find((e) => e.key === lockKey)
    const body = JSON.parse(utf8(entry?.value) ?? '{"Holders":{}}') as { Holders: object }
    return Object.keys(body.Holders)
  }

  /** A holder made by hand: its key (HOLDER_FLAGS) and `.lock` listing it beside the others. */
  const holder = async (client: ConsulClient): Promise<string> => {
    const id = await session(client)
    await ok(client.kv.put(`${prefix}/${id}`, '', { acquire: id, flags: HOLDER_FLAGS }))
    const lock = await ok(client.kv.get(lockKey))
    const listed = Object.fromEntries([...holders(), id].map((h) => [h, true]))
    const body = JSON.stringify({ Limit: 2, Holders: listed })
    const cas = lock?.modifyIndex ?? 0n
    assert.ok(await ok(client.kv.put(lockKey, body, { cas, flags: SEMAPHORE_FLAGS })))
    return id
  }

  /** A waiter of this library: its key with CONTENDER_FLAGS, locked by its session. */
  const waiter = async (client: ConsulClient): Promise<string> => {
    const id = await session(client)
    await ok(client.kv.put(`${prefix}/${id}`, 'w', { acquire: id, flags: CONTENDER_FLAGS }))
    return id
  }

  const snapshot = (client: ConsulClient): Promise<KVSnapshot> => ok(client.kv.list(`${prefix}/`))

  /** The calls `client` made from `from` on, as `method args`, with the session ids named. */
  const callsOf = (name: string, from: number, names: Record<string, string>): string[] =>
    double
      .calls()
      .slice(from)
      .filter((call) => call.client === name)
      .map((call) =>
        Object.entries(names).reduce(
          (line, [id, as]) => line.replaceAll(id, as),
          `${call.method} ${call.args}`,
        ),
      )

  const keys = () => double.entries(prefix).map((e) => e.key)
  const sessionIds = () => double.sessions().map((s) => s.id)
  const from = (method: string, name: string) => (call: DoubleCall) =>
    call.method === method && call.client === name

  it('releases a holder from its hint: one transaction, then the session destroy', async () => {
    const me = await holder(double.client)
    const hint = await snapshot(double.client)
    const start = double.calls().length
    const result = await releaseSlot({ client: double.client, prefix, session: me, limit: 2, hint })
    assert.deepEqual(result, E.right({ type: 'Released' }))
    assert.deepEqual(callsOf('client', start, { [me]: 'me' }), [
      `kv.txn cas ${lockKey}@${hint.entries.find((e) => e.key === lockKey)?.modifyIndex}, delete ${prefix}/me`,
      'session.destroy me',
    ])
    assert.deepEqual(holders(), [])
    assert.deepEqual(keys(), [lockKey])
    assert.deepEqual(sessionIds(), [])
  })

  it('hands the slot to our first waiter in the release transaction', async () => {
    const me = await holder(double.client)
    const next = await waiter(double.client)
    const hint = await snapshot(double.client)
    const result = await releaseSlot({ client: double.client, prefix, session: me, limit: 2, hint })
    assert.deepEqual(result, E.right({ type: 'HandedOff', heir: next }))
    assert.deepEqual(holders(), [next])
    const heirKey = double.entries(prefix).find((e) => e.key === `${prefix}/${next}`)
    assert.equal(heirKey?.flags, HOLDER_FLAGS, "the heir's key says it holds")
    assert.equal(heirKey?.session, next, 'and is still locked by the heir')
    assert.deepEqual(sessionIds(), [next])
  })

  it('race: another holder writes .lock between the hint and the CAS; the CAS loses, a pause, a read, the CAS again keeps the other', async () => {
    const me = await holder(double.client)
    const hint = await snapshot(double.client)
    const other = double.connect('other')
    const gate = double.hold('kv.txn', { when: from('kv.txn', 'releaser') })
    const releaser = double.connect('releaser')
    const start = double.calls().length
    const released = releaseSlot({
      client: releaser,
      prefix,
      session: me,
      limit: 2,
      hint,
      scheduler,
      random,
    })
    await gate.reached
    const joined = await holder(other)
    gate.release()
    assert.deepEqual(await released, E.right({ type: 'Released' }))
    const mine = double
      .calls()
      .slice(start)
      .filter((c) => c.client === 'releaser')
    assert.deepEqual(
      mine.map((c) => `${c.method} ${c.answer}`),
      ['kv.txn rolled back', 'kv.get ok', 'kv.txn ok', 'session.destroy ok'],
    )
    assert.equal((mine[1]?.at ?? 0) - (mine[0]?.at ?? 0), 2.5, 'the pause: 0.5 × 5 ms, virtual')
    assert.deepEqual(holders(), [joined])
    assert.ok(!keys().includes(`${prefix}/${me}`))
    assert.ok(!sessionIds().includes(me))
  })

  it('race: every CAS loses to another writer; the session destroy frees the slot anyway', async () => {
    const me = await holder(double.client)
    const hint = await snapshot(double.client)
    const other = double.connect('other')
    const gates = [1, 2].map(() => double.hold('kv.txn', { when: from('kv.txn', 'releaser') }))
    const releaser = double.connect('releaser')
    const released = releaseSlot({
      client: releaser,
      prefix,
      session: me,
      limit: 2,
      hint,
      attempts: 2,
      scheduler,
      random,
    })
    // Another contender joins under the first CAS, and leaves under the second (Consul keeps the
    // ModifyIndex of a write that changes nothing, so each write must change `.lock`).
    await gates[0]?.reached
    const joined = await holder(other)
    gates[0]?.release()
    await gates[1]?.reached
    const left = await releaseSlot({ client: other, prefix, session: joined, limit: 2, scheduler })
    assert.deepEqual(left, E.right({ type: 'Released' }))
    gates[1]?.release()
    assert.deepEqual(await released, E.right({ type: 'GaveUp' }))
    const txns = double.calls().filter(from('kv.txn', 'releaser'))
    assert.deepEqual(
      txns.map((c) => c.answer),
      ['rolled back', 'rolled back'],
    )
    assert.ok(!sessionIds().includes(me), 'the session is destroyed')
    assert.ok(!keys().includes(`${prefix}/${me}`), 'its key went with it (behavior delete)')
    assert.deepEqual(holders(), [me], '.lock lists it, dead: the next acquirer prunes it')
    assert.deepEqual(keys(), [lockKey])
  })

  it('race: a hand-off names a waiter between its read of .lock and the delete of its key; the waiter CASes itself out', async () => {
    const holding = await holder(double.client)
    const me = await waiter(double.client)
    const holderHint = await snapshot(double.client)
    const gate = double.hold('kv.delete', { when: from('kv.delete', 'waiter') })
    const mine = double.connect('waiter')
    const start = double.calls().length
    const released = releaseSlot({ client: mine, prefix, session: me, limit: 2, scheduler, random })
    await gate.reached
    // The holder's release lands now: it hands its slot to the waiter, whose key is still there.
    const handOff = await releaseSlot({
      client: double.connect('holder'),
      prefix,
      session: holding,
      limit: 2,
      hint: holderHint,
      scheduler,
      random,
    })
    assert.deepEqual(handOff, E.right({ type: 'HandedOff', heir: me }))
    assert.deepEqual(holders(), [me], 'the hand-off named the waiter')
    const handedAt = double.entries(prefix).find((e) => e.key === lockKey)?.modifyIndex
    gate.release()
    assert.deepEqual(await released, E.right({ type: 'Released' }))
    assert.deepEqual(callsOf('waiter', start, { [me]: 'me' }), [
      `kv.get ${lockKey}`,
      `kv.delete ${prefix}/me`,
      `kv.get ${lockKey}`,
      `kv.txn cas ${lockKey}@${handedAt}, delete ${prefix}/me`,
      'session.destroy me',
    ])
    assert.deepEqual(holders(), [], 'no holder left in .lock')
    assert.deepEqual(keys(), [lockKey])
    assert.deepEqual(sessionIds(), [])
  })

  it('tries a call again 100 ms (virtual) after a transient failure', async () => {
    const me = await holder(double.client)
    double.fail('kv.get', unreachable(`GET /v1/kv/${lockKey}`))
    const start = double.calls().length
    const result = await releaseSlot({
      client: double.client,
      prefix,
      session: me,
      limit: 2,
      scheduler,
    })
    assert.deepEqual(result, E.right({ type: 'Released' }))
    const gets = double
      .calls()
      .slice(start)
      .filter((c) => c.method === 'kv.get')
    assert.deepEqual(
      gets.map((c) => c.answer),
      ['Unreachable', 'ok'],
    )
    assert.equal((gets[1]?.at ?? 0) - (gets[0]?.at ?? 0), 100)
    assert.deepEqual(holders(), [])
  })

  it('answers the outcome of the plan it ran', async () => {
    const me = await holder(double.client)
    const next = await waiter(double.client)
    const hint = await snapshot(double.client)
    const result = await runReleasePlan(
      releaseStart({ prefix, session: me, limit: 2, hint }),
      releaseNext,
      { client: double.client, scheduler },
    )
    assert.deepEqual(result, E.right({ type: 'HandedOff', heir: next }))
  })

  it('gives the single-key lock back with ?release and its value, then destroys the session', async () => {
    const id = await ok(double.client.session.create({ behavior: 'release', lockDelay: 0 }))
    assert.ok(await ok(double.client.kv.put(lockKey, 'node-a', { acquire: id, flags: LOCK_FLAGS })))
    const result = await releaseLeaderKey({
      client: double.client,
      prefix,
      session: id,
      value: 'node-a',
      scheduler,
    })
    assert.deepEqual(result, E.right(undefined))
    const key = double.entries(prefix).find((e) => e.key === lockKey)
    assert.equal(key?.session, undefined, 'unheld')
    assert.equal(utf8(key?.value), 'node-a')
    assert.equal(key?.flags, LOCK_FLAGS)
    assert.deepEqual(sessionIds(), [])
  })
})
