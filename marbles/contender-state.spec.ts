import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { catchError, distinctUntilChanged, map, of, type OperatorFunction } from 'rxjs'
import type { SemaphoreError } from '../src/base/semaphore-error.js'
import type { ContenderEvent } from '../src/core/events.js'
import { TestScheduler } from 'rxjs/testing'
import { HOLDER_FLAGS, LOCK_FLAGS } from '../src/base/flags.js'
import {
  initialContenderState,
  type ContenderState,
  type CountedGrace,
  type SharedGrace,
} from '../src/core/contender/contender-state-model.js'
import { contending } from './support/port.js'
import {
  casFailed,
  casOk,
  created,
  disconnected,
  releaseRequested,
  seen,
  seenAfterReset,
} from './support/events.js'
import { listed, listedLater, me, prefix, unlisted, waiting } from './support/scenario.js'
import { contenderEntry, lockEntry, snapshotOf } from './support/snapshot.js'

const testScheduler = (): TestScheduler =>
  new TestScheduler((actual, expected) => assert.deepStrictEqual(actual, expected))

const options = { prefix, limit: 1 }
/** Unsubscribes before the 900 ms lease deadline of `c`, which is not what these tests are about. */
const watchFor50ms = '^ 50ms !'

/** One field of the states, each change once. */
const field =
  <T>(pick: (state: ContenderState) => T): OperatorFunction<ContenderState, T> =>
  (s) =>
    s.pipe(map(pick), distinctUntilChanged())

/** A give-up error as its last value, `error <kind>`, and then completion. */
const orError: OperatorFunction<string, string> = (s) =>
  s.pipe(catchError((error: SemaphoreError) => of(`error ${error.kind}`)))

/** The type of `next`, each new action object once. */
const nextAction: OperatorFunction<ContenderState, string> = (s) =>
  s.pipe(
    map((state) => state.write),
    distinctUntilChanged(),
    map((next) => next?.type ?? 'none'),
  )
const actions = { u: 'none', T: 'TryAcquire', N: 'NotContending' }

const events = {
  c: created('me', 1000, 0),
  w: seen(waiting),
  l: seen(listed),
  L: seen(listedLater),
  u: seen(unlisted),
  k: casOk(['me'], 21n),
  F: casFailed,
  d: disconnected,
  r: releaseRequested,
}

/** Two waiters a (rank 0) and b (rank 1) for limit 1, `.lock` not there yet: one free slot. */
/** `.lock` naming us, as written before the snapshots that no longer show our key. */
const listedLock = lockEntry(prefix, '{"Limit":1,"Holders":{"me":true}}', 10n)

const queue = snapshotOf([contenderEntry(prefix, 'a', 10n), contenderEntry(prefix, 'b', 11n)])

