import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { TestScheduler } from 'rxjs/testing'
import { LOCK_FLAGS } from '../src/base/flags.js'
import type { KVEntry } from '../src/base/kv-snapshot.js'
import { taskLockLoss, type TaskLockInput } from '../src/core/task-lock/task-lock-loss.js'

const testScheduler = (): TestScheduler =>
  new TestScheduler((actual, expected) => assert.deepStrictEqual(actual, expected))

const key = 'jobs/task/7'
const entry = (session: string | undefined, modifyIndex: bigint): KVEntry => ({
  key,
  value: null,
  flags: LOCK_FLAGS,
  session,
  lockIndex: 1n,
  createIndex: 1n,
  modifyIndex,
})
const snapshot = (index: bigint, entries: KVEntry[]): TaskLockInput => ({
  type: 'snapshot',
  snapshot: { index, entries },
})

/** The key was acquired by 'me' at index 10. */
const inputs: Record<string, TaskLockInput> = {
  L: { type: 'lease', deadline: 100 },
  M: { type: 'lease', deadline: 200 },
  o: snapshot(5n, []), // older than the acquisition: says nothing
  s: snapshot(10n, [entry('me', 10n)]),
  b: snapshot(12n, [entry('other', 12n)]),
  n: snapshot(12n, [entry(undefined, 12n)]),
  x: snapshot(12n, []),
  d: {
    type: 'disconnected',
    error: { _tag: 'Timeout', message: 't', timeoutMs: 1 },
    attempt: 1,
    retryInMs: 1,
  },
  g: { type: 'session-gone' },
}
const reasons = {
  r: 'removed',
  w: 'watch-failed',
  e: 'lease-expired',
  i: 'session-invalidated',
} as const
const options = { key, session: 'me', acquiredIndex: 10n }

describe('taskLockLoss', () => {
  it('should emit nothing while snapshots show the key held by its session', () => {
    testScheduler().run(({ hot, expectObservable }) => {
      const source = hot('-L-o-s-s--', inputs)
      expectObservable(source.pipe(taskLockLoss(options)), '^ 50ms !').toBe('-', reasons)
    })
  })

  it('should emit removed when the key shows another session, none, or is deleted', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('-L-s-b-', inputs).pipe(taskLockLoss(options))).toBe(
        '-----(r|)',
        reasons,
      )
      expectObservable(cold('-L-s-n-', inputs).pipe(taskLockLoss(options))).toBe(
        '-----(r|)',
        reasons,
      )
      expectObservable(cold('-L-s-x-', inputs).pipe(taskLockLoss(options))).toBe(
        '-----(r|)',
        reasons,
      )
    })
  })

  it('should emit lease-expired at the deadline with no further input', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('L-s-', inputs).pipe(taskLockLoss(options))).toBe('100ms (e|)', reasons)
    })
  })

  it('should move the deadline with each renewal', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('L 49ms M', inputs).pipe(taskLockLoss(options))).toBe(
        '200ms (e|)',
        reasons,
      )
    })
  })

  it('should emit watch-failed on a failure, unless a snapshot follows at once (a replay)', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('-L-s-d-', inputs).pipe(taskLockLoss(options))).toBe(
        '-----(w|)',
        reasons,
      )
      expectObservable(cold('-L-(ds)-', inputs).pipe(taskLockLoss(options)), '^ 50ms !').toBe(
        '-',
        reasons,
      )
    })
  })

  it('should emit session-invalidated when the session is gone', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('-L-s-g-', inputs).pipe(taskLockLoss(options))).toBe(
        '-----(i|)',
        reasons,
      )
    })
  })

  it('should complete without a reason when the inputs complete', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('-s-|', inputs).pipe(taskLockLoss(options))).toBe('---|', reasons)
    })
  })

  it('should pass on an error of the inputs', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      expectObservable(cold('-s-#', inputs).pipe(taskLockLoss(options))).toBe('---#', reasons)
    })
  })
})
