// The test doubles of 'rx-consul-semaphore/testing', used as a user's own marble spec would use
// them, and held to the rules of the real contenders.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { EMPTY, catchError, interval, map, of, switchMap } from 'rxjs'
import { TestScheduler } from 'rxjs/testing'
import { SemaphoreError } from '../src/base/semaphore-error.js'
import { fakeLeaderElection, fakeSemaphore } from '../src/testing/index.js'

const testScheduler = (): TestScheduler =>
  new TestScheduler((actual, expected) => assert.deepStrictEqual(actual, expected))

const flags = { t: true, f: false }

describe('fakeSemaphore', () => {
  it('should run the work of a switchMap pipeline only while it holds', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const holding = cold('f--t-----f--t-----', flags)
      const unsub = '       ^----------------!'
      const expected = '    -----0-1------0-1'
      const sem = fakeSemaphore({ holding, limit: 3 })
      const work$ = sem.holding$.pipe(switchMap((held) => (held ? interval(2) : EMPTY)))
      expectObservable(work$, unsub).toBe(expected, { 0: 0, 1: 1 })
    })
  })

  it('should emit false first, and nothing more for a stream that never emits', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const sem = fakeSemaphore({ holding: cold('-', flags) })
      expectObservable(sem.holding$).toBe('f', flags)
    })
  })

  it('should never emit the same value twice in a row', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const holding = cold('f-t-t-f-f-t', flags)
      const expected = '    f-t---f---t'
      expectObservable(fakeSemaphore({ holding }).holding$).toBe(expected, flags)
    })
  })

  it('should emit a state only when holding changes', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const holding = cold('f-t-t-f-f-t', flags)
      const expected = '    a-b---c---d'
      const states = fakeSemaphore({ holding }).state$.pipe(map((s) => `${s.holding} ${s.reason}`))
      expectObservable(states).toBe(expected, {
        a: 'false undefined',
        b: 'true acquired',
        c: 'false removed',
        d: 'true acquired',
      })
    })
  })

  it('should carry a fencing token only while holding, greater for every acquisition', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const values = { ...flags, w: 'watch-failed', r: 'restored' } as const
      const holding = cold('--t--f--t--w--r', values)
      const expected = '    a-b--a--c--a--c'
      const sem = fakeSemaphore({ holding, firstFencingToken: 40n })
      expectObservable(sem.state$.pipe(map((s) => s.fencingToken))).toBe(expected, {
        a: undefined,
        b: 40n,
        c: 41n,
      })
    })
  })

  it('should say a request to give the slot back while it holds, until the tenure ends', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const asked = { revokeRequested: { graceMs: 30_000, reason: 'deploy' } }
      // A request before it holds is ignored; one while it holds stays until it falls.
      const holding = cold('r-t-r--f-t', { ...flags, r: asked })
      const expected = '    a-d-b--a-d'
      const sem = fakeSemaphore({ holding })
      const said = sem.state$.pipe(map((s) => `${s.holding} ${s.revokeRequested?.reason ?? '-'}`))
      expectObservable(said).toBe(expected, { a: 'false -', b: 'true deploy', d: 'true -' })
    })
  })

  it('should keep counting fencing tokens when subscribed again after the last unsubscribe', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const holding = cold('-t', flags)
      const first = '       ^--!'
      const firstTokens = ' ua'
      const second = '      ----^'
      const secondTokens = '----ub'
      const tokens = fakeSemaphore({ holding }).state$.pipe(map((s) => s.fencingToken))
      const values = { u: undefined, a: 1n, b: 2n }
      expectObservable(tokens, first).toBe(firstTokens, values)
      expectObservable(tokens, second).toBe(secondTokens, values)
    })
  })

  it('should give the reasons the test names, rising and falling', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const reasons = {
        a: 'acquired',
        s: 'session-invalidated',
        w: 'watch-failed',
        r: 'restored',
        l: 'lease-expired',
      } as const
      const holding = cold('-a-s-a-w-r-l', reasons)
      const expected = '    ua-s-a-w-r-l'
      const sem = fakeSemaphore({ holding })
      expectObservable(sem.state$.pipe(map((s) => s.reason))).toBe(expected, {
        ...reasons,
        u: undefined,
      })
    })
  })

  it('should list only itself: a holder while holding, never waiting, with the given limit', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const holding = cold('-t-f', flags)
      const expected = '    ab-c'
      const sem = fakeSemaphore({ holding, limit: 3, session: 's1' })
      const seen = sem.state$.pipe(
        map((s) => `${s.session} ${s.holders.join()}|${s.waiting.length} ${s.limit} ${s.rank}`),
      )
      expectObservable(seen).toBe(expected, {
        a: 's1 |0 3 undefined',
        b: 's1 s1|0 3 undefined',
        c: 's1 |0 3 undefined',
      })
    })
  })

  it('should share one subscription of the test stream between holding$ and state$', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const holding = cold('-t', flags)
      const expected = '    ft'
      const subs = '        ^'
      const sem = fakeSemaphore({ holding })
      expectObservable(sem.holding$).toBe(expected, flags)
      expectObservable(sem.state$.pipe(map((s) => s.holding))).toBe(expected, flags)
      expectSubscriptions(holding.subscriptions).toBe(subs)
    })
  })

  it('should say false as released and complete when closed while holding', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const holding = cold('-t------', flags)
      const closeAt = cold('----c')
      const expected = '    ft--(f|)'
      const reasons = '     ua--(r|)'
      const subs = '        ^---!'
      const sem = fakeSemaphore({ holding })
      closeAt.subscribe(() => void sem.close())
      expectObservable(sem.holding$).toBe(expected, flags)
      expectObservable(sem.state$.pipe(map((s) => s.reason))).toBe(reasons, {
        u: undefined,
        a: 'acquired',
        r: 'released',
      })
      expectSubscriptions(holding.subscriptions).toBe(subs)
    })
  })

  it('should complete without a new state when closed while not holding', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const holding = cold('-t-f----', flags)
      const closeAt = cold('-----c')
      const expected = '    ft-f-|'
      const sem = fakeSemaphore({ holding })
      closeAt.subscribe(() => void sem.close())
      expectObservable(sem.holding$).toBe(expected, flags)
    })
  })

  it('should count its close() calls', async () => {
    const sem = fakeSemaphore({ holding: EMPTY })
    assert.equal(sem.closeCount, 0)
    await sem.close()
    await sem.close()
    assert.equal(sem.closeCount, 2)
  })

  it('should say false and complete at once to a subscriber that comes after close()', () => {
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const holding = cold('t', flags)
      const expected = '    (f|)'
      const sem = fakeSemaphore({ holding })
      void sem.close()
      expectObservable(sem.holding$).toBe(expected, flags)
      expectSubscriptions(holding.subscriptions).toBe([])
    })
  })

  it('should stay open, still holding, when the test stream completes', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const holding = cold('-t|', flags)
      const expected = '    ft-'
      expectObservable(fakeSemaphore({ holding }).holding$).toBe(expected, flags)
    })
  })

  it('should say false, then error with a SemaphoreError, when the test stream errors', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const failure = new SemaphoreError('PermissionDenied', 'the token may not write the prefix')
      const holding = cold('-t--#', flags, failure)
      const expected = '    ft--(f#)'
      expectObservable(fakeSemaphore({ holding }).holding$).toBe(expected, flags, failure)
    })
  })

  it('should pass on a plain error of the test stream as a SemaphoreError', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const holding = cold('-#', flags, new Error('boom'))
      const expected = '    f(k|)'
      const kinds = fakeSemaphore({ holding }).holding$.pipe(
        catchError((error: unknown) => of(error instanceof SemaphoreError ? error.kind : 'other')),
      )
      expectObservable(kinds).toBe(expected, { f: false, k: 'Consul' })
    })
  })

  it('should close when disposed by await using', async () => {
    const sem = fakeSemaphore({ holding: EMPTY })
    {
      await using held = sem
      assert.equal(held.closeCount, 0)
    }
    assert.equal(sem.closeCount, 1)
  })
})

