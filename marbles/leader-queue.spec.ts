// The leader lock's queue, decided on a stream of snapshots (src/core/leader-key/): what a waiter
// of this library decides (`decideLeaderKey`, queued) and what its process long-polls next
// (`leaderWatchTarget`), and which dead waiters' keys it removes (`deadWaitersToRemove`). Go's
// `consul lock` holds `.lock` without a waiter key: it keeps no place in the line.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { map, scan } from 'rxjs'
import { TestScheduler } from 'rxjs/testing'
import { LOCK_FLAGS, LOCK_WAITER_FLAGS } from '../src/base/flags.js'
import type { KVEntry, KVSnapshot } from '../src/base/kv-snapshot.js'
import { decidePatiently, type PatientDecision } from '../src/core/contender/decide-patiently.js'
import { revokeKey } from '../src/core/keys/revoke-key.js'
import { decideLeaderKey, leaderKeyDecider } from '../src/core/leader-key/decide-leader-key.js'
import { leaderWatchTarget } from '../src/core/leader-key/leader-watch-target.js'
import { deadWaitersToRemove } from '../src/core/leader-key/lock-queue.js'
import { snapshotOf } from './support/snapshot.js'

const prefix = 'svc/leader'

/** `.lock` held by `session` (undefined: free) at `index`. */
const lock = (session: string | undefined, index: bigint): KVEntry => ({
  key: `${prefix}/.lock`,
  value: null,
  flags: LOCK_FLAGS,
  session,
  lockIndex: 1n,
  createIndex: 1n,
  modifyIndex: index,
})
/** The waiter key of `session`, arrived at `index`; `dead`: its session ended (none on it). */
const waiter = (session: string, index: bigint, dead = false): KVEntry => ({
  key: `${prefix}/.queue/${session}`,
  value: null,
  flags: LOCK_WAITER_FLAGS,
  session: dead ? undefined : session,
  lockIndex: 1n,
  createIndex: index,
  modifyIndex: dead ? index + 100n : index,
})

/** A request that `session` step down (`evict` with a grace), written at `index`. */
const revoke = (session: string, index: bigint): KVEntry => ({
  key: revokeKey(prefix, session),
  value: null,
  flags: 0n,
  session: 'evictor',
  lockIndex: 1n,
  createIndex: index,
  modifyIndex: index,
})

/** What `me` does on a snapshot: its decision (with its rank), and what its process polls. */
function step(snapshot: KVSnapshot): string {
  const decision = decideLeaderKey(snapshot, { prefix, session: 'me', value: 'me', queued: true })
  const target = leaderWatchTarget(snapshot, prefix, [decision])
  const decided =
    decision.type === 'Wait' || decision.type === 'TryAcquire'
      ? `${decision.type}${decision.rank ?? ''}`
      : decision.type
  const watched = target.type === 'key' ? `key:${target.key.split('/').at(-1)}` : target.type
  return `${decided} ${watched}`
}

function marbles(spec: (helpers: Parameters<Parameters<TestScheduler['run']>[0]>[0]) => void) {
  const scheduler = new TestScheduler((actual, expected) =>
    assert.deepStrictEqual(actual, expected),
  )
  scheduler.run(spec)
}

