import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { distinctUntilChanged, map, type OperatorFunction } from 'rxjs'
import { TestScheduler } from 'rxjs/testing'
import { LOCK_FLAGS } from '../src/base/flags.js'
import type { ContenderState } from '../src/core/contender/contender-state-model.js'
import { contending, holds } from './support/port.js'
import { statesAfter } from './support/steps.js'
import { leaderKeyDecider } from '../src/core/leader-key/decide-leader-key.js'
import {
  casOk,
  created,
  disconnected,
  renewed,
  seen,
  seenAfterReset,
  sessionGone,
} from './support/events.js'
import { keyGone, listed, listedLater, prefix, unlisted, waiting } from './support/scenario.js'
import { lockEntry, snapshotOf } from './support/snapshot.js'

const testScheduler = (): TestScheduler =>
  new TestScheduler((actual, expected) => assert.deepStrictEqual(actual, expected))

const riding = { prefix, limit: 1, rideThrough: true }
const flags = { t: true, f: false }

/**
 * C: created with TTL 100 at 0, so the lease deadline is 90; c: TTL 1000 (deadline 900), for the
 * specs that are not about the deadline. s: a snapshot listing us, d: the watch failed.
 */
const events = {
  C: created('me', 100, 0),
  c: created('me', 1000, 0),
  w: seen(waiting),
  l: seen(listed),
  L: seen(listedLater),
  u: seen(unlisted),
  g: seen(keyGone),
  k: casOk(['me'], 21n),
  d: disconnected,
  x: sessionGone,
}

/** Unsubscribes before the 900 ms lease deadline of `c`, which is not what these specs are about. */
const watchFor50ms = '^ 50ms !'

/** One field of the states, each change once. */
const field =
  <T>(pick: (state: ContenderState) => T): OperatorFunction<ContenderState, T> =>
  (s) =>
    s.pipe(map(pick), distinctUntilChanged())

const holdingAndReason = (s: ContenderState): string => `${s.holding} ${s.reason}`

describe('holding with rideThrough', () => {
  it('should keep holding through a watch failure until exactly the lease deadline', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('C-l-d', events)
      const expected = '   f-t 87ms f'
      expectObservable(source.pipe(holds(riding))).toBe(expected, flags)
    })
  })

  it('should say lease-expired when the ride ends at the deadline', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('C-l-d', events)
      const expected = '   0-1 87ms 2'
      expectObservable(source.pipe(contending(riding), field(holdingAndReason))).toBe(expected, {
        0: 'false undefined',
        1: 'true acquired',
        2: 'false lease-expired',
      })
    })
  })

  it('should drop at once on a watch failure without the option, as by default', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('C-l-d', events)
      const expected = '   0-1-2'
      expectObservable(source.pipe(contending({ prefix, limit: 1 }), field(holdingAndReason))).toBe(
        expected,
        { 0: 'false undefined', 1: 'true acquired', 2: 'false watch-failed' },
      )
    })
  })

  it('should drop at once on a watch failure when rideThrough is false', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('C-l-d', events)
      const expected = '   f-t-f'
      expectObservable(source.pipe(holds({ ...riding, rideThrough: false }))).toBe(expected, flags)
    })
  })

  it('should ride on to a later deadline when a renewal succeeds during the outage', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // Renewed at 85 (sent then): the deadline moves from 90 to 85 + 100 - 10 = 175.
      const source = cold('C-l-d 80ms n', { ...events, n: renewed(100, 85) })
      const expected = '   f-t 172ms f'
      expectObservable(source.pipe(holds(riding))).toBe(expected, flags)
    })
  })

  it('should keep holding through repeated failures of the watch', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-l-d-d-d', events)
      const expected = '   f-t'
      expectObservable(source.pipe(holds(riding)), watchFor50ms).toBe(expected, flags)
    })
  })

  it('should go on holding, with no new reason, when the watch answers again listing it', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-l-d-l', events)
      const expected = '   0-1'
      expectObservable(source.pipe(contending(riding), field(holdingAndReason)), watchFor50ms).toBe(
        expected,
        { 0: 'false undefined', 1: 'true acquired' },
      )
    })
  })

  it('should drop at once as removed when the watch answers again without it in .lock', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-l-d-u', events)
      const expected = '   0-1---2'
      expectObservable(source.pipe(contending(riding), field(holdingAndReason)), watchFor50ms).toBe(
        expected,
        { 0: 'false undefined', 1: 'true acquired', 2: 'false removed' },
      )
    })
  })

  it('should drop at once as removed when the watch answers again without its key', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-l-d-g', events)
      const expected = '   0-1---2'
      expectObservable(source.pipe(contending(riding), field(holdingAndReason)), watchFor50ms).toBe(
        expected,
        { 0: 'false undefined', 1: 'true acquired', 2: 'false removed' },
      )
    })
  })

  it('should drop at once when a reset answer (agent restart) no longer has it', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-l-d-R', { ...events, R: seenAfterReset(snapshotOf([], 1n)) })
      const expected = '   0-1---2'
      expectObservable(source.pipe(contending(riding), field(holdingAndReason)), watchFor50ms).toBe(
        expected,
        { 0: 'false undefined', 1: 'true acquired', 2: 'false removed' },
      )
    })
  })

  it('should drop at once when a stale answer shows its key gone while it rides', () => {
    // Its own CAS wrote index 21; an answer from before it (index 11) without its key is still
    // evidence that the key is gone, and neither reconnects nor keeps it.
    testScheduler().run(({ cold, expectObservable }) => {
      const gone = snapshotOf([lockEntry(prefix, '{"Limit":1,"Holders":{"me":true}}', 10n)], 11n)
      const source = cold('c-w-k-L-d-o', { ...events, o: seen(gone) })
      const expected = '   0---1-----2'
      expectObservable(source.pipe(contending(riding), field(holdingAndReason)), watchFor50ms).toBe(
        expected,
        { 0: 'false undefined', 1: 'true acquired', 2: 'false removed' },
      )
    })
  })

  it('should drop at once when a renewal finds the session gone while it rides', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-l-d-x', events)
      const expected = '   0-1---2'
      expectObservable(source.pipe(contending(riding), field(holdingAndReason)), watchFor50ms).toBe(
        expected,
        { 0: 'false undefined', 1: 'true acquired', 2: 'false session-invalidated' },
      )
    })
  })

  // On the interpreter the watch's failure lets the CAS go, so its answer (k) reaches nobody; the
  // step's own rule for a CAS won while the watch is down is shown on contenderStep just below.
  it('should not rise on a CAS answered after the watch failed, only once it answers again', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-w-d-k-L', events)
      const expected = '   f-------t'
      expectObservable(source.pipe(holds(riding)), watchFor50ms).toBe(expected, flags)
    })
  })

  it('should not rise on a won CAS while the watch is down (the step): riding is for a holder', () => {
    const states = statesAfter(riding, [
      [events.c, 0],
      [events.w, 2],
      [events.d, 4],
      [events.k, 6],
      [events.L, 8],
    ])
    // Listed by the CAS at 6, but holding only once the watch answers again at 8.
    assert.deepEqual(
      states.map((s) => `${s.holding}/${s.listed}`),
      ['false/false', 'false/false', 'false/false', 'false/true', 'true/true'],
    )
  })

  it('should not rise on a late renewal after its ride ended, only once the watch answers again', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // Dropped at the deadline (90); a renewal sent at 95 revives the lease to 185, but the
      // watch has vouched for nothing since 4: it rises with the snapshot at 100.
      const source = cold('C-l-d 90ms n 4ms l', { ...events, n: renewed(100, 95) })
      const expected = '   0-1 87ms 2 9ms 3'
      expectObservable(source.pipe(contending(riding), field(holdingAndReason)), '^ 150ms !').toBe(
        expected,
        {
          0: 'false undefined',
          1: 'true acquired',
          2: 'false lease-expired',
          3: 'true restored',
        },
      )
    })
  })

  it('should stay in phase holding while it rides, with the watch failure as its last failure', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // Idle is the first state of its session: nothing is said before it.
      const source = cold('c 9ms l 9ms d 9ms l', events)
      const expected = '   (i0) 6ms 1 9ms 2 9ms 1'
      const summary = (s: ContenderState): string =>
        `${s.phase} ${s.connected} ${s.lastFailure?.during ?? '-'}`
      expectObservable(source.pipe(contending(riding), field(summary)), watchFor50ms).toBe(
        expected,
        {
          i: 'idle false -',
          0: 'joining false -',
          1: 'holding true -',
          2: 'holding false watch',
        },
      )
    })
  })

  it('should be doubtful, not holding, once the ride ended at the deadline', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('C 9ms l 9ms d', events)
      const expected = '   (i0) 6ms 1 9ms 2 69ms 3'
      const summary = (s: ContenderState): string => `${s.phase} ${s.connected}`
      expectObservable(source.pipe(contending(riding), field(summary))).toBe(expected, {
        i: 'idle false',
        0: 'joining false',
        1: 'holding true',
        2: 'holding false',
        3: 'doubtful false',
      })
    })
  })

  it('should write nothing while it rides: the next write waits for the watch', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-l-d-l', events)
      const expected = '   u'
      expectObservable(
        source.pipe(
          contending(riding),
          field((s) => s.write?.type ?? 'none'),
        ),
        watchFor50ms,
      ).toBe(expected, { u: 'none' })
    })
  })
})

