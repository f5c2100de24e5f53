import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { asyncScheduler, distinctUntilChanged, map } from 'rxjs'
import { TestScheduler } from 'rxjs/testing'
import type { ContenderState } from '../src/core/contender/contender-state-model.js'
import { resumeHandOvers, type HandOverLog } from '../src/core/semaphore/hand-overs.js'
import { viewCache } from '../src/core/semaphore/view-cache.js'
import { contending } from './support/port.js'
import { created, seen } from './support/events.js'
import { prefix } from './support/scenario.js'
import { contenderEntry, lockEntry, snapshotOf } from './support/snapshot.js'

const testScheduler = (): TestScheduler =>
  new TestScheduler((actual, expected) => assert.deepStrictEqual(actual, expected))

/** Limit 1: `holder` holds, `waiters` wait behind it in this order. */
const queue = (index: bigint, holder: string, waiters: readonly string[]) =>
  snapshotOf([
    lockEntry(prefix, JSON.stringify({ Limit: 1, Holders: { [holder]: true } }), index),
    contenderEntry(prefix, holder, 1n),
    ...waiters.map((w, i) => contenderEntry(prefix, w, BigInt(10 + i))),
  ])

/** The contender's rank and estimated wait while it waits, each change once. */
const rankAndEstimate = (state: ContenderState): string =>
  state.decision?.type === 'Wait'
    ? `${state.decision.rank} ${state.decision.estimatedWaitMs ?? '-'}`
    : 'not waiting'

describe('a waiter estimates its wait from the hand-overs its process saw', () => {
  it('should estimate rank + 1 hand-over intervals, and follow the queue as it moves', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // An earlier tenure of the process saw hand-overs 100 ms apart; this one took the view up
      // again (the coordinator's `resumeHandOvers`).
      let log: HandOverLog = resumeHandOvers({ intervals: [100], last: 0, holders: ['h1'] })
      const cache = viewCache(undefined, {
        recall: () => log,
        remember: (next) => (log = next),
        now: () => asyncScheduler.now(),
      })
      const events = {
        c: created('me', 10_000, 0),
        s: seen(queue(20n, 'h1', ['a', 'b', 'me'])),
        t: seen(queue(21n, 'a', ['b', 'me'])),
        u: seen(queue(22n, 'b', ['me'])),
      }
      const source = cold('c 49ms s 249ms t 199ms u', events)
      const states = source.pipe(
        contending({ prefix, limit: 1, decide: cache.decide }),
        map(rankAndEstimate),
        distinctUntilChanged(),
      )
      // At 50 ms: two ahead, the earlier tenure's interval of 100 ms. At 300 ms, the first
      // hand-over this tenure saw only starts its first interval; at 500 ms that interval, 200 ms,
      // is timed, and the mean is 150 ms.
      expectObservable(states, '^ 600ms !').toBe('n 49ms a 249ms b 199ms c', {
        n: 'not waiting',
        a: '2 300',
        b: '1 200',
        c: '0 150',
      })
    })
  })
})
