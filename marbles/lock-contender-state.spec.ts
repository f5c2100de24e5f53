import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { catchError, distinctUntilChanged, map, of, type OperatorFunction } from 'rxjs'
import type { SemaphoreError } from '../src/base/semaphore-error.js'
import { TestScheduler } from 'rxjs/testing'
import { LOCK_FLAGS, SEMAPHORE_FLAGS } from '../src/base/flags.js'
import {
  initialContenderState,
  type ContenderState,
} from '../src/core/contender/contender-state-model.js'
import { contending } from './support/port.js'
import { contenderStep } from '../src/core/contender/contender-step.js'
import { leaderKeyDecider } from '../src/core/leader-key/decide-leader-key.js'
import type { ContenderEvent } from '../src/core/events.js'
import { casFailed, casOk, created, releaseRequested, seen, sessionGone } from './support/events.js'
import { lockEntry, snapshotOf } from './support/snapshot.js'

/** The state after one step. */
const stateAfter = (...step: Parameters<typeof contenderStep>): ContenderState =>
  contenderStep(...step).state

const testScheduler = (): TestScheduler =>
  new TestScheduler((actual, expected) => assert.deepStrictEqual(actual, expected))

const prefix = 'svc/leader'
const options = { prefix, limit: 1, fairness: false, decide: leaderKeyDecider('node-a') }
/** Unsubscribes well before the 900 ms lease deadline of `c`. */
const watchFor400ms = '^ 400ms !'

const lockKey = (session: string | undefined, modifyIndex: bigint) =>
  snapshotOf([lockEntry(prefix, 'v', modifyIndex, { flags: LOCK_FLAGS, session })])

const retry = (inMs: number): ContenderEvent => ({ type: 'retry', inMs })

const events = {
  c: created('me', 1000, 0),
  f: seen(lockKey(undefined, 10n)),
  g: seen(lockKey(undefined, 12n)),
  o: seen(lockKey('other', 11n)),
  m: seen(lockKey('me', 21n)),
  k: casOk(['me'], 21n),
  F: casFailed,
  R: retry(250),
  x: sessionGone,
  r: releaseRequested,
}

const field =
  <T>(pick: (state: ContenderState) => T): OperatorFunction<ContenderState, T> =>
  (s) =>
    s.pipe(map(pick), distinctUntilChanged())

/** The type of `next`, each new action object once. */
const nextAction: OperatorFunction<ContenderState, string> = (s) =>
  s.pipe(
    map((state) => state.write),
    distinctUntilChanged(),
    map((next) => next?.type ?? 'none'),
  )
const actions = { u: 'none', T: 'TryAcquire' }

