// The read-write lock's decisions, on the production interpreter: a reader that arrived after a
// writer waits behind it while slots it could use stay free (and past the fairness grace), the
// writer takes every slot at once when they are all free, and the reader goes once the writer has
// let go. A holder between two jobs keeps no slot for its process while a writer is first in line.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { distinctUntilChanged, map } from 'rxjs'
import { TestScheduler } from 'rxjs/testing'
import { COMPANION_FLAGS, HOLDER_FLAGS, waitingFlags } from '../src/base/flags.js'
import type { KVEntry } from '../src/base/kv-snapshot.js'
import { contending, stepsOf } from './support/port.js'
import { casOk, created, seen } from './support/events.js'
import { poolWorker, prefix } from './support/scenario.js'
import { bytes, contenderEntry, lockEntry, snapshotOf } from './support/snapshot.js'

const testScheduler = (): TestScheduler =>
  new TestScheduler((actual, expected) => assert.deepStrictEqual(actual, expected))

/** A read-write lock of 3 readers: `.lock` listing `holders`, and the contender keys `keys`. */
const prefixWith = (index: bigint, holders: readonly string[], keys: readonly KVEntry[]) =>
  snapshotOf([
    lockEntry(
      prefix,
      JSON.stringify({ Limit: 3, Holders: Object.fromEntries(holders.map((h) => [h, true])) }),
      index,
    ),
    ...keys,
  ])

const reader = (session: string, createIndex: bigint, process: string): KVEntry =>
  contenderEntry(prefix, session, createIndex, { value: bytes(process) })

/**
 * The writer `w` waiting, its three permits stated in its key's flags, from process `readers-a`,
 * which holds a reader's slot too: by turns across processes alone, a reader of a process that
 * holds nothing would go before it.
 */
const writerWaiting = contenderEntry(prefix, 'w', 5n, {
  value: bytes('readers-a'),
  flags: waitingFlags(3),
})

describe('a reader behind a waiting writer', () => {
  it('should wait while two slots are free and the grace runs out, and go once the writer has let go', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const r1 = reader('r1', 2n, 'readers-a')
      const me = reader('me', 6n, 'readers-b')
      const events = {
        c: created('me', 60_000, 0),
        // r1 reads; the writer waits first in line for all three slots; this reader behind it.
        q: seen(prefixWith(10n, ['r1'], [r1, writerWaiting, me])),
        // r1 is done: every slot is free, and the writer's turn.
        f: seen(prefixWith(11n, [], [writerWaiting, me])),
        // The writer holds all three (its companions w2, w3 beside it).
        h: seen(
          prefixWith(
            12n,
            ['w', 'w2', 'w3'],
            [
              contenderEntry(prefix, 'w', 5n, { flags: HOLDER_FLAGS }),
              contenderEntry(prefix, 'w2', 5n, { flags: COMPANION_FLAGS }),
              contenderEntry(prefix, 'w3', 5n, { flags: COMPANION_FLAGS }),
              me,
            ],
          ),
        ),
        // The writer let go: this reader is first in line with three free slots.
        g: seen(prefixWith(13n, [], [me])),
        k: casOk(['me'], 14n),
      }
      const states = cold('c q 10s f h g k', events).pipe(
        stepsOf({ prefix, limit: 3, fairnessGraceMs: 2000 }),
      )
      // Waits from its first snapshot, past the 2 s grace and through the writer's tenure; tries at g.
      expectObservable(states, '^ 20s !').toBe('x W 10002ms T H', {
        x: 'x',
        W: 'W',
        T: 'T',
        H: 'H',
      })
    })
  })

  it('should see a holder give its slot on at a job’s end within the quantum while the writer is first, and keep it without the writer', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const options = poolWorker(3, 60_000)
      const me = contenderEntry(prefix, 'me', 2n, { flags: HOLDER_FLAGS, value: bytes('pool') })
      const writeOf = (keys: readonly KVEntry[]) =>
        cold('c s r', {
          c: created('me', 60_000, 0),
          s: seen(prefixWith(10n, ['me'], keys)),
          // A job of its process ended well within the quantum, and another is queued.
          r: { type: 'refence' } as const,
        }).pipe(
          contending(options),
          map((state) => state.write?.type ?? '-'),
          distinctUntilChanged(),
        )
      expectObservable(writeOf([me, writerWaiting]), '^ 100ms !').toBe('n 1ms R', {
        n: '-',
        R: 'Rotate',
      })
      expectObservable(writeOf([me, reader('r2', 6n, 'other')]), '^ 100ms !').toBe('n 1ms K', {
        n: '-',
        K: 'Refence',
      })
    })
  })
})
