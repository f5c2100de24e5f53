import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { asyncScheduler, distinctUntilChanged, map, type OperatorFunction } from 'rxjs'
import { TestScheduler } from 'rxjs/testing'
import { LOCK_FLAGS } from '../src/base/flags.js'
import type { ContenderState } from '../src/core/contender/contender-state-model.js'
import { contending, type Released } from './support/port.js'
import { tryOnceRefused } from '../src/core/contender/try-once-refused.js'
import type { ContenderEvent } from '../src/core/events.js'
import { leaderKeyDecider } from '../src/core/leader-key/decide-leader-key.js'
import { casFailed, casOk, created, seen, sessionGone } from './support/events.js'
import { contenderEntry, lockEntry, snapshotOf } from './support/snapshot.js'

const testScheduler = (): TestScheduler =>
  new TestScheduler((actual, expected) => assert.deepStrictEqual(actual, expected))

/** Unsubscribes well before the 900 ms lease deadline of `c`. */
const watchFor400ms = '^ 400ms !'
const verdicts = { f: false, t: true }

/** Whether a try-once contender gives up, each change once. */
const refused: OperatorFunction<ContenderState, boolean> = (s) =>
  s.pipe(map(tryOnceRefused), distinctUntilChanged())

describe('tryOnceRefused on the semaphore', () => {
  const prefix = 'svc/lock'
  // A try-once contender runs with fairness off.
  const options = { prefix, limit: 1, fairness: false }
  const me = contenderEntry(prefix, 'me', 5n)
  const a = contenderEntry(prefix, 'a', 3n)
  const events = {
    c: created('me', 1000, 0),
    k: seen(snapshotOf([me])),
    h: seen(snapshotOf([a, me, lockEntry(prefix, '{"Limit":1,"Holders":{"a":true}}', 6n)])),
    w: seen(snapshotOf([a, me])),
    F: casFailed,
    K: casOk(['me'], 7n),
    x: sessionGone,
  }

  it('should give up when the first decision finds every slot held', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-h', events)
      const expected = '   f-t'
      expectObservable(source.pipe(contending(options), refused), watchFor400ms).toBe(
        expected,
        verdicts,
      )
    })
  })

  it('should not give up while its CAS for a free slot is on the way, and hold', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-k-K', events)
      const expected = '   f----'
      expectObservable(source.pipe(contending(options), refused), watchFor400ms).toBe(
        expected,
        verdicts,
      )
    })
  })

  it('should take a free slot behind a waiter that arrived first', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // `a` waits ahead of `me` (an older key, no .lock yet): unranked, `me` tries anyway.
      const source = cold('c-w', events)
      const expected = '   f--'
      expectObservable(source.pipe(contending(options), refused), watchFor400ms).toBe(
        expected,
        verdicts,
      )
    })
  })

  it('should wait for the snapshot after a lost CAS, which shows the winner', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-k-F-h', events)
      const expected = '   f-----t'
      expectObservable(source.pipe(contending(options), refused), watchFor400ms).toBe(
        expected,
        verdicts,
      )
    })
  })

  it('should leave the answer to the run when the session is gone', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-h-x', events)
      const expected = '   f-t-f'
      expectObservable(source.pipe(contending(options), refused), watchFor400ms).toBe(
        expected,
        verdicts,
      )
    })
  })

  describe('a try-once contender on the production interpreter', () => {
    const tryOnce = { ...options, tryOnce: true }
    const holdingFlag = (s: ContenderState): boolean => s.holding

    it('should release and complete at its first refusal', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const released: Released[] = []
        const source = cold('c-h', events)
        const expected = '   f-(t|)'
        expectObservable(source.pipe(contending({ ...tryOnce, released }), refused)).toBe(
          expected,
          verdicts,
        )
        // It releases its slot at once (its contender key goes with its session).
        asyncScheduler.schedule(
          () =>
            assert.deepEqual(
              released.map((r) => [r.session, r.at]),
              [['me', 2]],
            ),
          3,
        )
      })
    })

    it('should complete when its session is lost before it held: no new session is asked for', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const source = cold('c-k-x', events)
        const expected = '   f---|'
        expectObservable(
          source.pipe(contending(tryOnce), map(holdingFlag), distinctUntilChanged()),
        ).toBe(expected, verdicts)
      })
    })

    it('should behave as any contender once it held: a lost session is retried, not the end', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const source = cold('c-k-K-x', events)
        const expected = '   f---t-f'
        expectObservable(
          source.pipe(contending(tryOnce), map(holdingFlag), distinctUntilChanged()),
          watchFor400ms,
        ).toBe(expected, verdicts)
      })
    })
  })
})

describe('tryOnceRefused on the single-key lock', () => {
  const prefix = 'svc/leader'
  const options = { prefix, limit: 1, fairness: false, decide: leaderKeyDecider('node-a') }
  const lockKey = (session: string | undefined, modifyIndex: bigint) =>
    snapshotOf([lockEntry(prefix, 'v', modifyIndex, { flags: LOCK_FLAGS, session })])
  const retry: ContenderEvent = { type: 'retry', inMs: 250 }
  const events = {
    c: created('me', 1000, 0),
    f: seen(lockKey(undefined, 10n)),
    o: seen(lockKey('other', 11n)),
    k: casOk(['me'], 21n),
    R: retry,
  }

  it('should give up when another session holds the key', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-o', events)
      const expected = '   f-t'
      expectObservable(source.pipe(contending(options), refused), watchFor400ms).toBe(
        expected,
        verdicts,
      )
    })
  })

  it('should give up when Consul refuses the free key for a lock-delay', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // A contender that went on would ask again 250 ms later; a try-once one has its answer.
      const source = cold('c-f-R', events)
      const expected = '   f---t 249ms f'
      expectObservable(source.pipe(contending(options), refused), watchFor400ms).toBe(
        expected,
        verdicts,
      )
    })
  })

  it('should not give up on a free key, and hold once the acquisition answers', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-f-k', events)
      const expected = '   f----'
      expectObservable(source.pipe(contending(options), refused), watchFor400ms).toBe(
        expected,
        verdicts,
      )
    })
  })
})
