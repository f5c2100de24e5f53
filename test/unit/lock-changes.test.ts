// The watch of `.lock` alone (`lockChanges`), for the first in line of a leader lock's queue and
// its leader: each answer that is news becomes the last listing with the keys under `.lock`
// patched in, and an answer no newer than that listing is passed over. The stale answer is what a
// poll sent before an acquisition can bring after it: Consul answered the poll from its state
// before the write, and the answer arrived after the write's own.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { EMPTY, map, of, take, type Observable } from 'rxjs'
import { TestScheduler } from 'rxjs/testing'
import { LOCK_FLAGS } from '../../src/base/flags.js'
import type { KVEntry, KVSnapshot, WatchEvent } from '../../src/base/kv-snapshot.js'
import { lockChanges } from '../../src/effects/coordinator/prefix-coordinator.js'

const prefix = 'svc/leader'
const key = `${prefix}/.lock`
const lock = (session: string | undefined, index: bigint): KVEntry => ({
  key,
  value: null,
  flags: LOCK_FLAGS,
  session,
  lockIndex: 1n,
  createIndex: index,
  modifyIndex: index,
})
const answer = (index: bigint, entries: KVEntry[]): WatchEvent => ({
  type: 'snapshot',
  snapshot: { index, entries },
})

/** What the members get from `lockChanges`, given the poll's answers and their last listing. */
function changes(answers: Observable<WatchEvent>, last: () => KVSnapshot | undefined) {
  return lockChanges(
    { watchPrefix: () => answers },
    { type: 'lock', key },
    {},
    { lastListing: last, acquisitionsAnswered: () => of(undefined) },
    () => EMPTY,
  ).pipe(
    map((event) =>
      event.type === 'snapshot'
        ? `${event.snapshot.index}:${event.snapshot.entries.find((e) => e.key === key)?.session ?? 'free'}`
        : event.type,
    ),
    // After a free key the watch polls again from the start: the first change is enough here.
    take(1),
  )
}

describe('lockChanges', () => {
  it('passes over an answer from before the listing the members have, and patches a newer one in', () => {
    new TestScheduler((actual, expected) => assert.deepStrictEqual(actual, expected)).run(
      ({ cold, expectObservable }) => {
        // The members hold as of their acquisition's write at 94 (the transaction's own read).
        const acquired: KVSnapshot = { index: 94n, entries: [lock('me', 94n)] }
        const answers = cold('a-b-c', {
          // Sent before the acquisition, answered from index 92, when there was no `.lock` yet.
          a: answer(92n, []),
          b: answer(94n, [lock('me', 94n)]),
          // The key taken away (a session destroyed by an operator) at 97.
          c: answer(97n, [lock(undefined, 97n)]),
        })
        expectObservable(changes(answers, () => acquired)).toBe('----(c|)', { c: '97:free' })
      },
    )
  })
})
