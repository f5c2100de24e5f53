// The port's half of holding back (src/effects/coordinator/held-back.ts): within the machine's
// hold, the snapshots that leave a waiter far back stay out of the machine, the first of them told
// as `held-back`, and the refresh takes the last one.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { TestScheduler } from 'rxjs/testing'
import type { KVSnapshot, WatchEvent } from '../src/base/kv-snapshot.js'
import { decide } from '../src/core/semaphore/decide.js'
import { HeldBack, heldBackBy } from '../src/effects/coordinator/held-back.js'
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
  spec: (helpers: Parameters<Parameters<TestScheduler['run']>[0]>[0], held: HeldBack) => void,
): void {
  const scheduler = new TestScheduler((actual, expected) =>
    assert.deepStrictEqual(actual, expected),
  )
  scheduler.run((helpers) => spec(helpers, new HeldBack(() => scheduler.now())))
}

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

  it('keeps far-back snapshots within the hold, tells the first, and the refresh takes the last', () => {
    marbles(({ cold, expectObservable, flush }, held) => {
      held.hold(100)
      const source = cold('a-b|', { a: seen(far10), b: seen(far12) })
      expectObservable(source.pipe(heldBackBy(held, decideOn))).toBe('h--|', {
        h: { type: 'held-back' },
      })
      flush()
      assert.deepEqual(held.take(), {
        type: 'snapshot',
        snapshot: far12,
        decision: decideOn(far12),
      })
      assert.equal(held.take(), undefined, 'taken once')
    })
  })

  it("passes a snapshot that changes the waiter's place, and forgets the one it kept", () => {
    marbles(({ cold, expectObservable, flush }, held) => {
      held.hold(100)
      const source = cold('a-n|', { a: seen(far10), n: seen(near14) })
      expectObservable(source.pipe(heldBackBy(held, decideOn))).toBe('h-n|', {
        h: { type: 'held-back' },
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
})
