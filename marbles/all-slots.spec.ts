// An all-or-nothing contender's decisions over time, as each of its two prefixes changes: it
// writes only once both show it first in line with a free slot, never takes one while the other is
// full, and holds only while both list it (decideAll on the latest snapshot of each).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { combineLatest, distinctUntilChanged, map } from 'rxjs'
import { TestScheduler } from 'rxjs/testing'
import { ALL_SLOTS_FLAGS } from '../src/base/flags.js'
import { decideAll } from '../src/core/semaphore/decide-all.js'
import { contenderEntry, lockEntry, snapshotOf } from './support/snapshot.js'

const testScheduler = (): TestScheduler =>
  new TestScheduler((actual, expected) => assert.deepStrictEqual(actual, expected))

const targets = [
  { prefix: 'svc/a', limit: 1 },
  { prefix: 'svc/b', limit: 1 },
]

/** Prefix `prefix` (limit 1): `.lock` listing `holder`, the other holder's key, and ours. */
const prefix = (name: string, index: bigint, holder?: string) =>
  snapshotOf([
    lockEntry(name, JSON.stringify({ Limit: 1, Holders: holder ? { [holder]: true } : {} }), index),
    ...(holder !== undefined && holder !== 'me' ? [contenderEntry(name, holder, 2n)] : []),
    contenderEntry(name, 'me', 5n, { flags: ALL_SLOTS_FLAGS }),
  ])

describe('a contender for a slot of every one of two semaphores', () => {
  it('should wait while either is full, and try only once both are free', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const a$ = cold('f-------', { f: prefix('svc/a', 10n) })
      const b$ = cold('x--f----', { x: prefix('svc/b', 10n, 'other'), f: prefix('svc/b', 11n) })
      const decisions = combineLatest([a$, b$]).pipe(
        map((snapshots) => decideAll(snapshots, targets, 'me').type),
        distinctUntilChanged(),
      )
      // a is free from the start, b only at 3: no write before.
      expectObservable(decisions).toBe('w--t----', { w: 'Wait', t: 'TryAcquire' })
    })
  })

  it('should hold from its grant on, decide nothing on a listing older than the grant, and hold none once one .lock drops it', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // Granted at 12: a's listing of it comes first, b's at 2; an operator's edit of b at 4.
      const a$ = cold('m-------', { m: prefix('svc/a', 12n, 'me') })
      const b$ = cold('f-m-o---', {
        f: prefix('svc/b', 11n),
        m: prefix('svc/b', 12n, 'me'),
        o: prefix('svc/b', 13n, 'other'),
      })
      const decisions = combineLatest([a$, b$]).pipe(
        map((snapshots) => decideAll(snapshots, targets, 'me', 12n).type),
        distinctUntilChanged(),
      )
      expectObservable(decisions).toBe('u-h-p---', { u: 'Unconfirmed', h: 'Held', p: 'Partial' })
    })
  })
})
