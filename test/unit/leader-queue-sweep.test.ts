// The leader lock's queue on the Consul double, in virtual time: a dead waiter's key is removed by
// the waiter behind it, and the coordinator that removed it leaves no timer behind once closed.
import assert from 'node:assert/strict'
import { afterEach, beforeEach, describe, it } from 'node:test'
import { VirtualTimeScheduler, type Subscription } from 'rxjs'
import { leaderElection, type LeaderElectionState } from '../../src/recipes/leader-election.js'
import {
  advanceBy,
  advanceUntil,
  closeInVirtualTime,
  createConsulDouble,
  type ConsulDouble,
} from '../support/consul-double.js'

const prefix = 'svc/swept'

describe('the leader lock’s queue: removing a dead waiter’s key (virtual time, Consul double)', () => {
  let scheduler: VirtualTimeScheduler
  let double: ConsulDouble
  const subscriptions: Subscription[] = []

  beforeEach(() => {
    scheduler = new VirtualTimeScheduler()
    double = createConsulDouble({ scheduler })
  })
  afterEach(async () => {
    for (const s of subscriptions.splice(0)) s.unsubscribe()
    await double.close()
  })

  function contender(name: string) {
    const election = leaderElection({
      prefix,
      value: name,
      consul: double.connect(name),
      scheduler,
    })
    const seen: { last?: LeaderElectionState } = {}
    subscriptions.push(election.state$.subscribe((s) => (seen.last = s)))
    return { election, seen }
  }
  /** Moves virtual time a millisecond at a time until `done()`, at most `limitMs`. */
  const until = (what: string, done: () => boolean, limitMs?: number): Promise<void> =>
    advanceUntil(scheduler, what, done, limitMs)
  const close = (c: { election: { close(): Promise<void> } }): Promise<void> =>
    closeInVirtualTime(scheduler, c.election)
  const waiterKeys = () => double.entries(`${prefix}/.queue/`)

  it('removes the key once, and its coordinator leaves no timer when it stops', async () => {
    const a = contender('a')
    await until('a leads', () => a.seen.last?.holding === true)
    const b = contender('b')
    await until('b in line', () => waiterKeys().length === 1)
    const c = contender('c')
    await until('c in line', () => waiterKeys().length === 2)
    const dead = b.seen.last?.session
    assert.ok(dead !== undefined)
    // b's session ends (Consul expired it): Consul clears it from b's key, which stays. (b itself
    // starts over with a new session, at the back of the line.)
    assert.ok(double.expireSession(dead))
    await until('c removed b’s key', () => !waiterKeys().some((e) => e.key.endsWith(`/${dead}`)))
    assert.ok(
      waiterKeys().every((e) => e.session !== undefined),
      'no key without a session is left',
    )
    assert.equal(waiterKeys()[0]?.session, c.seen.last?.session, 'c is first in line')
    await close(c)
    await close(a)
    await close(b)
    await advanceBy(scheduler, 0)
    assert.deepEqual(
      scheduler.actions.map((action) => action.delay),
      [],
      'no timer left by the closed contenders (the sweep forgets its removals when it stops)',
    )
  })
})
