import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { asyncScheduler, distinctUntilChanged, filter, map } from 'rxjs'
import { TestScheduler } from 'rxjs/testing'
import type { KVEntry } from '../src/base/kv-snapshot.js'
import { leaderKeyDecider } from '../src/core/leader-key/decide-leader-key.js'
import { revokeKey } from '../src/core/keys/revoke-key.js'
import { encodeRevokeRequest } from '../src/core/revoke/revoke-request.js'
import { toSemaphoreState } from '../src/recipes/semaphore.js'
import { LOCK_FLAGS } from '../src/base/flags.js'
import { contending, type Released } from './support/port.js'
import { casOk, created, releaseRequested, seen } from './support/events.js'
import { prefix } from './support/scenario.js'
import { contenderEntry, lockEntry, snapshotOf } from './support/snapshot.js'

const testScheduler = (): TestScheduler =>
  new TestScheduler((actual, expected) => assert.deepStrictEqual(actual, expected))

/** A revoke request for `session`, written under the session `by` (an `evict` in progress). */
const request = (session: string, index: bigint, reason?: string): KVEntry => ({
  key: revokeKey(prefix, session),
  value: encodeRevokeRequest({ graceMs: 30_000, reason }),
  flags: 0n,
  session: 'evictor',
  lockIndex: 1n,
  createIndex: index,
  modifyIndex: index,
})

/** Limit 2: `holders` hold, with these extra entries. */
const held = (index: bigint, holders: readonly string[], extra: readonly KVEntry[] = []) =>
  snapshotOf([
    lockEntry(
      prefix,
      JSON.stringify({ Limit: 2, Holders: Object.fromEntries(holders.map((h) => [h, true])) }),
      index,
    ),
    ...holders.map((h, i) => contenderEntry(prefix, h, BigInt(i + 2))),
    ...extra,
  ])

/** What the public state says of a revoke request: its reason, 'asked' without one, or '-'. */
const asked = map((state: Parameters<typeof toSemaphoreState>[0]) => {
  const request = toSemaphoreState(state, 2).revokeRequested
  return request === undefined ? '-' : (request.reason ?? 'asked')
})

describe('a holder sees a request to give its slot back', () => {
  it('should say revokeRequested while its own request is there, and ignore another holder’s', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const events = {
        c: created('me', 10_000, 0),
        h: seen(held(10n, ['me', 'other'])),
        o: seen(held(11n, ['me', 'other'], [request('other', 11n, 'not me')])),
        r: seen(held(12n, ['me', 'other'], [request('me', 12n, 'deploy')])),
        w: seen(held(13n, ['me', 'other'])),
      }
      const states = cold('c h o r w', events).pipe(
        contending({ prefix, limit: 2 }),
        asked,
        distinctUntilChanged(),
      )
      expectObservable(states, '^ 100ms !').toBe('n 2ms r w', { n: '-', r: 'deploy', w: '-' })
    })
  })

  it('should not say it once the slot is not held, nor for a waiter', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const events = {
        c: created('me', 10_000, 0),
        // Waiting behind two holders, a request for it changes nothing: it holds nothing.
        q: seen(
          snapshotOf([
            lockEntry(prefix, JSON.stringify({ Limit: 2, Holders: { a: true, b: true } }), 10n),
            contenderEntry(prefix, 'a', 2n),
            contenderEntry(prefix, 'b', 3n),
            contenderEntry(prefix, 'me', 4n),
            request('me', 10n),
          ]),
        ),
        // Held, with the request still there: asked.
        h: seen(held(11n, ['me', 'a'], [request('me', 10n)])),
        // Taken out (forced): no longer held, no longer asked.
        x: seen(held(12n, ['a'], [contenderEntry(prefix, 'me', 4n), request('me', 10n)])),
      }
      const states = cold('c q h x', events).pipe(
        contending({ prefix, limit: 2 }),
        asked,
        distinctUntilChanged(),
      )
      expectObservable(states, '^ 100ms !').toBe('n 1ms a x', { n: '-', a: 'asked', x: '-' })
    })
  })

  it('should say it to a leader of the single-key lock too', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const lock = (index: bigint, session?: string) =>
        lockEntry(prefix, null, index, { flags: LOCK_FLAGS, session })
      const events = {
        c: created('me', 10_000, 0),
        f: seen(snapshotOf([lock(5n)])),
        k: casOk(['me'], 6n),
        l: seen(snapshotOf([lock(6n, 'me')])),
        r: seen(snapshotOf([lock(6n, 'me'), request('me', 7n, 'step down')])),
      }
      const states = cold('c f k l r', events).pipe(
        contending({ prefix, limit: 1, fairness: false, decide: leaderKeyDecider('v') }),
        asked,
        distinctUntilChanged(),
      )
      expectObservable(states, '^ 100ms !').toBe('n 3ms r', { n: '-', r: 'step down' })
    })
  })
})

describe('a pool worker asked to give its slot back', () => {
  it('should destroy its session when it closes, where it keeps one nobody asked about', () => {
    testScheduler().run(({ cold, expectObservable }) => {
      const keeps = (asked: boolean): Released[] => {
        const released: Released[] = []
        const snapshot = held(10n, ['me', 'other'], asked ? [request('me', 10n)] : [])
        const states = cold('c h r', {
          c: created('me', 10_000, 0),
          h: seen(snapshot),
          r: releaseRequested,
        }).pipe(contending({ prefix, limit: 2, shelf: true, released }))
        // The run ends at the close (frame 2): the release starts, and the states complete.
        expectObservable(states.pipe(filter(() => false)), '^ 50ms !').toBe('--|')
        return released
      }
      const plain = keeps(false)
      const asked = keeps(true)
      asyncScheduler.schedule(() => {
        assert.deepEqual(
          plain.map((r) => r.release.keep),
          [true],
          'kept on the shelf',
        )
        assert.deepEqual(
          asked.map((r) => r.release.keep),
          [false],
          'destroyed',
        )
      }, 10)
    })
  })
})
