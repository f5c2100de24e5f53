// The production interpreter of a contender (src/effects/coordinator/interpreter.ts) on a port of
// marbles: the calls it makes, when it makes and cancels them, and what it says meanwhile. Each
// spec runs the same interpreter and machine as a contender on Consul; only the port differs.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { catchError, defer, distinctUntilChanged, map, of, skip, type Observable } from 'rxjs'
import { TestScheduler } from 'rxjs/testing'
import type { KVSnapshot } from '../src/base/kv-snapshot.js'
import type { ContenderState } from '../src/core/contender/contender-state-model.js'
import type { SemaphoreError } from '../src/base/semaphore-error.js'
import { BACKOFF, backoffDelay } from '../src/base/backoff.js'
import { casOk, disconnected, sessionGone } from './support/events.js'
import { interpreted, session } from './support/port.js'
import { me, prefix, waiting } from './support/scenario.js'
import { contenderEntry, lockEntry, snapshotOf } from './support/snapshot.js'

/** Runs `spec` on a TestScheduler, which is also the interpreter's scheduler. */
function marbles(
  spec: (
    helpers: Parameters<Parameters<TestScheduler['run']>[0]>[0],
    scheduler: TestScheduler,
  ) => void,
): void {
  const scheduler = new TestScheduler((actual, expected) =>
    assert.deepStrictEqual(actual, expected),
  )
  scheduler.run((helpers) => spec(helpers, scheduler))
}

type Cold = Parameters<Parameters<TestScheduler['run']>[0]>[0]['cold']

/** One field of the states, each change once. */
const field =
  <T>(pick: (state: ContenderState) => T) =>
  (states: Observable<ContenderState>): Observable<T> =>
    states.pipe(map(pick), distinctUntilChanged())

const nextWrite = field((s) => s.write?.type ?? 'none')
const writes = { n: 'none', t: 'TryAcquire', c: 'NotContending' }

const seen = (snapshot: KVSnapshot) => ({ type: 'snapshot' as const, snapshot })
const transient = { _tag: 'Unreachable' as const, message: 'connection refused' }
/** The session backoff of the `attempt`-th failure in a row, with the specs' jitter (0). */
const backoff = (attempt: number): number =>
  backoffDelay(BACKOFF.session, attempt, { random: () => 0 })

/** Counts the subscriptions of each call, and when each started. */
function counted<T>(
  make: () => Observable<T>,
  at: number[],
  now: () => number,
): () => Observable<T> {
  return () =>
    defer(() => {
      at.push(now())
      return make()
    })
}