describe('holding with rideThrough on the single-key lock', () => {
  const lockPrefix = 'svc/leader'
  const options = {
    prefix: lockPrefix,
    limit: 1,
    fairness: false,
    decide: leaderKeyDecider('node-a'),
    rideThrough: true,
  }
  const lockKey = (session: string | undefined, modifyIndex: bigint) =>
    snapshotOf([lockEntry(lockPrefix, 'v', modifyIndex, { flags: LOCK_FLAGS, session })])
  const lockEvents = {
    C: created('me', 100, 0),
    c: created('me', 1000, 0),
    f: seen(lockKey(undefined, 10n)),
    m: seen(lockKey('me', 21n)),
    o: seen(lockKey('other', 30n)),
    F: seen(lockKey(undefined, 31n)),
    k: casOk(['me'], 21n),
    d: disconnected,
  }

  it('should keep leading through a watch failure until exactly the lease deadline', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('C-f-k-d', lockEvents)
      const expected = '   f---t 85ms f'
      expectObservable(source.pipe(holds(options))).toBe(expected, flags)
    })
  })

  it('should stop leading at once when the watch answers again with the key held by another', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-f-k-d-o', lockEvents)
      const expected = '   0---1---2'
      expectObservable(
        source.pipe(contending(options), field(holdingAndReason)),
        watchFor50ms,
      ).toBe(expected, { 0: 'false undefined', 1: 'true acquired', 2: 'false removed' })
    })
  })

  it('should stop leading at once when the watch answers again with the key free', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-f-k-d-F', lockEvents)
      const expected = '   f---t---f'
      expectObservable(source.pipe(holds(options)), watchFor50ms).toBe(expected, flags)
    })
  })

  it('should stop leading at once on a watch failure without the option', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-f-k-d-m', lockEvents)
      const expected = '   f---t-f-t'
      expectObservable(source.pipe(holds({ ...options, rideThrough: false })), watchFor50ms).toBe(
        expected,
        flags,
      )
    })
  })
})
