// The rideThrough option through the whole effects layer (member, coordinator, session lease,
// both protocols), in virtual time on the in-memory Consul double: a holder whose watch and
// renewals fail keeps holding until its lease deadline and not a moment longer, goes on holding
// when the watch answers again listing it, and drops at once when that answer shows its slot gone.
import assert from 'node:assert/strict'
import { afterEach, beforeEach, describe, it } from 'node:test'
import {
  VirtualTimeScheduler,
  filter,
  firstValueFrom,
  type Observable,
  type Subscription,
} from 'rxjs'
import { SEMAPHORE_FLAGS } from '../../src/base/flags.js'
import { leaderElection, type LeaderElectionState } from '../../src/recipes/leader-election.js'
import { semaphore, type Semaphore } from '../../src/recipes/semaphore.js'
import {
  autoAdvance,
  createConsulDouble,
  unreachable,
  type ConsulDouble,
} from '../support/consul-double.js'

const prefix = 'svc/riding'

describe('rideThrough, in virtual time on the Consul double', () => {
  let scheduler: VirtualTimeScheduler
  let double: ConsulDouble
  let stopTime: () => void
  const subscriptions: Subscription[] = []

  beforeEach(() => {
    scheduler = new VirtualTimeScheduler()
    double = createConsulDouble({ scheduler })
    stopTime = autoAdvance(scheduler)
  })
  afterEach(async () => {
    for (const s of subscriptions.splice(0)) s.unsubscribe()
    stopTime()
    await double.close()
  })

  const contender = (rideThrough: boolean): Semaphore =>
    semaphore({ prefix, limit: 1, consul: double.client, scheduler, ttl: '10s', rideThrough })
  const follow = <S>(states: { state$: Observable<S> }): S[] => {
    const seen: S[] = []
    subscriptions.push(states.state$.subscribe((s) => seen.push(s)))
    return seen
  }
  const reach = <S>(states: { state$: Observable<S> }, ok: (s: S) => boolean): Promise<S> =>
    firstValueFrom(states.state$.pipe(filter(ok)))
  /** The watch's next long poll fails, and `times` tries after it: Consul answers no reads. */
  const watchFails = (times: number): void => {
    double.fail('kv.list', unreachable(), { times })
    // Wakes the long poll, which then fails: a key of the prefix that starts with `.lock`, so that
    // a leader's poll of `.lock` alone wakes too.
    double.put(`${prefix}/.lock.unrelated`, 'x')
  }

  it('keeps holding while the watch and the renewals fail, until exactly the lease deadline', async () => {
    const holder = contender(true)
    const seen = follow(holder)
    const held = await reach(holder, (s) => s.holding)
    const deadline = held.leaseDeadline as number
    const gate = double.hold('session.renew') // every renewal from now on hangs
    watchFails(1000)
    await reach(holder, (s) => !s.connected)
    const dropped = await reach(holder, (s) => !s.holding)
    assert.equal(dropped.reason, 'lease-expired')
    assert.equal(scheduler.now(), deadline, 'at exactly the deadline (TTL − 10 % margin)')
    const from = seen.findIndex((s) => s.holding)
    const until = seen.indexOf(dropped)
    const riding = seen.slice(from, until)
    assert.ok(
      riding.every((s) => s.holding),
      'no false before the deadline',
    )
    assert.ok(
      riding.some((s) => !s.connected && s.lastError?.during === 'watch'),
      'it held while the watch was down, and said so',
    )
    gate.release()
    await holder.close().catch(() => undefined)
  })

  it('drops the moment the watch fails without the option, as by default', async () => {
    const holder = contender(false)
    follow(holder)
    await reach(holder, (s) => s.holding)
    watchFails(3)
    const dropped = await reach(holder, (s) => !s.holding)
    assert.equal(dropped.reason, 'watch-failed')
    assert.equal(dropped.connected, false)
    await holder.close()
  })

  it('rides on past the first deadline when a renewal gets through during the outage', async () => {
    const holder = contender(true)
    const seen = follow(holder)
    const held = await reach(holder, (s) => s.holding)
    const first = held.leaseDeadline as number
    watchFails(1000)
    const renewed = await reach(holder, (s) => (s.leaseDeadline as number) > first)
    assert.equal(renewed.holding, true)
    assert.equal(renewed.connected, false)
    const gate = double.hold('session.renew') // from now on renewals hang
    const dropped = await reach(holder, (s) => !s.holding)
    assert.equal(dropped.reason, 'lease-expired')
    assert.ok(scheduler.now() > first, 'past the deadline the renewal moved')
    assert.equal(scheduler.now(), dropped.leaseDeadline)
    assert.ok(seen.slice(seen.indexOf(held), seen.indexOf(dropped)).every((s) => s.holding))
    gate.release()
    await holder.close().catch(() => undefined)
  })

  it('goes on holding, with no new session or reason, when the watch answers again', async () => {
    const holder = contender(true)
    const seen = follow(holder)
    const held = await reach(holder, (s) => s.holding)
    watchFails(3)
    await reach(holder, (s) => !s.connected)
    const back = await reach(holder, (s) => s.connected)
    const after = seen.slice(seen.indexOf(held))
    assert.ok(
      after.every((s) => s.holding),
      'never false',
    )
    assert.equal(back.reason, 'acquired')
    assert.equal(back.session, held.session)
    assert.equal(back.fencingToken, held.fencingToken)
    await holder.close()
    assert.equal(double.sessions().length, 0)
  })

  it('drops at once, as removed, when the watch answers again and an operator took it out of .lock', async () => {
    const holder = contender(true)
    follow(holder)
    const held = await reach(holder, (s) => s.holding)
    watchFails(3)
    await reach(holder, (s) => !s.connected)
    // Made while the holder could not hear Consul: it learns of it with the next answer.
    double.put(`${prefix}/.lock`, '{"Limit":1,"Holders":[]}', { flags: SEMAPHORE_FLAGS })
    const dropped = await reach(holder, (s) => !s.holding)
    assert.equal(dropped.reason, 'removed')
    assert.equal(dropped.connected, true)
    assert.ok(scheduler.now() < (held.leaseDeadline as number), 'before its deadline')
    await holder.close()
  })

  it('lets no waiter take a slot while the watch is down: it holds once the watch answers', async () => {
    const holder = contender(true)
    follow(holder)
    await reach(holder, (s) => s.holding)
    const waiter = contender(true)
    const waiterSeen = follow(waiter)
    await reach(waiter, (s) => s.rank !== undefined)
    watchFails(4)
    await reach(waiter, (s) => !s.connected)
    await holder.close() // the slot is free in Consul; the waiter cannot see it yet
    const got = await reach(waiter, (s) => s.holding)
    assert.equal(got.connected, true, 'it rose only with an answer of the watch')
    assert.ok(waiterSeen.every((s) => !s.holding || s.connected))
    await waiter.close()
  })

  it('keeps a leader election leading through a failing watch until its deadline', async () => {
    const election = leaderElection({
      prefix,
      value: 'node-a',
      consul: double.client,
      scheduler,
      ttl: '10s',
      rideThrough: true,
    })
    const seen: LeaderElectionState[] = follow(election)
    const led = await reach(election, (s) => s.holding)
    const gate = double.hold('session.renew')
    watchFails(1000)
    await reach(election, (s) => !s.connected)
    const dropped = await reach(election, (s) => !s.holding)
    assert.equal(dropped.reason, 'lease-expired')
    assert.equal(scheduler.now(), led.leaseDeadline)
    assert.ok(seen.slice(seen.indexOf(led), seen.indexOf(dropped)).every((s) => s.holding))
    gate.release()
    await election.close().catch(() => undefined)
  })
})
