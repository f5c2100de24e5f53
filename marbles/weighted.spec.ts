// A contender of several permits on the production interpreter: it waits while fewer slots are
// free than it asks for, writes once as many are, holds only while `.lock` lists every one of its
// sessions, and drops the moment one of them is taken out.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { TestScheduler } from 'rxjs/testing'
import { COMPANION_FLAGS, HOLDER_FLAGS, waitingFlags } from '../src/base/flags.js'
import { stepsOf } from './support/port.js'
import { casOk, created, seen } from './support/events.js'
import { prefix } from './support/scenario.js'
import { contenderEntry, lockEntry, snapshotOf } from './support/snapshot.js'

const testScheduler = (): TestScheduler =>
  new TestScheduler((actual, expected) => assert.deepStrictEqual(actual, expected))

/** Limit 3: `.lock` listing `holders`; the other holders' keys, and ours (`me`, with `me2`). */
const prefixWith = (index: bigint, holders: readonly string[], holding: boolean) =>
  snapshotOf([
    lockEntry(
      prefix,
      JSON.stringify({ Limit: 3, Holders: Object.fromEntries(holders.map((h) => [h, true])) }),
      index,
    ),
    ...holders.filter((h) => !h.startsWith('me')).map((h) => contenderEntry(prefix, h, 2n)),
    contenderEntry(prefix, 'me', 5n, { flags: holding ? HOLDER_FLAGS : waitingFlags(2) }),
    ...(holding ? [contenderEntry(prefix, 'me2', 5n, { flags: COMPANION_FLAGS })] : []),
  ])

describe('a contender of two permits', () => {
  it('should wait with one slot free, write with two, hold while both are listed, and drop when one is taken out', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const events = {
        c: created('me', 60_000, 0),
        // x holds two of three: one free, two asked.
        a: seen(prefixWith(10n, ['x', 'y'], false)),
        // y gone: two free.
        b: seen(prefixWith(11n, ['x'], false)),
        k: casOk(['x', 'me', 'me2'], 12n),
        h: seen(prefixWith(12n, ['x', 'me', 'me2'], true)),
        // An operator takes me2 out of .lock: one of its two permits is gone, so both are.
        o: seen(prefixWith(13n, ['x', 'me'], true)),
      }
      const states = cold('c a b k h o', events).pipe(
        stepsOf({ prefix, limit: 3, companionsOf: () => ['me2'] }),
      )
      expectObservable(states, '^ 100ms !').toBe('x W T H 1ms W', {
        x: 'x',
        W: 'W',
        T: 'T',
        H: 'H',
      })
    })
  })
})
