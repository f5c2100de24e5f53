import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { CONTENDER_FLAGS, HOLDER_FLAGS } from '../../src/base/flags.js'
import type { KVSnapshot } from '../../src/base/kv-snapshot.js'
import { decide } from '../../src/core/semaphore/decide.js'
import { sameWatchTarget, watchTarget } from '../../src/core/semaphore/watch-target.js'
import { contenderEntry, lockEntry, snapshotOf } from '../../marbles/support/snapshot.js'

const prefix = 'svc/lock'
const ours = (session: string, createIndex: bigint, modifyIndex = createIndex) =>
  contenderEntry(prefix, session, createIndex, { flags: CONTENDER_FLAGS, modifyIndex })
const go = (session: string, createIndex: bigint) => contenderEntry(prefix, session, createIndex)
const held = lockEntry(prefix, '{"Limit":1,"Holders":{"h":true}}', 50n)
const holder = contenderEntry(prefix, 'h', 1n, { flags: HOLDER_FLAGS, modifyIndex: 50n })
const local = (session: string) => ({ session, limit: 1 })
/** The decisions of this process's contenders on a snapshot, as the coordinator has them. */
const decisions = (snapshot: KVSnapshot, locals: readonly { session: string; limit: number }[]) =>
  locals.map((l) => decide(snapshot, { prefix, ...l }))

describe('watchTarget', () => {
  const queue = snapshotOf([
    held,
    holder,
    ours('w0', 10n),
    ours('w1', 11n),
    ours('w2', 12n, 30n),
    ours('w3', 13n),
  ])

  it('parks a process whose contenders all wait behind the first two places on the key ahead', () => {
    assert.deepEqual(watchTarget(queue, prefix, decisions(queue, [local('w3')])), {
      type: 'key',
      key: `${prefix}/w2`,
      modifyIndex: 30n,
    })
  })

  it('takes the best-placed contender of the process', () => {
    const target = watchTarget(queue, prefix, decisions(queue, [local('w3'), local('w2')]))
    assert.deepEqual(target, { type: 'key', key: `${prefix}/w1`, modifyIndex: 11n })
  })

  it('watches the prefix for the front of the queue, a holder, a contender without its key, or no contender', () => {
    for (const who of [['w0'], ['w1'], ['h'], ['w3', 'w1'], ['nobody']]) {
      assert.deepEqual(
        watchTarget(queue, prefix, decisions(queue, who.map(local))),
        { type: 'prefix' },
        who.join(),
      )
    }
    assert.deepEqual(watchTarget(queue, prefix, decisions(queue, [])), { type: 'prefix' })
  })

  it('watches the prefix when the waiter ahead is a Go contender, whose key does not change when it acquires', () => {
    const mixed = snapshotOf([
      held,
      holder,
      ours('w0', 10n),
      ours('w1', 11n),
      go('g2', 12n),
      ours('w3', 13n),
    ])
    assert.deepEqual(watchTarget(mixed, prefix, decisions(mixed, [local('w3')])), {
      type: 'prefix',
    })
  })

  it('watches the prefix while a slot is free, however far back: the waiters ahead may be dead', () => {
    const free = snapshotOf([
      lockEntry(prefix, '{"Limit":1,"Holders":{}}', 50n),
      ...queue.entries.filter((e) => e.key !== `${prefix}/.lock` && e.key !== `${prefix}/h`),
    ])
    assert.deepEqual(watchTarget(free, prefix, decisions(free, [local('w3')])), { type: 'prefix' })
  })

  it('watches the prefix on a prefix problem', () => {
    const conflict = snapshotOf([
      lockEntry(prefix, '{}', 50n, { flags: 7n }),
      ours('w0', 10n),
      ours('w1', 11n),
      ours('w2', 12n),
      ours('w3', 13n),
    ])
    assert.deepEqual(watchTarget(conflict, prefix, decisions(conflict, [local('w3')])), {
      type: 'prefix',
    })
  })

  it('tells targets apart by key and index', () => {
    const a = { type: 'key', key: 'k', modifyIndex: 1n } as const
    assert.ok(sameWatchTarget(a, { ...a }))
    assert.ok(!sameWatchTarget(a, { ...a, modifyIndex: 2n }))
    assert.ok(!sameWatchTarget(a, { type: 'prefix' }))
    assert.ok(sameWatchTarget({ type: 'prefix' }, { type: 'prefix' }))
  })
})