describe('the leader lock’s queue (decideLeaderKey, leaderWatchTarget)', () => {
  it('should try the key when first in line and it is free, and watch .lock alone until then', () => {
    marbles(({ cold, expectObservable }) => {
      const snapshots = cold('a-b|', {
        a: snapshotOf([lock('h', 5n), waiter('me', 6n)]),
        b: snapshotOf([lock(undefined, 9n), waiter('me', 6n)]),
      })
      expectObservable(snapshots.pipe(map(step))).toBe('a-b|', {
        a: 'Wait0 lock',
        b: 'TryAcquire0 lock',
      })
    })
  })

  it('should wait on the key of the waiter ahead, not on .lock, when further back', () => {
    marbles(({ cold, expectObservable }) => {
      const snapshots = cold('a-b-c|', {
        a: snapshotOf([lock('h', 5n), waiter('a', 6n), waiter('b', 7n), waiter('me', 8n)]),
        // The key is freed: only a, first in line, tries it.
        b: snapshotOf([lock(undefined, 9n), waiter('a', 6n), waiter('b', 7n), waiter('me', 8n)]),
        // a took it (its key went in the same write): me moves up behind b.
        c: snapshotOf([lock('a', 10n), waiter('b', 7n), waiter('me', 8n)]),
      })
      expectObservable(snapshots.pipe(map(step))).toBe('a-b-c|', {
        a: 'Wait2 key:b',
        b: 'Wait2 key:b',
        c: 'Wait1 key:b',
      })
    })
  })

  it('should skip a dead waiter ahead (no session on its key) and name it for removal', () => {
    marbles(({ cold, expectObservable }) => {
      const snapshots = cold('a-b|', {
        a: snapshotOf([lock('h', 5n), waiter('a', 6n), waiter('me', 8n)]),
        b: snapshotOf([lock('h', 5n), waiter('a', 6n, true), waiter('me', 8n)]),
      })
      const removed = (snapshot: KVSnapshot) => {
        const decision = decideLeaderKey(snapshot, {
          prefix,
          session: 'me',
          value: '',
          queued: true,
        })
        const keys = deadWaitersToRemove(snapshot, prefix, [decision]).map((e) => e.key)
        return `${step(snapshot)} [${keys.map((k) => k.split('/').at(-1)).join(',')}]`
      }
      expectObservable(snapshots.pipe(map(removed))).toBe('a-b|', {
        a: 'Wait1 key:a []',
        b: 'Wait0 lock [a]',
      })
    })
  })

  it('should wait while a Go contender holds the key, and keep its place when Go wins the race', () => {
    marbles(({ cold, expectObservable }) => {
      const snapshots = cold('a-b-c|', {
        // g (consul lock) holds: it has no waiter key, and is no one's key ahead.
        a: snapshotOf([lock('g', 5n), waiter('me', 6n), waiter('z', 7n)]),
        b: snapshotOf([lock(undefined, 9n), waiter('me', 6n), waiter('z', 7n)]),
        // g2, another consul lock, won the race: me is still first in line.
        c: snapshotOf([lock('g2', 10n), waiter('me', 6n), waiter('z', 7n)]),
      })
      expectObservable(snapshots.pipe(map(step))).toBe('a-b-c|', {
        a: 'Wait0 lock',
        b: 'TryAcquire0 lock',
        c: 'Wait0 lock',
      })
    })
  })

  it('should take a place in line when others wait or the key is held, and lead on its own key', () => {
    marbles(({ cold, expectObservable }) => {
      const snapshots = cold('a-b-c|', {
        // Nobody in line and the key free: it tries before it queues.
        a: snapshotOf([lock(undefined, 5n)]),
        b: snapshotOf([lock('h', 6n)]),
        c: snapshotOf([lock('me', 7n)]),
      })
      expectObservable(snapshots.pipe(map(step))).toBe('a-b-c|', {
        a: 'TryAcquire0 lock',
        b: 'NotContending prefix',
        c: 'Held lock',
      })
    })
  })

  it('should watch .lock alone while it leads, a request to step down included, unless a contender of its process waits further back', () => {
    /** What a process with contenders `sessions` long-polls on `snapshot`. */
    const watched = ({ snapshot, sessions }: { snapshot: KVSnapshot; sessions: string[] }) => {
      const decisions = sessions.map((session) =>
        decideLeaderKey(snapshot, { prefix, session, value: session, queued: true }),
      )
      const target = leaderWatchTarget(snapshot, prefix, decisions)
      return target.type === 'key' ? `key:${target.key.split('/').at(-1)}` : target.type
    }
    marbles(({ cold, expectObservable }) => {
      const frames = cold('a-b-c|', {
        a: { snapshot: snapshotOf([lock('me', 5n), waiter('a', 6n)]), sessions: ['me'] },
        b: {
          snapshot: snapshotOf([lock('me', 5n), revoke('me', 7n), waiter('a', 6n)]),
          sessions: ['me'],
        },
        // b, second in line, runs in the leader's process: it waits on the key ahead, which
        // only the prefix covers with .lock.
        c: {
          snapshot: snapshotOf([lock('me', 5n), waiter('a', 6n), waiter('b', 8n)]),
          sessions: ['me', 'b'],
        },
      })
      expectObservable(frames.pipe(map(watched))).toBe('a-b-c|', {
        a: 'lock',
        b: 'lock',
        c: 'prefix',
      })
    })
  })

  describe('the fairness grace (decidePatiently with the queued leader decider)', () => {
    // As leaderElection sets it up: the queued decider, fairness on, the default grace (2 s for
    // the first place behind the front, a quarter more per place further back).
    const options = { prefix, limit: 1, fairness: true, decide: leaderKeyDecider('me', true) }
    const notCounting: Pick<PatientDecision, 'graceFront' | 'graceSince'> & {
      decision?: PatientDecision['decision']
    } = { graceFront: undefined, graceSince: undefined }

    /** Decides `me` on each snapshot at its virtual time, carrying the grace counted so far. */
    function patiently(scheduler: TestScheduler) {
      return scan(
        (counting: typeof notCounting, snapshot: KVSnapshot) =>
          decidePatiently(snapshot, 'me', scheduler.now(), counting, options),
        notCounting,
      )
    }
    const named = (p: typeof notCounting) =>
      `${p.decision?.type ?? ''}${p.decision !== undefined && 'rank' in p.decision ? (p.decision.rank ?? '') : ''}`

    it('should try a free key out of turn once it stood free for the grace, the first in line never trying it', () => {
      const scheduler = new TestScheduler((actual, expected) =>
        assert.deepStrictEqual(actual, expected),
      )
      scheduler.run(({ cold, expectObservable }) => {
        // a is first in line and dead: its session not yet expired, its key kept, it never tries.
        const free = snapshotOf([lock(undefined, 9n), waiter('a', 6n), waiter('me', 8n)])
        const snapshots = cold('f 1998ms f f|', { f: free })
        expectObservable(snapshots.pipe(patiently(scheduler), map(named))).toBe('w 1998ms w t|', {
          w: 'Wait1',
          t: 'TryAcquire1',
        })
      })
    })

    it('should start the grace over when the first in line takes the key', () => {
      const scheduler = new TestScheduler((actual, expected) =>
        assert.deepStrictEqual(actual, expected),
      )
      scheduler.run(({ cold, expectObservable }) => {
        const free = snapshotOf([lock(undefined, 9n), waiter('a', 6n), waiter('me', 8n)])
        const aLeads = snapshotOf([lock('a', 10n), waiter('me', 8n)])
        const freeAgain = snapshotOf([lock(undefined, 11n), waiter('b', 7n), waiter('me', 8n)])
        // a leads at 1.5 s; the key is free again at 1.9 s, b first in line: me counts from there.
        const snapshots = cold('f 1499ms a 399ms g 1599ms g|', {
          f: free,
          a: aLeads,
          g: freeAgain,
        })
        expectObservable(snapshots.pipe(patiently(scheduler), map(named))).toBe(
          'w 1499ms z 399ms w 1599ms w|',
          { w: 'Wait1', z: 'Wait0' },
        )
      })
    })
  })
})