describe('a leader-key contender on the production interpreter', () => {
  it('should ask to acquire a free key and hold once the acquisition answers', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-f-k', events)
      const expected = '   f---t'
      expectObservable(
        source.pipe(
          contending(options),
          field((s) => s.holding),
        ),
        watchFor400ms,
      ).toBe(expected, { f: false, t: true })
    })
  })

  it('should take the fencing token from the acquisition answer', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-f-k-m', events)
      const expected = '   u---t'
      expectObservable(
        source.pipe(
          contending(options),
          field((s) => s.fencingToken),
        ),
        watchFor400ms,
      ).toBe(expected, { u: undefined, t: 21n })
    })
  })

  it('should wait while another session holds the key and try when it is freed', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-o-f', events)
      const expected = '   u---T'
      expectObservable(source.pipe(contending(options), nextAction), watchFor400ms).toBe(
        expected,
        actions,
      )
    })
  })

  it('should drop holding when the key shows another session', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('c-m-o', events)
      const expected = '   0-1-2'
      const summary = (s: ContenderState): string => `${s.holding} ${s.reason}`
      expectObservable(source.pipe(contending(options), field(summary)), watchFor400ms).toBe(
        expected,
        { 0: 'false undefined', 1: 'true acquired', 2: 'false removed' },
      )
    })
  })

  it("should report a Conflict on a semaphore's .lock and ask for nothing", () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const semaphoreLock = lockEntry(prefix, '{"Limit":2,"Holders":{}}', 9n, {
        flags: SEMAPHORE_FLAGS,
      })
      const source = cold('c-s', { ...events, s: seen(snapshotOf([semaphoreLock])) })
      // A prefix problem ends the contender: it releases and gives up with the problem's error.
      const expected = '   0-(1e|)'
      const summary = (s: ContenderState): string => `${s.problem?.type} ${s.write?.type}`
      const said = source.pipe(
        contending(options),
        field(summary),
        catchError((error: SemaphoreError) => of(`error ${error.kind}`)),
      )
      expectObservable(said, watchFor400ms).toBe(expected, {
        0: 'undefined undefined',
        1: 'Conflict undefined',
        e: 'error Conflict',
      })
    })
  })

  describe('retry (lock-delay)', () => {
    it('should clear the action on retry and ask again on the same snapshot after inMs', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const source = cold('c-f-R', events)
        const expected = '   u-T-u 249ms T'
        expectObservable(source.pipe(contending(options), nextAction), watchFor400ms).toBe(
          expected,
          actions,
        )
      })
    })

    it('should keep retrying for as long as the refusals go on, then hold', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        // Each R answers the acquisition the previous retry asked for, 2 ms after it.
        const source = cold('c-f-R 249ms --R 249ms --k', events)
        const expected = '   f 507ms t'
        expectObservable(
          source.pipe(
            contending(options),
            field((s) => s.holding),
          ),
          '^ 800ms !',
        ).toBe(expected, { f: false, t: true })
      })
    })

    it('should ask again at each retry, each time as a new action', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const source = cold('c-f-R 249ms --R', events)
        const expected = '   u-T-u 249ms T-u 249ms T'
        expectObservable(source.pipe(contending(options), nextAction), '^ 800ms !').toBe(
          expected,
          actions,
        )
      })
    })

    it('should decide at once on a new snapshot and drop the pending retry', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        // g at 104 asks at once; F at 154 answers it; nothing is asked at 254.
        const source = cold('c-f-R 99ms g 49ms F', events)
        const expected = '   u-T-u 99ms T 49ms u'
        expectObservable(source.pipe(contending(options), nextAction), watchFor400ms).toBe(
          expected,
          actions,
        )
      })
    })

    it('should not ask again when the retry finds the key held by another', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const source = cold('c-f-R-o', events)
        const expected = '   u-T-u'
        expectObservable(source.pipe(contending(options), nextAction), watchFor400ms).toBe(
          expected,
          actions,
        )
      })
    })

    it('should not retry after the session is gone', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const source = cold('c-f-R-x', events)
        const expected = '   u-T-u'
        expectObservable(source.pipe(contending(options), nextAction), watchFor400ms).toBe(
          expected,
          actions,
        )
      })
    })

    // On the interpreter, close() cancels the write and completes the states, so its late answer
    // reaches nobody; the step's own rule (a retired contender ignores a retry) is shown below on
    // contenderStep.
    it('should ignore a retry after release-requested', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const source = cold('c-f-r-R', events)
        const expected = '   u-T-(u|)'
        expectObservable(source.pipe(contending(options), nextAction), watchFor400ms).toBe(
          expected,
          actions,
        )
      })
    })

    it('should fire the retry timer with no further event, and stop it on unsubscribe', () => {
      testScheduler().run(({ hot, expectObservable, expectSubscriptions }) => {
        const source = hot('-c-f-R------', events)
        const unsub = '     ^------ 100ms !'
        const subs = '      ^------ 100ms !'
        const expected = '  -u-T-u'
        expectObservable(source.pipe(contending(options), nextAction), unsub).toBe(
          expected,
          actions,
        )
        expectSubscriptions(source.subscriptions).toBe(subs)
      })
    })

    it('should ask once more after a failed acquisition only on a new snapshot', () => {
      testScheduler().run(({ cold, expectObservable }) => {
        const source = cold('c-f-F 99ms g', events)
        const expected = '   u-T-u 99ms T'
        expectObservable(source.pipe(contending(options), nextAction), watchFor400ms).toBe(
          expected,
          actions,
        )
      })
    })
  })
})

describe('contenderStep on a wake', () => {
  /** The state after c, f and a retry of 250.5 ms at t = 4: retryAt 254.5. */
  const retrying = [
    [events.c, 0],
    [events.f, 2],
    [retry(250.5), 4],
  ].reduce<ContenderState>(
    (state, [event, at]) => stateAfter(state, event as ContenderEvent, at as number, options),
    initialContenderState,
  )

  it('should act on a wake that a host timer fired just before wakeAt', () => {
    assert.equal(retrying.wakeAt, 254.5)
    const woken = stateAfter(retrying, { type: 'wake' }, 254, options)
    assert.equal(woken.write?.type, 'TryAcquire')
    assert.equal(woken.retryAt, undefined)
  })

  it('should ignore a retry once released', () => {
    const released = stateAfter(retrying, events.r, 5, options)
    assert.equal(released.retired, 'released')
    const after = stateAfter(released, retry(250), 6, options)
    assert.deepEqual(
      [after.write, after.retryAt, after.wakeAt],
      [undefined, undefined, released.wakeAt],
    )
  })

  it('should drop holding on a wake just before the lease deadline', () => {
    const leading = stateAfter(stateAfter(retrying, events.m, 10, options), events.m, 10, options)
    assert.equal(leading.holding, true)
    assert.equal(leading.wakeAt, 900)
    const woken = stateAfter(leading, { type: 'wake' }, 899, options)
    assert.equal(woken.holding, false)
    assert.equal(woken.reason, 'lease-expired')
  })
})
