import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { CONTENDER_FLAGS, HOLDER_FLAGS } from '../../src/base/flags.js'
import type { KVSnapshot } from '../../src/base/kv-snapshot.js'
import { decide } from '../../src/core/semaphore/decide.js'
import { encodeRevokeRequest } from '../../src/core/revoke/revoke-request.js'
import {
  WHOLE_PREFIX,
  handedTo,
  sameWatchTarget,
  watchTarget,
} from '../../src/core/semaphore/watch-target.js'
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

  describe('a process whose only contender may watch its own key alone', () => {
    const own = (session: string, modifyIndex: bigint, lockIndex?: bigint, othersHold = false) => ({
      type: 'own',
      key: `${prefix}/${session}`,
      session,
      modifyIndex,
      ...(lockIndex === undefined ? {} : { held: { lockIndex, othersHold } }),
    })
    const alone = (snapshot: KVSnapshot, session: string) =>
      watchTarget(snapshot, prefix, decisions(snapshot, [local(session)]), session)

    it('long-polls its own key as a holder of this library (and `.lock`), and as a waiter of ours behind holders and waiters of ours, wherever in line', () => {
      assert.deepEqual(alone(queue, 'h'), own('h', 50n, 50n))
      assert.deepEqual(alone(queue, 'w0'), own('w0', 10n))
      assert.deepEqual(alone(queue, 'w3'), own('w3', 13n))
    })

    it('watches the prefix as a holder with nobody waiting: the first to join is its heir, which its key and `.lock` would not show', () => {
      const nobodyWaits = snapshotOf([held, holder])
      assert.deepEqual(alone(nobodyWaits, 'h'), { type: 'prefix' })
      assert.deepEqual(alone(snapshotOf([held, holder, ours('w0', 10n)]), 'h'), own('h', 50n, 50n))
    })

    it('tells a holder whether others hold beside it: their hand-overs rewrite `.lock`', () => {
      const two = lockEntry(prefix, '{"Limit":2,"Holders":{"h":true,"k":true}}', 60n)
      const other = contenderEntry(prefix, 'k', 2n, { flags: HOLDER_FLAGS, modifyIndex: 60n })
      const shared = snapshotOf([two, holder, other, ours('w0', 10n)])
      const target = watchTarget(
        shared,
        prefix,
        [decide(shared, { prefix, session: 'h', limit: 2 })],
        'h',
      )
      assert.deepEqual(target, own('h', 50n, 60n, true))
      assert.deepEqual(alone(queue, 'h'), own('h', 50n, 50n, false), 'the sole holder of limit 1')
    })

    it('watches as any process does when a Go contender is ahead of it or holds, a slot is free, or it was asked to give its slot back', () => {
      const mixed = snapshotOf([held, holder, ours('w0', 10n), go('g1', 11n), ours('w2', 12n)])
      assert.deepEqual(alone(mixed, 'w2'), { type: 'prefix' }, 'a Go waiter ahead')
      assert.deepEqual(alone(mixed, 'w0'), own('w0', 10n), 'the Go waiter is behind')
      const goHolds = snapshotOf([held, go('h', 1n), ours('w0', 10n)])
      assert.deepEqual(alone(goHolds, 'w0'), { type: 'prefix' }, 'a Go holder releases plainly')
      const free = snapshotOf([
        lockEntry(prefix, '{"Limit":2,"Holders":{"h":true}}', 50n),
        holder,
        ours('w0', 10n),
      ])
      assert.deepEqual(alone(free, 'w0'), { type: 'prefix' }, 'a free slot')
      const asked = snapshotOf([
        ...queue.entries,
        contenderEntry(`${prefix}/.lock.revoke`, 'h', 60n, {
          value: encodeRevokeRequest({ graceMs: 30_000, reason: 'deploy' }),
          session: 'requester',
        }),
      ])
      assert.deepEqual(alone(asked, 'h'), { type: 'prefix' }, 'a revoke request')
    })

    it('parks a lone waiter behind a Go contender on the key ahead, as any process, with its decisions given once (a generator)', () => {
      const behindGo = snapshotOf([
        held,
        holder,
        ours('w0', 10n),
        go('g1', 11n),
        ours('w2', 12n, 30n),
        ours('w3', 13n),
      ])
      function* once(): Generator<ReturnType<typeof decide>> {
        yield* decisions(behindGo, [local('w3')])
      }
      assert.deepEqual(watchTarget(behindGo, prefix, once(), 'w3'), {
        type: 'key',
        key: `${prefix}/w2`,
        modifyIndex: 30n,
      })
    })

    it('is told by the coordinator only for a process of one contender: with none given, the rules for any process hold', () => {
      assert.deepEqual(watchTarget(queue, prefix, decisions(queue, [local('h')])), {
        type: 'prefix',
      })
      assert.deepEqual(watchTarget(queue, prefix, decisions(queue, [local('w3')])), {
        type: 'key',
        key: `${prefix}/w2`,
        modifyIndex: 30n,
      })
    })
  })

  it('tells targets apart by key and index', () => {
    const a = { type: 'key', key: 'k', modifyIndex: 1n } as const
    assert.ok(sameWatchTarget(a, { ...a }))
    assert.ok(!sameWatchTarget(a, { ...a, modifyIndex: 2n }))
    assert.ok(!sameWatchTarget(a, { type: 'prefix' }))
    assert.ok(sameWatchTarget({ type: 'prefix' }, { type: 'prefix' }))
    const own = { type: 'own', key: 'k', session: 's', modifyIndex: 1n } as const
    assert.ok(!sameWatchTarget(a, own), 'the key ahead is not the own key, though the same')
    const held = { ...own, held: { lockIndex: 5n, othersHold: false } }
    assert.ok(sameWatchTarget(held, { ...held, held: { lockIndex: 5n, othersHold: false } }))
    assert.ok(!sameWatchTarget(held, { ...held, held: { lockIndex: 6n, othersHold: false } }))
    assert.ok(!sameWatchTarget(held, { ...held, held: { lockIndex: 5n, othersHold: true } }))
  })

  describe('handedTo: a slot handed to a waiter asleep on its own key', () => {
    const key = `${prefix}/me`
    const asleep = { type: 'own', key, session: 'me', modifyIndex: 7n } as const
    const entry = (flags: bigint, modifyIndex: bigint, session: string | null = 'me') => ({
      key,
      value: null,
      flags,
      createIndex: 7n,
      modifyIndex,
      lockIndex: 1n,
      ...(session === null ? {} : { session }),
    })

    it('reads a hand-off in its key marked HOLDER_FLAGS at a new index, still locked by it', () => {
      assert.deepEqual(handedTo(asleep, entry(HOLDER_FLAGS, 40n)), {
        type: 'handed',
        session: 'me',
        index: 40n,
      })
    })

    it('reads nothing in any other change of its key', () => {
      assert.equal(handedTo(asleep, undefined), undefined, 'the key gone')
      assert.equal(
        handedTo(asleep, entry(CONTENDER_FLAGS, 40n)),
        undefined,
        'rewritten, not marked',
      )
      assert.equal(handedTo(asleep, entry(HOLDER_FLAGS, 40n, null)), undefined, 'unlocked')
      assert.equal(handedTo(asleep, entry(HOLDER_FLAGS, 40n, 'other')), undefined, 'another lock')
      assert.equal(handedTo(asleep, entry(HOLDER_FLAGS, 7n)), undefined, 'no new index')
      assert.equal(handedTo(asleep, { ...entry(HOLDER_FLAGS, 40n), key: `${key}x` }), undefined)
    })

    it('reads nothing for a holder, or a process parked on the key ahead', () => {
      const held = { ...asleep, held: { lockIndex: 5n, othersHold: false } }
      assert.equal(handedTo(held, entry(HOLDER_FLAGS, 40n)), undefined)
      assert.equal(
        handedTo({ type: 'key', key, modifyIndex: 7n }, entry(HOLDER_FLAGS, 40n)),
        undefined,
      )
      assert.equal(handedTo(WHOLE_PREFIX, entry(HOLDER_FLAGS, 40n)), undefined)
    })
  })
})
