// A waiter's estimated wait: the hand-overs a process logs from the views of a prefix, the mean
// interval between them, and the waiter's decision that carries the estimate (viewCache).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { KVEntry } from '../../src/base/kv-snapshot.js'
import {
  HAND_OVER_SAMPLES,
  NO_HAND_OVERS,
  estimatedWaitMs,
  handOverIntervalMs,
  noteHandOvers,
  resumeHandOvers,
  type HandOverLog,
} from '../../src/core/semaphore/hand-overs.js'
import { viewCache, type SharedHandOvers } from '../../src/core/semaphore/view-cache.js'
import { bytes, contenderEntry, lockEntry, snapshotOf } from '../../marbles/support/snapshot.js'

const prefix = 'svc/estimate'

/** Notes each [holders, at] in turn, from an empty log. */
const logOf = (views: readonly (readonly [readonly string[], number])[]): HandOverLog =>
  views.reduce((log, [holders, at]) => noteHandOvers(log, holders, at), NO_HAND_OVERS)

describe('noteHandOvers', () => {
  it('counts nothing on the first view: its holders were there before the process looked', () => {
    assert.deepEqual(logOf([[['a', 'b'], 0]]), {
      intervals: [],
      last: undefined,
      holders: ['a', 'b'],
    })
  })

  it('times the interval from the hand-over before, and 0 for each more seen at once', () => {
    const log = logOf([
      [['a', 'b'], 0],
      [['b', 'c'], 100],
      [['d', 'e'], 250],
    ])
    assert.deepEqual([log.intervals, log.last], [[150, 0], 250])
  })

  it('logs nothing when holders only leave', () => {
    const log = logOf([
      [['a', 'b'], 0],
      [['b', 'c'], 100],
      [['c'], 200],
    ])
    assert.deepEqual([log.intervals, log.last], [[], 100])
  })

  it('keeps the latest HAND_OVER_SAMPLES intervals only', () => {
    const views = Array.from({ length: 40 }, (_, i) => [[`s${i}`], i * i] as const)
    const log = logOf(views)
    assert.equal(log.intervals.length, HAND_OVER_SAMPLES)
    assert.equal(log.intervals.at(-1), 39 * 39 - 38 * 38)
  })

  it('times nothing across a time it did not look (resumeHandOvers)', () => {
    const before = logOf([
      [['a'], 0],
      [['b'], 100],
      [['c'], 200],
    ])
    const after = [
      [['x'], 60_000],
      [['y'], 60_100],
    ] as const
    const log = after.reduce(
      (l, [holders, at]) => noteHandOvers(l, holders, at),
      resumeHandOvers(before),
    )
    assert.deepEqual(log.intervals, [100])
    const next = noteHandOvers(log, ['z'], 60_250)
    assert.deepEqual(next.intervals, [100, 150])
  })
})

describe('handOverIntervalMs', () => {
  it('is undefined before one interval was timed', () => {
    assert.equal(handOverIntervalMs(NO_HAND_OVERS, 0), undefined)
    assert.equal(handOverIntervalMs({ intervals: [0], last: 5, holders: [] }, 5), undefined)
  })

  it('is the mean interval between the logged hand-overs', () => {
    assert.equal(handOverIntervalMs({ intervals: [100, 0, 200], last: 300, holders: [] }, 310), 100)
  })

  it('is the time since the last one when the queue stopped moving for longer', () => {
    assert.equal(handOverIntervalMs({ intervals: [100, 100], last: 200, holders: [] }, 650), 450)
  })
})

describe('estimatedWaitMs', () => {
  it('is rank + 1 intervals', () => {
    assert.equal(estimatedWaitMs(0, 120), 120)
    assert.equal(estimatedWaitMs(3, 120.4), 482)
  })
})

describe("viewCache's decisions with a hand-over log", () => {
  /** A prefix of limit 1 whose holder is holders[0], with waiters w0..w2 behind it. */
  const snapshotAt = (index: bigint, holder: string, waiters: readonly string[]) => {
    const entries: KVEntry[] = [
      lockEntry(prefix, JSON.stringify({ Limit: 1, Holders: { [holder]: true } }), index),
      contenderEntry(prefix, holder, 1n, { value: bytes(`host:${holder}`) }),
      ...waiters.map((w, i) =>
        contenderEntry(prefix, w, BigInt(10 + i), { value: bytes(`host:${w}`) }),
      ),
    ]
    return snapshotOf(entries, index)
  }
  const shared = (): SharedHandOvers & { at: number } => {
    let log = NO_HAND_OVERS
    return {
      at: 0,
      recall: () => log,
      remember: (next) => (log = next),
      now() {
        return this.at
      },
    }
  }

  it('gives a waiter no estimate before two hand-overs, then rank + 1 intervals', () => {
    const clock = shared()
    const cache = viewCache(undefined, clock)
    const decideW2 = (s: ReturnType<typeof snapshotAt>) =>
      cache.decide(s, { prefix, session: 'w2', limit: 1 })
    const first = decideW2(snapshotAt(100n, 'h0', ['w0', 'w1', 'w2']))
    assert.equal(first.type === 'Wait' ? first.estimatedWaitMs : 'not waiting', undefined)
    clock.at = 200
    const second = decideW2(snapshotAt(101n, 'w0', ['w1', 'w2']))
    assert.equal(second.type === 'Wait' ? second.estimatedWaitMs : 'not waiting', undefined)
    clock.at = 400
    const third = decideW2(snapshotAt(102n, 'w1', ['w2']))
    // Hand-overs at 200 and 400: 200 ms apart; w2 is next (rank 0).
    assert.deepEqual(
      third.type === 'Wait' ? [third.rank, third.estimatedWaitMs] : third.type,
      [0, 200],
    )
  })

  it('gives no estimate without a log, as decide does', () => {
    const cache = viewCache()
    const decision = cache.decide(snapshotAt(100n, 'h0', ['w0']), {
      prefix,
      session: 'w0',
      limit: 1,
    })
    assert.ok(decision.type === 'Wait' && !('estimatedWaitMs' in decision))
  })
})
