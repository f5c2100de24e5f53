// A leader waiting behind a `consul lock` holder that is evicted, on the Consul double in virtual
// time: the holder's session is destroyed (Consul releases `.lock` and refuses it for the
// session's lock-delay), then `consul lock`, exiting, deletes the free `.lock` at some moment of
// that delay. Whenever the waiter arrived and whenever the key went, it leads once the delay is
// over: each refusal is retried until the key is taken.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { VirtualTimeScheduler } from 'rxjs'
import { LOCK_FLAGS } from '../../src/base/flags.js'
import { leaderElection, type LeaderElectionState } from '../../src/recipes/leader-election.js'
import {
  advanceBy,
  advanceUntil,
  closeInVirtualTime,
  createConsulDouble,
  type ConsulDouble,
} from '../support/consul-double.js'
import { seededRandom } from '../support/seeded-random.js'

const prefix = 'svc/evicted'
const lockKey = `${prefix}/.lock`
const LOCK_DELAY_MS = 15_000

/** Runs a call of the double's client to its answer in virtual time. */
async function answer<T>(scheduler: VirtualTimeScheduler, call: () => Promise<T>): Promise<T> {
  let answered: { readonly value: T } | undefined
  void call().then((value) => (answered = { value }))
  await advanceUntil(scheduler, 'the call answered', () => answered !== undefined)
  assert.ok(answered !== undefined)
  return answered.value
}

/** A `consul lock` holder: its session (Go's default lock-delay) locks `.lock`. */
async function goHolder(scheduler: VirtualTimeScheduler, double: ConsulDouble): Promise<string> {
  const go = double.connect('consul lock')
  const created = await answer(
    scheduler,
    go.session.create({ name: 'Consul API Lock', ttl: '15s', lockDelay: '15s' }),
  )
  assert.ok(created._tag === 'Right', 'the holder has a session')
  const put = await answer(
    scheduler,
    go.kv.put(lockKey, '', { acquire: created.right, flags: LOCK_FLAGS }),
  )
  assert.ok(put._tag === 'Right' && put.right, 'the holder locked .lock')
  return created.right
}

describe('a leader after the eviction of a consul lock holder (virtual time, Consul double)', () => {
  it('leads once the lock-delay is over, whenever it arrived and whenever the key was deleted', async () => {
    for (let seed = 1; seed <= 20; seed += 1) {
      const random = seededRandom(seed)
      const scheduler = new VirtualTimeScheduler()
      const double = createConsulDouble({ scheduler })
      const holder = await goHolder(scheduler, double)
      const seen: string[] = []
      let last: LeaderElectionState | undefined
      const contend = () => {
        const election = leaderElection({
          prefix,
          value: 'next',
          consul: double.connect('next'),
          scheduler,
        })
        const subscription = election.state$.subscribe((s) => {
          last = s
          seen.push(`${scheduler.now()} ms: holding ${s.holding}, led by ${s.leader?.session}`)
        })
        return { election, subscription }
      }
      // Waiting before the eviction, or arriving just after it.
      const waitedBefore = random() < 0.5
      let next = waitedBefore ? contend() : undefined
      await advanceBy(scheduler, Math.floor(random() * 60))
      const evictedAt = scheduler.now()
      assert.ok(double.expireSession(holder))
      next ??= (await advanceBy(scheduler, Math.floor(random() * 30)), contend())
      // `consul lock` deletes the key on its way out, if nobody holds it by then.
      await advanceBy(scheduler, Math.floor(random() * (LOCK_DELAY_MS + 1000)))
      const lock = double.entries(lockKey).find((e) => e.key === lockKey)
      const deleted = lock !== undefined && lock.session === undefined
      if (deleted) double.deleteKey(lockKey)
      const situation = `seed ${seed}: waited before the eviction ${waitedBefore}, key deleted at ${
        deleted ? scheduler.now() - evictedAt : 'never'
      } ms after it`
      await advanceUntil(
        scheduler,
        situation,
        () => last?.holding === true,
        2 * LOCK_DELAY_MS,
      ).catch((error: unknown) => assert.fail(`${String(error)}; its states: ${seen.join('; ')}`))
      assert.ok(scheduler.now() - evictedAt >= LOCK_DELAY_MS, `${situation}: not before the delay`)
      next.subscription.unsubscribe()
      await closeInVirtualTime(scheduler, next.election)
      await double.close()
    }
  })
})
