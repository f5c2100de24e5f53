// The port's half of holding back (src/effects/coordinator/held-back.ts): within the machine's
// hold, the snapshots that leave a waiter far back stay out of the machine, and the last of them
// reaches it at the end of the hold (`refresh-due`), unless a new hold, a snapshot that passes, or
// the end of the follow dropped it.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { TestScheduler } from 'rxjs/testing'
import type { KVSnapshot, WatchEvent } from '../src/base/kv-snapshot.js'
import { decide } from '../src/core/semaphore/decide.js'
import { HeldBack, heldBackBy, heldBackTo } from '../src/effects/coordinator/held-back.js'
import type { FollowEvent } from '../src/effects/coordinator/contender-port.js'
import { contenderEntry, lockEntry, snapshotOf } from './support/snapshot.js'

const prefix = 'svc/lock'
const lock = lockEntry(prefix, '{"Limit":1,"Holders":{"h":true}}', 4n)
const key = (session: string, index: bigint) => contenderEntry(prefix, session, index)
const queue = [lock, key('h', 1n), key('a', 2n), key('b', 3n), key('me', 4n)]
const seen = (snapshot: KVSnapshot, reset?: true): WatchEvent =>
  reset ? { type: 'snapshot', snapshot, reset } : { type: 'snapshot', snapshot }
/** me at rank 2 (far back), at 10 and at 12 (z joined behind); at rank 1 at 14 (b left). */
const far10 = snapshotOf(queue, 10n)
const far12 = snapshotOf([...queue, key('z', 12n)], 12n)
const near14 = snapshotOf([lock, key('h', 1n), key('a', 2n), key('me', 4n)], 14n)
const decideOn = (snapshot: KVSnapshot) => decide(snapshot, { prefix, session: 'me', limit: 1 })
const decided = (snapshot: KVSnapshot, reset?: true) => ({
  type: 'snapshot' as const,
  snapshot,
  reset,
  decision: decideOn(snapshot),
})

function marbles(
  spec: (
    helpers: Parameters<Parameters<TestScheduler['run']>[0]>[0],
    held: HeldBack,
    scheduler: TestScheduler,
  ) => void,
): void {
  const scheduler = new TestScheduler((actual, expected) =>
    assert.deepStrictEqual(actual, expected),
  )
  scheduler.run((helpers) => spec(helpers, new HeldBack(scheduler), scheduler))
}

const refreshed = (snapshot: KVSnapshot): FollowEvent => ({
  type: 'refresh-due',
  held: { type: 'snapshot', snapshot, decision: decideOn(snapshot) },
})

describe('heldBackBy (the snapshots a port keeps out of a waiter far back)', () => {
  it('passes every snapshot, decided, while there is no hold', () => {
    marbles(({ cold, expectObservable }, held) => {
      const source = cold('a-b|', { a: seen(far10), b: seen(far12) })
      expectObservable(source.pipe(heldBackBy(held, decideOn))).toBe('a-b|', {
        a: decided(far10),
        b: decided(far12),
      })
    })
  })

  it('keeps far-back snapshots within the hold, and hands the last one over at its end', () => {
    marbles(({ cold, expectObservable, flush }, held) => {
      held.hold(100)
      const source = cold('a-b 200ms |', { a: seen(far10), b: seen(far12) })
      expectObservable(source.pipe(heldBackBy(held, decideOn))).toBe('100ms r 102ms |', {
        r: refreshed(far12),
      })
      flush()
      assert.equal(held.take(), undefined, 'handed over once')
    })
  })

  it("passes a snapshot that changes the waiter's place, and drops the one it kept with its refresh", () => {
    marbles(({ cold, expectObservable, flush }, held) => {
      held.hold(100)
      const source = cold('a-n 200ms |', { a: seen(far10), n: seen(near14) })
      expectObservable(source.pipe(heldBackBy(held, decideOn))).toBe('--n 200ms |', {
        n: decided(near14),
      })
      flush()
      assert.equal(held.take(), undefined)
    })
  })

  it('passes a reset, and every snapshot once the hold ended', () => {
    marbles(({ cold, expectObservable }, held) => {
      held.hold(5)
      const source = cold('r 5ms a|', { r: seen(far10, true), a: seen(far12) })
      expectObservable(source.pipe(heldBackBy(held, decideOn))).toBe('r 5ms a|', {
        r: decided(far10, true),
        a: decided(far12),
      })
    })
  })

  it('passes other events and errors as they are', () => {
    marbles(({ cold, expectObservable }, held) => {
      held.hold(100)
      const d: WatchEvent = {
        type: 'disconnected',
        error: { _tag: 'Unreachable', message: 'connection refused' },
        attempt: 1,
        retryInMs: 1000,
      }
      expectObservable(cold('d#', { d }).pipe(heldBackBy(held, decideOn))).toBe('d#', { d })
    })
  })

  it('drops what it kept, and its refresh, once unsubscribed', () => {
    marbles(({ cold, expectObservable, flush }, held) => {
      held.hold(100)
      const source = cold('a-b', { a: seen(far10), b: seen(far12) })
      expectObservable(source.pipe(heldBackBy(held, decideOn)), '^ 50ms !').toBe('')
      flush()
      assert.equal(held.take(), undefined)
    })
  })
})

describe('heldBackTo (the refresh of what a waiter far back kept)', () => {
  const told = (scheduler: TestScheduler) => {
    const events: { at: number; event: FollowEvent }[] = []
    const held = new HeldBack(scheduler)
    const watch = heldBackTo(held, decideOn, (event) => events.push({ at: scheduler.now(), event }))
    return { events, held, watch }
  }

  it('sets one refresh, at the end of the hold, for all the snapshots it keeps meanwhile', () => {
    marbles((_, __, scheduler) => {
      const { events, held, watch } = told(scheduler)
      held.hold(100)
      watch(seen(far10))
      scheduler.schedule(() => watch(seen(far12)), 30)
      scheduler.flush()
      assert.deepStrictEqual(events, [{ at: 100, event: refreshed(far12) }])
    })
  })

  it('drops what it kept, and its refresh, on a new hold or none', () => {
    marbles((_, __, scheduler) => {
      const { events, held, watch } = told(scheduler)
      held.hold(100)
      watch(seen(far10))
      held.hold(200)
      scheduler.flush()
      held.hold(300)
      watch(seen(far12))
      held.hold(undefined)
      scheduler.flush()
      assert.deepStrictEqual(events, [])
    })
  })
})
