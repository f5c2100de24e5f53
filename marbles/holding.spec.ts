import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { TestScheduler } from 'rxjs/testing'
import { asyncScheduler, catchError, distinctUntilChanged, map, of } from 'rxjs'
import type { SemaphoreError } from '../src/base/semaphore-error.js'
import { holds, interpreted, session } from './support/port.js'
import { statesAfter } from './support/steps.js'
import {
  casOk,
  created,
  disconnected,
  releaseRequested,
  renewed,
  seen,
  sessionGone,
} from './support/events.js'
import { keyGone, listed, listedLater, prefix, unlisted, waiting } from './support/scenario.js'
import { snapshotOf } from './support/snapshot.js'

const restarted = snapshotOf([], 1n)

const testScheduler = (): TestScheduler =>
  new TestScheduler((actual, expected) => assert.deepStrictEqual(actual, expected))

const options = { prefix, limit: 1 }
const flags = { t: true, f: false }
/** Events: c created (ttl 1000, lease until 900), C created (ttl 100, lease until 90). */
const events = {
  c: created('me', 1000, 0),
  C: created('me', 100, 0),
  w: seen(waiting),
  l: seen(listed),
  u: seen(unlisted),
  g: seen(keyGone),
  k: casOk(['me'], 21n),
  d: disconnected,
  x: sessionGone,
  r: releaseRequested,
}

/** Unsubscribes before the 900 ms lease deadline of `c`, which is not what these tests are about. */
const watchFor50ms = '^ 50ms !'

