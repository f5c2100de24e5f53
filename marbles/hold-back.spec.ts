import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { defer, filter, type MonoTypeOperatorFunction, type SchedulerLike } from 'rxjs'
import { TestScheduler } from 'rxjs/testing'
import type { WatchEvent } from '../src/base/kv-snapshot.js'
import { decide } from '../src/core/semaphore/decide.js'
import { holdBackUntil, holdsBack } from '../src/core/semaphore/hold-back.js'
import { contenderEntry, lockEntry, snapshotOf } from './support/snapshot.js'

const prefix = 'svc/lock'
const testScheduler = (): TestScheduler => {
  const scheduler = new TestScheduler((actual, expected) =>
    assert.deepStrictEqual(actual, expected),
  )
  testNow = scheduler
  return scheduler
}

const lockedBy = (index: bigint, ...holders: string[]) =>
  lockEntry(
    prefix,
    JSON.stringify({ Limit: 1, Holders: Object.fromEntries(holders.map((h) => [h, true])) }),
    index,
  )
const key = (session: string, createIndex: bigint) => contenderEntry(prefix, session, createIndex)
const seen = (...entries: Parameters<typeof snapshotOf>[0]): WatchEvent => ({
  type: 'snapshot',
  snapshot: snapshotOf(entries),
})

/** Watch events of a prefix with limit 1, held by h, seen by the contender `me`. */
const events: Record<string, WatchEvent> = {
  // me at rank 2 (a, b ahead): far back.
  a: seen(lockedBy(20n, 'h'), key('h', 5n), key('a', 10n), key('b', 11n), key('me', 12n)),
  // Someone joined behind me: still rank 2, a new snapshot.
  b: seen(
    lockedBy(20n, 'h'),
    key('h', 5n),
    key('a', 10n),
    key('b', 11n),
    key('me', 12n),
    key('z', 30n),
  ),
  // h released: a free slot, but a is first; me still rank 2.
  c: seen(lockedBy(31n), key('a', 10n), key('b', 11n), key('me', 12n), key('z', 30n)),
  // a took the slot: me at rank 1, into the front places.
  f: seen(lockedBy(32n, 'a'), key('a', 10n), key('b', 11n), key('me', 12n), key('z', 30n)),
  // b took it next: me at rank 0 with no free slot.
  g: seen(lockedBy(33n, 'b'), key('b', 11n), key('me', 12n), key('z', 30n)),
  // me holds.
  h: seen(lockedBy(34n, 'me'), key('me', 12n), key('z', 30n)),
  // my key is gone (session invalidated): NotContending.
  n: seen(lockedBy(20n, 'h'), key('h', 5n), key('a', 10n), key('b', 11n)),
  // .lock belongs to another tool: a prefix problem.
  p: seen(
    lockEntry(prefix, '{}', 40n, { flags: 1n }),
    key('a', 10n),
    key('b', 11n),
    key('me', 12n),
  ),
  d: {
    type: 'disconnected',
    error: { _tag: 'Unreachable', message: 'connection refused' },
    attempt: 1,
    retryInMs: 1000,
  },
}

const options = (refreshMs = 1000) => ({
  prefix,
  session: 'me',
  limit: 1,
  decide,
  refreshMs,
  fairness: true,
})

/**
 * The snapshots one contender steps on, as its machine and its port apply the rule: its decision
 * on every snapshot, computed once; held back while `holdsBack` says so, under the hold that
 * `holdBackUntil` set on the last one stepped on; a `disconnected` ends the hold.
 */
function waiterSnapshots(
  o: ReturnType<typeof options>,
  scheduler?: SchedulerLike,
): MonoTypeOperatorFunction<WatchEvent> {
  return (events) =>
    defer(() => {
      let until: number | undefined
      return events.pipe(
        filter((event) => {
          if (event.type !== 'snapshot') {
            until = undefined
            return true
          }
          const decision = o.decide(event.snapshot, o)
          const now = (scheduler ?? testNow).now()
          if (holdsBack(until, decision, now)) return false
          until = holdBackUntil(decision, now, o.refreshMs)
          return true
        }),
      )
    })
}
/** Inside `TestScheduler.run`, Date-free virtual time comes from the test scheduler itself. */
let testNow: SchedulerLike

describe('holdsBack and holdBackUntil (marbles of the snapshots a waiter steps on)', () => {
  it('should pass the first snapshot, then hold back those that leave a waiter far back', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('a-b-c--b-|', events)
      expectObservable(source.pipe(waiterSnapshots(options()))).toBe('a--------|', events)
    })
  })

  it('should pass one snapshot that leaves a waiter far back once refreshMs has passed', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('a 499ms b 499ms c 99ms b 899ms c', events)
      const expected = '   a 999ms c 999ms c'
      expectObservable(source.pipe(waiterSnapshots(options()))).toBe(expected, events)
    })
  })

  it('should pass at once the snapshot that brings the waiter into the first two places, and every one after', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('a-b-f-g-h-h-|', events)
      expectObservable(source.pipe(waiterSnapshots(options()))).toBe('a---f-g-h-h-|', events)
    })
  })

  it('should pass at once a snapshot without the contender key, and a prefix problem', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('a-b-n-a-b-p-|', events)
      expectObservable(source.pipe(waiterSnapshots(options()))).toBe('a---n-a---p-|', events)
    })
  })

  it('should pass every disconnect and the first snapshot after it', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('a-b-d-b-c-|', events)
      expectObservable(source.pipe(waiterSnapshots(options()))).toBe('a---d-b---|', events)
    })
  })

  it('should pass every snapshot when fairness is off and a slot is free (every waiter tries)', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('a-c-c-|', events)
      const unfair = { ...options(), fairness: false }
      expectObservable(source.pipe(waiterSnapshots(unfair))).toBe('a-c-c-|', events)
    })
  })

  it('should pass an error on, and complete with its source', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('a-b-#', events).pipe(waiterSnapshots(options()))).toBe('a---#', events)
      expectObservable(cold('|', events).pipe(waiterSnapshots(options()))).toBe('|')
      expectObservable(cold('-', events).pipe(waiterSnapshots(options()))).toBe('-')
    })
  })

  it('should start afresh for each subscriber', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const filtered = cold('a-b-|', events).pipe(waiterSnapshots(options()))
      expectObservable(filtered).toBe('a---|', events)
      expectObservable(filtered, '--^ 10ms !').toBe('--a---|', events)
    })
  })

  it('should stop calling decide once unsubscribed', () => {
    testScheduler().run(({ cold, expectObservable, flush }) => {
      let calls = 0
      const counting = {
        ...options(),
        decide: (...args: Parameters<typeof decide>) => (calls++, decide(...args)),
      }
      expectObservable(cold('a-b-c-b-c-|', events).pipe(waiterSnapshots(counting)), '^--!').toBe(
        'a---',
        events,
      )
      flush()
      assert.equal(calls, 2)
    })
  })
})