describe('a contender on the production interpreter', () => {
  // The production interpreter says nothing before its session: a contender's first state is
  // the one its session starts (the old scan of the step emitted the initial state at subscribe).
  it('should emit nothing before its session, and the initial state with it', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('---c', events)
      const subs = '       ^ 5ms !'
      const expected = '   ---(ab)'
      expectObservable(source.pipe(contending(options)), '^ 5ms !').toBe(expected, {
        a: initialContenderState,
        b: {
          ...initialContenderState,
          session: 'me',
          phase: 'joining',
          leaseDeadline: 900,
          wakeAt: 900,
        },
      })
      expectSubscriptions(source.subscriptions).toBe(subs)
    })
  })

  // A close() before any session ends the contender at once: nothing ran, nothing to release.
  it('should complete at once when closed before its session', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('-r', events)
      const expected = '   -|'
      expectObservable(source.pipe(contending(options))).toBe(expected)
    })
  })

  // The states complete when close() ended the run, not when what Consul says stops coming.
  it('should complete when closed, not when the events complete', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-s|', { c: created('b', 1000, 0), s: seen(queue) })
      const closed = cold('c-s----r', { ...events, c: created('b', 1000, 0), s: seen(queue) })
      expectObservable(source.pipe(contending(options), nextAction), '^ 50ms !').toBe('u', actions)
      expectObservable(closed.pipe(contending(options), nextAction)).toBe('u------|', actions)
    })
  })

  it('should stop its calls and drop its timers when unsubscribed early', () => {
    testScheduler().run(({ cold, hot, expectObservable, expectSubscriptions }) => {
      const source = hot('-c-w-----', events)
      const cas = cold<ContenderEvent>('-')
      const unsub = '     ^------!'
      const subs = '      ^------!'
      const expected = '  -u-T'
      expectObservable(
        source.pipe(contending({ ...options, perform: () => cas }), nextAction),
        unsub,
      ).toBe(expected, actions)
      expectSubscriptions(source.subscriptions).toBe(subs)
      // The CAS asked for at 3 is let go with the contender.
      expectSubscriptions(cas.subscriptions).toBe('---^---!')
    })
  })

  it('should ask to create the contender key when the snapshot lacks it', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-e', { ...events, e: seen(snapshotOf([])) })
      const expected = '   u-N'
      expectObservable(source.pipe(contending(options), nextAction), watchFor50ms).toBe(
        expected,
        actions,
      )
    })
  })

  it('should ask for the CAS once while .lock and the body stay the same', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const joined = seen(snapshotOf([me, contenderEntry(prefix, 'z', 9n, { key: 'svc/lock/z' })]))
      const source = cold('c-w-j', { ...events, j: joined })
      const expected = '   u-T'
      expectObservable(
        source.pipe(contending({ prefix, limit: 2 }), nextAction),
        watchFor50ms,
      ).toBe(expected, actions)
    })
  })

  it('should clear the action when the CAS answers', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-w-k', events)
      const expected = '   u-T-u'
      expectObservable(source.pipe(contending(options), nextAction), watchFor50ms).toBe(
        expected,
        actions,
      )
    })
  })

  it('should ask again on the next snapshot after a failed CAS', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-w-F-w', events)
      const expected = '   u-T-u-T'
      expectObservable(source.pipe(contending(options), nextAction), watchFor50ms).toBe(
        expected,
        actions,
      )
    })
  })

  // On the interpreter an answer reaches the contender only through its write: a write cancelled
  // (here by the watch's failure) hears nothing more, so the late answer changes nothing and the
  // next snapshot asks again.
  it('should not hear the answer of a CAS it cancelled, and ask again on the next snapshot', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-w-d-k-w', events)
      const expected = '   u-T-u---T'
      expectObservable(source.pipe(contending(options), nextAction), watchFor50ms).toBe(
        expected,
        actions,
      )
    })
  })

  it('should take the fencing token from the CAS result', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-w-k-l', events)
      const expected = '   u---t'
      expectObservable(
        source.pipe(
          contending(options),
          field((s) => s.fencingToken),
        ),
        watchFor50ms,
      ).toBe(expected, { u: undefined, t: 21n })
    })
  })

  it('should take the fencing token from the first snapshot listing it, and keep it', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-l-L', events)
      const expected = '   u-t'
      expectObservable(
        source.pipe(
          contending(options),
          field((s) => s.fencingToken),
        ),
        watchFor50ms,
      ).toBe(expected, { u: undefined, t: 20n })
    })
  })

  it("should take a hand-off's index from its own key as the fencing token, not .lock's later index", () => {
    // Handed the slot at index 40 (its key rewritten with HOLDER_FLAGS), first seen in a snapshot
    // where .lock was written again since (45): the token is the hand-off's.
    const handed = snapshotOf([
      lockEntry(prefix, '{"Limit":1,"Holders":{"me":true}}', 45n),
      contenderEntry(prefix, 'me', 5n, { flags: HOLDER_FLAGS, modifyIndex: 40n }),
    ])
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-w-h', { ...events, h: seen(handed) })
      const expected = '   u---t'
      expectObservable(
        source.pipe(
          contending(options),
          field((s) => s.fencingToken),
        ),
        watchFor50ms,
      ).toBe(expected, { u: undefined, t: 40n })
    })
  })

  it('should restore holding after a watch failure with no new CAS and the same token', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-l-d-l', events)
      const expected = '   0-1-2-3'
      const summary = (s: ContenderState): string =>
        `${s.holding} ${s.reason} ${s.write?.type} ${s.fencingToken}`
      expectObservable(source.pipe(contending(options), field(summary)), watchFor50ms).toBe(
        expected,
        {
          0: 'false undefined undefined undefined',
          1: 'true acquired undefined 20',
          2: 'false watch-failed undefined 20',
          3: 'true restored undefined 20',
        },
      )
    })
  })

  it('should say why holding dropped when an operator removes it from .lock', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-l-u', events)
      const expected = '   u-a-r'
      expectObservable(
        source.pipe(
          contending(options),
          field((s) => s.reason),
        ),
        watchFor50ms,
      ).toBe(expected, { u: undefined, a: 'acquired', r: 'removed' })
    })
  })

  it('should ignore a snapshot older than its own CAS', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-w-k-w', events)
      const expected = '   f---t'
      expectObservable(
        source.pipe(
          contending(options),
          field((s) => s.holding),
        ),
        watchFor50ms,
      ).toBe(expected, { f: false, t: true })
    })
  })

  it('should drop at once on a snapshot older than its own CAS that lacks its own key', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // k: our CAS wrote index 21. g: an older snapshot (index 15) with `.lock` still naming us
      // but no key of ours: it cannot predate the key (written before the CAS), so the key is gone.
      const source = cold('c-w-k-g', { ...events, g: seen(snapshotOf([listedLock], 15n)) })
      const expected = '   f---t-f'
      expectObservable(
        source.pipe(
          contending(options),
          field((s) => s.holding),
        ),
        watchFor50ms,
      ).toBe(expected, { f: false, t: true })
    })
  })

  it('should take a reset snapshot below its own CAS as the truth', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // R: the watch's indexes went backwards (a recursive delete answered with an older
      // tombstone's index): an empty prefix, index 12, below our CAS at 21.
      const source = cold('c-w-k-R', {
        ...events,
        R: seenAfterReset(snapshotOf([], 12n)),
      })
      const expected = '   u---a-r'
      expectObservable(
        source.pipe(
          contending(options),
          field((s) => s.reason),
        ),
        watchFor50ms,
      ).toBe(expected, { u: undefined, a: 'acquired', r: 'removed' })
    })
  })

  it('should judge snapshots after a reset by their own indexes, not the CAS before it', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // After a restore that still lists us (R, index 12), an operator removes us at index 14,
      // still below the CAS of before the reset (21): the removal must count.
      const source = cold('c-w-k-R-U', {
        ...events,
        R: seenAfterReset(snapshotOf([listedLock, me], 12n)),
        U: seen(snapshotOf([lockEntry(prefix, '{"Limit":1,"Holders":{}}', 14n), me], 14n)),
      })
      const expected = '   f---t---f'
      expectObservable(
        source.pipe(
          contending(options),
          field((s) => s.holding),
        ),
        watchFor50ms,
      ).toBe(expected, { f: false, t: true })
    })
  })

  it('should ask for nothing after release-requested', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // close() releases and completes the states: the snapshot after it reaches nobody.
      const source = cold('c-w-r-w', events)
      const expected = '   u-T-(u|)'
      expectObservable(source.pipe(contending(options), nextAction), watchFor50ms).toBe(
        expected,
        actions,
      )
    })
  })

  it('should report a Conflict and ask for nothing', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const taken = seen(snapshotOf([lockEntry(prefix, 'x', 40n, { flags: LOCK_FLAGS }), me]))
      const source = cold('c-x', { ...events, x: taken })
      // A prefix problem ends the contender: it releases and gives up with the problem's error.
      const expected = '   0-(1e|)'
      const summary = (s: ContenderState): string => `${s.problem?.type} ${s.write?.type}`
      expectObservable(
        source.pipe(contending(options), field(summary), orError),
        watchFor50ms,
      ).toBe(expected, { 0: 'undefined undefined', 1: 'Conflict undefined', e: 'error Conflict' })
    })
  })

  it('should report a LimitConflict and ask for nothing', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const other = seen(snapshotOf([lockEntry(prefix, '{"Limit":3,"Holders":[]}', 40n), me]))
      const source = cold('c-x', { ...events, x: other })
      // A prefix problem ends the contender: it releases and gives up with the problem's error.
      const expected = '   0-(1e|)'
      const summary = (s: ContenderState): string => `${s.problem?.type} ${s.write?.type}`
      expectObservable(
        source.pipe(contending(options), field(summary), orError),
        watchFor50ms,
      ).toBe(expected, {
        0: 'undefined undefined',
        1: 'LimitConflict undefined',
        e: 'error LimitConflict',
      })
    })
  })

  describe('fairness', () => {
    const asB = { ...events, c: created('b', 1_000_000, 0), s: seen(queue) }

    it('should keep the second of two waiters for one slot waiting while the first may try', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const source = cold('c-s', asB)
        const expected = '   0-1'
        const summary = (s: ContenderState): string =>
          s.decision?.type === 'Wait' ? `Wait rank ${s.decision.rank}` : `${s.decision?.type}`
        expectObservable(source.pipe(contending(options), field(summary)), watchFor50ms).toBe(
          expected,
          { 0: 'undefined', 1: 'Wait rank 1' },
        )
      })
    })

    it('should let a waiter held back by rank try after the grace when the slot stays free', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const source = cold('c-s', asB)
        const expected = '   u 2001ms T'
        expectObservable(source.pipe(contending(options), nextAction), '^ 3000ms !').toBe(
          expected,
          actions,
        )
      })
    })

    it('should keep counting the grace when others write .lock (contenders that do not queue)', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        // z: `.lock` rewritten at 1002 ms (a `consul lock` contender took the free slot and gave
        // it back); the waiter ahead has not moved, so the grace that started at 2 ms runs on.
        const rewritten = seen(
          snapshotOf([lockEntry(prefix, '{"Limit":1,"Holders":[]}', 40n), ...queue.entries]),
        )
        const source = cold('c-s 999ms z', { ...asB, z: rewritten })
        const expected = '   u 2001ms T'
        expectObservable(source.pipe(contending(options), nextAction), '^ 4000ms !').toBe(
          expected,
          actions,
        )
      })
    })

    it('should restart the grace when the waiter first in line takes a slot', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const c = contenderEntry(prefix, 'c', 12n)
        // s: c is third for one free slot (its grace would end at 2502 ms). z at 1002 ms: a took
        // the slot, so the queue moves and nothing is free. y at 1502 ms: a left; c is second
        // for a free slot and counts one grace from then: 3502 ms.
        const source = cold('c-s 999ms z 499ms y', {
          c: created('c', 1_000_000, 0),
          s: seen(snapshotOf([...queue.entries, c])),
          z: seen(
            snapshotOf([
              lockEntry(prefix, '{"Limit":1,"Holders":{"a":true}}', 40n),
              ...queue.entries,
              c,
            ]),
          ),
          y: seen(
            snapshotOf([
              lockEntry(prefix, '{"Limit":1,"Holders":{}}', 41n),
              contenderEntry(prefix, 'b', 11n),
              c,
            ]),
          ),
        })
        const expected = '   u 3501ms T'
        expectObservable(source.pipe(contending(options), nextAction), '^ 5000ms !').toBe(
          expected,
          actions,
        )
      })
    })

    it('should wait a quarter grace more for each place further back', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const three = snapshotOf([...queue.entries, contenderEntry(prefix, 'c', 12n)])
        const source = cold('c-s', { ...asB, c: created('c', 1_000_000, 0), s: seen(three) })
        const expected = '   u 2501ms T'
        expectObservable(source.pipe(contending(options), nextAction), '^ 5000ms !').toBe(
          expected,
          actions,
        )
      })
    })

    it('should hold the second in line back by one grace when two slots stay free', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const twoFree = snapshotOf([
          lockEntry(prefix, '{"Limit":2,"Holders":{}}', 40n),
          ...queue.entries,
        ])
        const source = cold('c-s', { ...asB, s: seen(twoFree) })
        const expected = '   u 2001ms T'
        expectObservable(
          source.pipe(contending({ ...options, limit: 2 }), nextAction),
          '^ 3000ms !',
        ).toBe(expected, actions)
      })
    })

    it('should take up the grace a contender of its process counts for the same front waiter', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        // Another contender of the process began counting at 0 ms behind a (first in line, not
        // taking the free slot): b, second in line, tries when that grace ends, at 2000 ms, not
        // a whole grace after its own first snapshot at 2 ms.
        let counted: CountedGrace | undefined = { graceFront: 'a', graceSince: 0 }
        const sharedGrace: SharedGrace = { recall: () => counted, remember: (g) => (counted = g) }
        const source = cold('c-s', asB)
        const expected = '   u 1999ms T'
        expectObservable(
          source.pipe(contending({ ...options, sharedGrace }), nextAction),
          '^ 3000ms !',
        ).toBe(expected, actions)
      })
    })

    it('should count its own grace when the shared one measures another front waiter', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        let counted: CountedGrace | undefined = { graceFront: 'gone', graceSince: 0 }
        const sharedGrace: SharedGrace = { recall: () => counted, remember: (g) => (counted = g) }
        const source = cold('c-s', asB)
        const expected = '   u 2001ms T'
        expectObservable(
          source.pipe(contending({ ...options, sharedGrace }), nextAction),
          '^ 3000ms !',
        ).toBe(expected, actions)
      })
    })

    it('should use the configured grace', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const source = cold('c-s', asB)
        const expected = '   u 101ms T'
        expectObservable(
          source.pipe(contending({ ...options, fairnessGraceMs: 100 }), nextAction),
          '^ 3000ms !',
        ).toBe(expected, actions)
      })
    })

    it('should restart the grace after a watch failure', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const source = cold('c-s 997ms d 499ms s', { ...asB, d: disconnected })
        const expected = '   u 3499ms T'
        expectObservable(source.pipe(contending(options), nextAction), '^ 5000ms !').toBe(
          expected,
          actions,
        )
      })
    })

    it('should let every waiter try at once when fairness is off', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const source = cold('c-s', asB)
        const expected = '   u-T'
        expectObservable(
          source.pipe(contending({ ...options, fairness: false }), nextAction),
          watchFor50ms,
        ).toBe(expected, actions)
      })
    })
  })
})