describe('the interpreter of a contender, on a port of marbles', () => {
  it('cancels the CAS in flight the moment the watch fails', () => {
    marbles(({ cold, expectObservable, expectSubscriptions }, scheduler) => {
      const cas = cold('-------k|', { k: casOk(['me'], 21n) })
      const watch = cold('w--d', { w: seen(waiting), d: disconnected })
      const { states } = interpreted(scheduler, {
        session: () => cold('-(s|)', { s: session() }),
        follow: () => watch,
        perform: () => cas,
      })
      expectObservable(states.pipe(nextWrite, skip(1)), '^ 20ms !').toBe('-t--n', writes)
      expectSubscriptions(cas.subscriptions).toBe('-^--!')
      expectSubscriptions(watch.subscriptions).toBe('-^ 19ms !')
    })
  })

  it('stops every call of a session lost mid-write, and asks for a new session after the backoff', () => {
    marbles(({ cold, expectObservable, expectSubscriptions }, scheduler) => {
      const cas = cold('-------k|', { k: casOk(['me'], 21n) })
      const watch = cold('w', { w: seen(waiting) })
      const lease = cold('---g', { g: sessionGone })
      const asked: number[] = []
      // The first session answers; the next request stays out.
      const answer = () => (asked.length === 1 ? cold('-(s|)', { s: session() }) : cold<never>('-'))
      const { states, released } = interpreted(scheduler, {
        session: counted(answer, asked, () => scheduler.now()),
        follow: () => watch,
        lease: () => lease,
        perform: () => cas,
      })
      expectObservable(states.pipe(nextWrite, skip(1)), '^ 300ms !').toBe('-t--n', writes)
      expectSubscriptions(cas.subscriptions).toBe('-^--!')
      expectSubscriptions(lease.subscriptions).toBe('-^--!')
      expectSubscriptions(watch.subscriptions).toBe('-^--!')
      scheduler.schedule(() => {
        // A lost session is not released: Consul already let its key go.
        assert.deepEqual(released, [])
        assert.deepEqual(asked, [0, 4 + backoff(1)])
      }, 200)
    })
  })

  it('retries a transient failure to make a session with the session backoff, saying why it waits', () => {
    marbles(({ cold, expectObservable }, scheduler) => {
      const asked: number[] = []
      let attempts = 0
      const answer = (): Observable<ReturnType<typeof session>> =>
        attempts++ < 2 ? cold('-#', undefined, transient) : cold('-(s|)', { s: session() })
      const { states } = interpreted(scheduler, {
        session: counted(answer, asked, () => scheduler.now()),
        follow: () => cold('w', { w: seen(waiting) }),
        perform: () => cold<never>('-'),
      })
      const first = 1
      const second = first + backoff(1) + 1
      const third = second + backoff(2) + 1
      const why = field(
        (s) => s.lastFailure?.during ?? (s.session === undefined ? 'none' : s.session),
      )
      expectObservable(states.pipe(why), '^ 1000ms !').toBe(
        `- ${first - 1}ms f ${third - first - 1}ms (nm)`,
        { f: 'session', n: 'none', m: 'me' },
      )
      scheduler.schedule(() => {
        assert.deepEqual(asked, [0, first + backoff(1), second + backoff(2)])
      }, 999)
    })
  })

  it('gives up at the start-up timeout when no session came, and stops asking', () => {
    marbles(({ cold, expectObservable, expectSubscriptions }, scheduler) => {
      const asking = cold<never>('-')
      const { states } = interpreted(
        scheduler,
        { session: () => asking },
        { startupTimeoutMs: 100 },
      )
      const kind = states.pipe(
        map(() => 'state'),
        catchError((error: SemaphoreError) => of(error.kind)),
      )
      expectObservable(kind).toBe('100ms (u|)', { u: 'Unreachable' })
      expectSubscriptions(asking.subscriptions).toBe('^ 99ms !')
    })
  })

  it('does not step on a snapshot older than its join answered', () => {
    marbles(({ cold, expectSubscriptions }, scheduler) => {
      const seed = snapshotOf([me], 20n)
      // Read before the join's write: our key is not there, which would ask to write it again.
      const older = snapshotOf([lockEntry(prefix, '{"Limit":1,"Holders":{}}', 3n)], 10n)
      const cas = cold<never>('-')
      interpreted(
        scheduler,
        {
          session: () => cold('-(s|)', { s: session() }),
          mayJoin: () => true,
          join: () => cold('-(j|)', { j: seed }),
          follow: () => cold('(so)', { s: seen(seed), o: seen(older) }),
          perform: () => cas,
        },
        { joins: true },
      ).states.subscribe()
      // Written on the seed at 2; only the lease deadline (at 900) stops it.
      expectSubscriptions(cas.subscriptions).toBe('--^ 897ms !')
    })
  })

  describe('a waiter far back (herd-free, limit 1: h holds, a and b wait ahead of me)', () => {
    const lock = lockEntry(prefix, '{"Limit":1,"Holders":{"h":true}}', 4n)
    const [h, a, b] = ['h', 'a', 'b'].map((id, i) => contenderEntry(prefix, id, BigInt(i + 1)))
    // At 10 it waits third; at 12 z joined behind it; at 14 b left: it is in the front places.
    const far = {
      q: seen(snapshotOf([lock, h!, a!, b!, me], 10n)),
      z: seen(snapshotOf([lock, h!, a!, b!, me, contenderEntry(prefix, 'z', 12n)], 12n)),
      n: seen(snapshotOf([lock, h!, a!, me], 14n)),
      d: disconnected,
    }
    const indexes = { a: 0n, b: 10n, c: 12n, e: 14n }
    /** The index of the snapshot each state stands on, the watch saying `follow` (of `far`). */
    const steppedOn = (cold: Cold, scheduler: TestScheduler, follow: string) =>
      interpreted(
        scheduler,
        { session: () => cold('-(s|)', { s: session() }), follow: () => cold(follow, far) },
        { herdFree: true, step: { fairness: true } },
      ).states.pipe(field((s) => s.snapshot?.index ?? 0n))

    it('holds back a snapshot that changes nothing for it, until its refresh', () => {
      marbles(({ cold, expectObservable }, scheduler) => {
        // Stepped on at 1; the next snapshot (at 6) waits for the refresh, 100 ms after 1.
        const stepped = steppedOn(cold, scheduler, 'q 4ms z')
        expectObservable(stepped, '^ 150ms !').toBe('-(ab) 96ms c', indexes)
      })
    })

    it('steps at once on a snapshot that changes its place, and drops the one it held back', () => {
      marbles(({ cold, expectObservable }, scheduler) => {
        // 12 is held back at 6; 14 reaches it at 16, and no refresh at 101 steps back onto 12.
        const stepped = steppedOn(cold, scheduler, 'q 4ms z 9ms n')
        expectObservable(stepped, '^ 150ms !').toBe('-(ab) 11ms e', indexes)
      })
    })

    it('lets the first snapshot after a disconnect through, far back or not', () => {
      marbles(({ cold, expectObservable }, scheduler) => {
        const stepped = steppedOn(cold, scheduler, 'q 4ms d 4ms z')
        expectObservable(stepped, '^ 150ms !').toBe('-(ab) 6ms c', indexes)
      })
    })
  })

  it("says false the moment a holder's run fails, releases, and asks for a new session", () => {
    marbles(({ cold, expectObservable }, scheduler) => {
      const asked: number[] = []
      const answer = () => (asked.length === 1 ? cold('-(s|)', { s: session() }) : cold<never>('-'))
      const { states, released } = interpreted(scheduler, {
        session: counted(answer, asked, () => scheduler.now()),
        follow: () => cold('w', { w: seen(waiting) }),
        perform: () => cold('-(k|)', { k: casOk(['me'], 21n) }),
        // The renewals fail for good (a lease's error is permanent for it), with a transient error.
        lease: () => cold('---#', undefined, transient),
      })
      const holding = field((s) => s.holding)
      expectObservable(states.pipe(holding), '^ 300ms !').toBe('-ft-f', { t: true, f: false })
      scheduler.schedule(() => {
        assert.deepEqual(
          released.map((r) => [r.session, r.at, r.release.keep]),
          [['me', 4, false]],
        )
        assert.deepEqual(asked, [0, 4 + backoff(1)])
      }, 299)
    })
  })

  it('takes an answer that comes before the call is even subscribed (a write that answers at once)', () => {
    marbles(({ cold, expectObservable }, scheduler) => {
      const { states } = interpreted(scheduler, {
        session: () => cold('-(s|)', { s: session() }),
        follow: () => cold('w', { w: seen(waiting) }),
        // Answered and completed inside subscribe(): the interpreter must not trip on it.
        perform: () => of(casOk(['me'], 21n)),
      })
      const holding = field((s) => s.holding)
      expectObservable(states.pipe(holding), '^ 20ms !').toBe('-(ft)', { t: true, f: false })
    })
  })
})