describe('holding, on the production interpreter', () => {
  // The production interpreter says nothing before its session: false comes with it.
  it('should say nothing before its session, then false', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('--c', events)
      const subs = '       ^ 9ms !'
      const expected = '   --f'
      expectObservable(source.pipe(holds(options)), '^ 9ms !').toBe(expected, flags)
      expectSubscriptions(source.subscriptions).toBe(subs)
    })
  })

  it('should complete without a value when closed before its session', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('r', events)
      const expected = '   |'
      expectObservable(source.pipe(holds(options))).toBe(expected, flags)
    })
  })

  // A watch that fails for good is a permanent failure of the run: the contender gives up with
  // it (a transient one is retried with a new session: see interpreter.spec.ts).
  it('should error after the first false when its watch fails for good', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const { states } = interpreted(
        asyncScheduler,
        {
          session: () => cold('(s|)', { s: session() }),
          follow: () => cold('--#', undefined, new Error('watch broke')),
        },
        { step: { fairness: undefined } },
      )
      const expected = '   f-(e|)'
      const said = states.pipe(
        map((s) => (s.holding ? 't' : 'f')),
        distinctUntilChanged(),
        catchError((error: SemaphoreError) =>
          of(error.message.includes('watch broke') ? 'e' : error.message),
        ),
      )
      expectObservable(said).toBe(expected, { f: 'f', e: 'e' })
    })
  })

  it('should stop its calls when unsubscribed early', () => {
    testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
      const source = hot('-c-l-----', events)
      const unsub = '     ^----!'
      const subs = '      ^----!'
      const expected = '  -f-t'
      expectObservable(source.pipe(holds(options)), unsub).toBe(expected, flags)
      expectSubscriptions(source.subscriptions).toBe(subs)
    })
  })

  it('should become true after a CAS result that adds this session', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-w-k', events)
      const expected = '   f---t'
      expectObservable(source.pipe(holds(options)), watchFor50ms).toBe(expected, flags)
    })
  })

  it('should become true when a snapshot lists this session', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-l', events)
      const expected = '   f-t'
      expectObservable(source.pipe(holds(options)), watchFor50ms).toBe(expected, flags)
    })
  })

  it('should never emit the same value twice in a row', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-w-k-l-l', events)
      const expected = '   f---t'
      expectObservable(source.pipe(holds(options)), watchFor50ms).toBe(expected, flags)
    })
  })

  // The watch starts with the session's run: snapshots before it reach nobody.
  it('should stay false while no session was created', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('-l-l-c', events)
      const expected = '   -----f'
      expectObservable(source.pipe(holds(options))).toBe(expected, flags)
    })
  })

  it('should drop at once when an operator removes it from .lock', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-l-u', events)
      const expected = '   f-t-f'
      expectObservable(source.pipe(holds(options))).toBe(expected, flags)
    })
  })

  it('should drop at once when its contender key disappears and it is pruned', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-l-g', events)
      const expected = '   f-t-f'
      expectObservable(source.pipe(holds(options))).toBe(expected, flags)
    })
  })

  // On the interpreter the session's loss ends its run: its watch stops, so the snapshot after it
  // reaches nobody (a new session is asked for after the backoff). That the step itself stays
  // false on it is shown on contenderStep just below.
  it('should drop at once when the session is invalidated, and stay false', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-l-x-l', events)
      const expected = '   f-t-f'
      expectObservable(source.pipe(holds(options))).toBe(expected, flags)
    })
  })

  it('should stay false on a snapshot listing it after its session is gone (the step)', () => {
    const states = statesAfter(options, [
      [events.c, 0],
      [events.l, 2],
      [events.x, 4],
      [events.l, 6],
    ])
    assert.deepEqual(
      states.map((s) => s.holding),
      [false, true, false, false],
    )
  })

  it('should drop at once on release-requested, and stay false', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // close() releases and completes the states: the snapshot after it reaches nobody.
      const source = cold('c-l-r-l', events)
      const expected = '   f-t-(f|)'
      expectObservable(source.pipe(holds(options))).toBe(expected, flags)
    })
  })

  it('should drop when the watch fails and come back when the next snapshot still lists it', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-l-d-l', events)
      const expected = '   f-t-f-t'
      expectObservable(source.pipe(holds(options)), watchFor50ms).toBe(expected, flags)
    })
  })

  // On the interpreter the watch's failure lets the CAS go, so its answer (k) reaches nobody;
  // the step's own rule, that a CAS answered while the watch is down does not raise holding, is
  // shown on contenderStep just below.
  it('should not become true on a CAS answered after the watch failed, only on the next snapshot', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // The snapshot after the CAS carries an index past it (the CAS wrote index 21).
      const source = cold('c-w-d-k-L', { ...events, L: seen(listedLater) })
      const expected = '   f-------t'
      expectObservable(source.pipe(holds(options)), watchFor50ms).toBe(expected, flags)
    })
  })

  it('should not become true on a CAS result while the watch is disconnected (the step)', () => {
    const states = statesAfter(options, [
      [events.c, 0],
      [events.w, 2],
      [events.d, 4],
      [events.k, 6],
      [seen(listedLater), 8],
    ])
    // Listed by the CAS at 6, but holding only once the watch answers again at 8.
    assert.deepEqual(
      states.map((s) => `${s.holding}/${s.listed}`),
      ['false/false', 'false/false', 'false/false', 'false/true', 'true/true'],
    )
  })

  it('should stay false on a snapshot older than its own CAS after a disconnect (agent restart)', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // A restarted dev agent comes back empty, its indexes back at the start.
      const source = cold('c-w-k-L-d-R', { ...events, L: seen(listedLater), R: seen(restarted) })
      const expected = '   f---t---f'
      expectObservable(source.pipe(holds(options)), watchFor50ms).toBe(expected, flags)
    })
  })

  it('should drop at exactly the lease deadline with no further event', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('C-l', events)
      const expected = '   f-t 87ms f'
      expectObservable(source.pipe(holds(options))).toBe(expected, flags)
    })
  })

  it('should stay true when a renewal arrives just before the deadline', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('C-l 86ms n', { ...events, n: renewed(100, 89) })
      const expected = '   f-t 176ms f'
      expectObservable(source.pipe(holds(options))).toBe(expected, flags)
    })
  })

  it('should drop at the deadline of a configured lease margin', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('C-l', events)
      const expected = '   f-t 47ms f'
      expectObservable(source.pipe(holds({ ...options, leaseMarginMs: 50 }))).toBe(expected, flags)
    })
  })

  it('should come back when a late renewal revives a lapsed lease', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('C-l 92ms n', { ...events, n: renewed(100, 94) })
      const expected = '   f-t 87ms f 4ms t 88ms f'
      expectObservable(source.pipe(holds(options))).toBe(expected, flags)
    })
  })

  // The states complete when close() ended the run, not when the events complete.
  it('should emit false before completing when closed while holding', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-l-r', events)
      const expected = '   f-t-(f|)'
      expectObservable(source.pipe(holds(options))).toBe(expected, flags)
    })
  })
})
