import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { Observable } from 'rxjs'
import { TestScheduler } from 'rxjs/testing'
import type { ConsulClient } from '../src/consul/client-api.js'
import type { WatchEvent } from '../src/base/kv-snapshot.js'
import { commonWatch, commonWatchCount } from '../src/effects/common-watch.js'
import { snapshotOf } from './support/snapshot.js'

const testScheduler = (): TestScheduler =>
  new TestScheduler((actual, expected) => assert.deepStrictEqual(actual, expected))

const events: Record<string, WatchEvent> = {
  a: { type: 'snapshot', snapshot: snapshotOf([], 1n) },
  b: { type: 'snapshot', snapshot: snapshotOf([], 2n) },
  c: { type: 'snapshot', snapshot: snapshotOf([], 3n) },
  d: {
    type: 'disconnected',
    error: { _tag: 'Unreachable', message: 'connection refused' },
    attempt: 1,
    retryInMs: 1000,
  },
}

/** A client whose only capability is `watchPrefix`, answering `watch(prefix)`; it counts calls. */
function watchingClient(watch: (prefix: string) => Observable<WatchEvent>): {
  client: ConsulClient
  calls: string[]
} {
  const calls: string[] = []
  const client = {
    watchPrefix: (prefix: string) => {
      calls.push(prefix)
      return watch(prefix)
    },
  } as unknown as ConsulClient
  return { client, calls }
}

describe('commonWatch', () => {
  it('should hold no entry for a watch that nobody subscribed to', () => {
    const { client, calls } = watchingClient(() => {
      throw new Error('not called')
    })
    commonWatch(client, 'jobs/')
    assert.equal(commonWatchCount(), 0)
    assert.deepEqual(calls, [])
  })

  it('should run one watch for two subscribers of a prefix, from the first subscribe to the last unsubscribe', () => {
    let calls: string[] = []
    testScheduler().run(({ cold, expectObservable, expectSubscriptions }) => {
      const source = cold('-a--b--c--', events)
      const first = '      ^------!   '
      const second = '     --^-------!'
      const firstSees = '  -a--b--    '
      const secondSees = ' --a-b--c-- '
      const sourceSubs = ' ^---------!'
      const watching = watchingClient(() => source)
      calls = watching.calls
      expectObservable(commonWatch(watching.client, 'jobs/'), first).toBe(firstSees, events)
      expectObservable(commonWatch(watching.client, 'jobs/'), second).toBe(secondSees, events)
      expectSubscriptions(source.subscriptions).toBe(sourceSubs)
    })
    assert.deepEqual(calls, ['jobs/'])
  })

  it('should replay the last snapshot and the disconnected after it to a late subscriber', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const source = cold('-a--d-----', events)
      const first = '      ^---------!'
      const late = '       ------^---!'
      const firstSees = '  -a--d-----'
      const lateSees = '   ------(ad)'
      const { client } = watchingClient(() => source)
      expectObservable(commonWatch(client, 'jobs/'), first).toBe(firstSees, events)
      expectObservable(commonWatch(client, 'jobs/'), late).toBe(lateSees, events)
    })
  })

  it('should count an entry while subscribed and evict it when the last subscriber leaves', () => {
    const scheduler = testScheduler()
    const counts: [number, number][] = []
    scheduler.run(({ cold, expectObservable }) => {
      const { client } = watchingClient(() => cold('-a--b--c--', events))
      const count = (frame: number) =>
        scheduler.schedule(() => void counts.push([frame, commonWatchCount()]), frame)
      expectObservable(commonWatch(client, 'jobs/'), '^----!').toBe('-a--b-', events)
      expectObservable(commonWatch(client, 'jobs/'), '--^-----!').toBe('--a-b--c', events)
      for (const frame of [0, 3, 6, 9]) count(frame)
    })
    assert.deepEqual(counts, [
      [0, 1],
      [3, 1],
      [6, 1],
      [9, 0],
    ])
    assert.equal(commonWatchCount(), 0)
  })

  it('should start a new watch, with no replay of the old one, for a subscriber after eviction', () => {
    let calls: string[] = []
    testScheduler().run(({ cold, expectObservable }) => {
      const watching = watchingClient(() => cold('-a--b--', events))
      calls = watching.calls
      expectObservable(commonWatch(watching.client, 'jobs/'), '^---!    ').toBe('-a--', events)
      expectObservable(commonWatch(watching.client, 'jobs/'), '------^--!').toBe('-------a', events)
    })
    assert.deepEqual(calls, ['jobs/', 'jobs/'])
    assert.equal(commonWatchCount(), 0)
  })

  it('should evict the entry when the watch errors, and pass the error on', () => {
    const forbidden = new Error('403')
    testScheduler().run(({ cold, expectObservable }) => {
      const { client } = watchingClient(() => cold('-a--#', events, forbidden))
      expectObservable(commonWatch(client, 'jobs/')).toBe('-a--#', events, forbidden)
      expectObservable(commonWatch(client, 'jobs/')).toBe('-a--#', events, forbidden)
    })
    assert.equal(commonWatchCount(), 0)
  })

  it('should evict the entry when the watch completes', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const { client } = watchingClient(() => cold('-a|', events))
      expectObservable(commonWatch(client, 'jobs/')).toBe('-a|', events)
    })
    assert.equal(commonWatchCount(), 0)
  })

  it('should evict the entry when the watch throws on subscribe', () => {
    const { client } = watchingClient(() => {
      throw new Error('bug')
    })
    let seen: unknown
    commonWatch(client, 'jobs/').subscribe({ error: (error: unknown) => (seen = error) })
    assert.equal((seen as Error).message, 'bug')
    assert.equal(commonWatchCount(), 0)
  })

  it('should keep the watches of two prefixes, and of two clients, apart', () => {
    const scheduler = testScheduler()
    let held = -1
    scheduler.run(({ cold, expectObservable }) => {
      const one = watchingClient((prefix) => cold(prefix === 'a/' ? '-a-' : '-b-', events))
      const two = watchingClient(() => cold('--c', events))
      expectObservable(commonWatch(one.client, 'a/'), '^--!').toBe('-a-', events)
      expectObservable(commonWatch(one.client, 'b/'), '^--!').toBe('-b-', events)
      expectObservable(commonWatch(two.client, 'a/'), '^--!').toBe('--c', events)
      scheduler.schedule(() => void (held = commonWatchCount()), 1)
    })
    assert.equal(held, 3)
    assert.equal(commonWatchCount(), 0)
  })
})