/** The holder `a` of `q`, whose key is older than ours. */
const queueHead = contenderEntry(prefix, 'a', 1n, { flags: HOLDER_FLAGS, modifyIndex: 9n })

describe('a contender on the production interpreter: the phase', () => {
  const phases = {
    i: 'idle',
    j: 'joining',
    W: 'waiting',
    A: 'acquiring',
    h: 'holding',
    d: 'doubtful',
    r: 'retired',
  } as const
  const phaseEvents = {
    ...events,
    e: seen(snapshotOf([])),
    q: seen(snapshotOf([lockEntry(prefix, '{"Limit":1,"Holders":{"a":true}}', 9n), queueHead, me])),
  }

  it('should name where the contender is: joining, acquiring, holding, doubtful, holding, retired', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      // r: close() retires it, releases, and completes the states.
      const source = cold('c 9ms e 9ms w 9ms k 9ms d 9ms L 9ms r', phaseEvents)
      const expected = '   (ij) 16ms A 9ms h 9ms d 9ms h 9ms (r|)'
      expectObservable(
        source.pipe(
          contending(options),
          field((s) => s.phase),
        ),
        '^ 100ms !',
      ).toBe(expected, phases)
    })
  })

  it('should be waiting behind a holder, and acquiring once the slot is free', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c 9ms q 9ms w', phaseEvents)
      const expected = '   (ij) 6ms W 9ms A'
      expectObservable(
        source.pipe(
          contending(options),
          field((s) => s.phase),
        ),
        '^ 100ms !',
      ).toBe(expected, phases)
    })
  })
})