describe('fakeLeaderElection', () => {
  it('should show itself as leader while it leads, and nobody otherwise', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const holding = cold('f-t--f', flags)
      const expected = '    n-a--n'
      const election = fakeLeaderElection({ holding, value: 'node-a' })
      const leader = election.leader$.pipe(map((l) => (l === null ? 'none' : l.value)))
      expectObservable(leader).toBe(expected, { n: 'none', a: 'node-a' })
    })
  })

  it('should run the leader-only work of a switchMap pipeline only while it leads', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const holding = cold('--t----f', flags)
      const expected = '    -----0--'
      const election = fakeLeaderElection({ holding })
      const schedule$ = election.holding$.pipe(switchMap((lead) => (lead ? interval(3) : EMPTY)))
      expectObservable(schedule$).toBe(expected, { 0: 0 })
    })
  })

  it('should carry a fencing token only while leading, greater for every acquisition', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const holding = cold('-t-f-t', flags)
      const expected = '    ua-u-b'
      const tokens = fakeLeaderElection({ holding }).state$.pipe(map((s) => s.fencingToken))
      expectObservable(tokens).toBe(expected, { u: undefined, a: 1n, b: 2n })
    })
  })

  it('should complete holding$, state$ and leader$ on close(), after stepping down', () => {
    const election = testScheduler().run(({ cold, expectObservable }) => {
      const holding = cold('-t----', flags)
      const closeAt = cold('---c')
      const expected = '    ft-(f|)'
      const reasons = '     ua-(r|)'
      const leaders = '     ns-(n|)'
      const fake = fakeLeaderElection({ holding })
      closeAt.subscribe(() => void fake.close())
      expectObservable(fake.holding$).toBe(expected, flags)
      expectObservable(fake.state$.pipe(map((s) => s.reason))).toBe(reasons, {
        u: undefined,
        a: 'acquired',
        r: 'released',
      })
      expectObservable(fake.leader$.pipe(map((l) => l?.session ?? 'none'))).toBe(leaders, {
        n: 'none',
        s: 'fake-session',
      })
      return fake
    })
    assert.equal(election.closeCount, 1)
  })

  it('should close when disposed by await using, also when the scope throws', async () => {
    const election = fakeLeaderElection({ holding: EMPTY })
    await assert.rejects(async () => {
      await using _scoped = election
      throw new Error('the scope failed')
    }, /the scope failed/)
    assert.equal(election.closeCount, 1)
  })
})
