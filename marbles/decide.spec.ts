import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { LOCK_FLAGS } from '../src/consul/flags.js'
import { decide } from '../src/core/decide.js'
import type { Decision } from '../src/core/events.js'
import { contenderEntry, lockEntry, snapshotOf, text } from './support/snapshot.js'

const prefix = 'svc/lock'
const options = { prefix, session: 'me', limit: 2 }
const me = contenderEntry(prefix, 'me', 50n)

function expectType<T extends Decision['type']>(
  decision: Decision,
  type: T,
): Extract<Decision, { type: T }> {
  assert.equal(
    decision.type,
    type,
    JSON.stringify(decision, (_k, v: unknown) => String(v)),
  )
  return decision as Extract<Decision, { type: T }>
}

describe('decide', () => {
  describe('writing .lock', () => {
    it('should create a missing .lock with cas 0 in the Go shape', () => {
      const d = expectType(decide(snapshotOf([me]), options), 'TryAcquire')
      assert.equal(d.cas, 0n)
      assert.equal(text(d.body), '{"Limit":2,"Holders":{"me":true}}')
    })

    it('should treat an empty .lock value as no holders and CAS on its ModifyIndex', () => {
      const d = expectType(
        decide(snapshotOf([lockEntry(prefix, null, 7n), me]), options),
        'TryAcquire',
      )
      assert.equal(d.cas, 7n)
      assert.equal(text(d.body), '{"Limit":2,"Holders":{"me":true}}')
    })

    it('should write a go-map .lock back as a go-map with keys sorted by bytes', () => {
      const lock = lockEntry(prefix, '{"Holders":{"zz":true},"Limit":3}', 40n)
      const zz = contenderEntry(prefix, 'zz', 10n)
      const d = expectType(
        decide(snapshotOf([lock, zz, me]), { ...options, limit: 3 }),
        'TryAcquire',
      )
      assert.equal(text(d.body), '{"Limit":3,"Holders":{"me":true,"zz":true}}')
      assert.equal(d.cas, 40n)
      assert.equal(d.view.shape, 'go-map')
    })

    it('should write a guide-list .lock back as a guide-list, appending to the listed order', () => {
      const lock = lockEntry(prefix, '{"Limit":3,"Holders":["zz","aa"]}', 40n)
      const peers = [contenderEntry(prefix, 'zz', 10n), contenderEntry(prefix, 'aa', 11n)]
      const d = expectType(
        decide(snapshotOf([lock, ...peers, me]), { ...options, limit: 3 }),
        'TryAcquire',
      )
      assert.equal(text(d.body), '{"Limit":3,"Holders":["zz","aa","me"]}')
      assert.equal(d.view.shape, 'guide-list')
    })

    it('should write a java-list .lock back as a java-list, appending to the listed order', () => {
      const lock = lockEntry(prefix, '{"limit":3,"holders":["zz"]}', 40n, { flags: 0n })
      const d = expectType(
        decide(snapshotOf([lock, contenderEntry(prefix, 'zz', 10n), me]), { ...options, limit: 3 }),
        'TryAcquire',
      )
      assert.equal(text(d.body), '{"limit":3,"holders":["zz","me"]}')
      assert.equal(d.view.shape, 'java-list')
    })

    it('should accept extra fields and any key order', () => {
      const body = '{"Owner":"ops","Holders":["a"],"Version":2,"Limit":2}'
      const lock = lockEntry(prefix, body, 40n)
      const d = expectType(
        decide(snapshotOf([lock, contenderEntry(prefix, 'a', 10n), me]), options),
        'TryAcquire',
      )
      assert.equal(text(d.body), '{"Limit":2,"Holders":["a","me"]}')
    })

    it('should treat Holders null as no holders', () => {
      const lock = lockEntry(prefix, '{"Limit":2,"Holders":null}', 40n)
      const d = expectType(decide(snapshotOf([lock, me]), options), 'TryAcquire')
      assert.equal(text(d.body), '{"Limit":2,"Holders":{"me":true}}')
    })
  })

  describe('flags and limit', () => {
    it('should accept a .lock with flags 0', () => {
      const lock = lockEntry(prefix, '{"Limit":2,"Holders":{}}', 40n, { flags: 0n })
      expectType(decide(snapshotOf([lock, me]), options), 'TryAcquire')
    })

    it('should report a Conflict naming the key and flags of a .lock written by consul lock', () => {
      const lock = lockEntry(prefix, 'anything', 40n, { flags: LOCK_FLAGS })
      assert.deepEqual(decide(snapshotOf([lock, me]), options), {
        type: 'Conflict',
        key: 'svc/lock/.lock',
        flags: LOCK_FLAGS,
      })
    })

    it('should not judge the flags of contender keys', () => {
      const other = contenderEntry(prefix, 'me', 50n, { flags: LOCK_FLAGS })
      expectType(decide(snapshotOf([other]), options), 'TryAcquire')
    })

    it('should report a LimitConflict naming both limits', () => {
      const lock = lockEntry(prefix, '{"Limit":5,"Holders":{}}', 40n)
      assert.deepEqual(decide(snapshotOf([lock, me]), options), {
        type: 'LimitConflict',
        key: 'svc/lock/.lock',
        lockLimit: 5,
        localLimit: 2,
      })
    })

    it('should throw a RangeError when the local limit is not a positive integer', () => {
      assert.throws(() => decide(snapshotOf([me]), { ...options, limit: 0 }), RangeError)
    })
  })

  describe('corrupt .lock', () => {
    const corrupt: readonly (readonly [string, string | Uint8Array, RegExp])[] = [
      ['not JSON', '{"Limit":2,', /not JSON/],
      ['not UTF-8', new Uint8Array([0x7b, 0xff, 0x7d]), /not UTF-8/],
      ['not an object', '[1,2]', /body: expected a JSON object/],
      ['a zero limit', '{"Limit":0,"Holders":{}}', /Limit: expected PositiveInt, got 0/],
      ['a fractional limit', '{"Limit":1.5,"Holders":[]}', /Limit: expected PositiveInt/],
      ['a string limit', '{"limit":"2","holders":[]}', /limit: expected PositiveInt, got "2"/],
      ['no limit', '{"Holders":{}}', /Limit: expected PositiveInt, got nothing/],
      [
        'a holder that is not a string',
        '{"Limit":2,"Holders":["a",5]}',
        /Holders\.1: expected string, got 5/,
      ],
      ['holders of the wrong type', '{"Limit":2,"Holders":7}', /Holders: expected a list/],
      ['mixed key casing', '{"Limit":2,"holders":["a"]}', /mixes/],
    ]
    for (const [what, body, reason] of corrupt) {
      it(`should report a CorruptLock naming the key for ${what}`, () => {
        const lock = lockEntry(prefix, null, 40n, {
          value: typeof body === 'string' ? new TextEncoder().encode(body) : body,
        })
        const d = expectType(decide(snapshotOf([lock, me]), options), 'CorruptLock')
        assert.equal(d.key, 'svc/lock/.lock')
        assert.match(d.reason, reason)
      })
    }

    it('should accept any value in a go-map, like Go which only counts the keys', () => {
      const lock = lockEntry(prefix, '{"Limit":2,"Holders":{"a":false}}', 40n)
      const d = expectType(
        decide(snapshotOf([lock, contenderEntry(prefix, 'a', 10n), me]), options),
        'TryAcquire',
      )
      assert.equal(text(d.body), '{"Limit":2,"Holders":{"a":true,"me":true}}')
    })
  })

  describe('holders and contenders', () => {
    it('should say Held when the session is a live holder', () => {
      const lock = lockEntry(prefix, '{"Limit":2,"Holders":{"me":true}}', 40n)
      expectType(decide(snapshotOf([lock, me]), options), 'Held')
    })

    it('should say NotContending when the contender key is missing', () => {
      const lock = lockEntry(prefix, '{"Limit":2,"Holders":{}}', 40n)
      expectType(decide(snapshotOf([lock]), options), 'NotContending')
    })

    it('should say NotContending when the contender key is not locked by the session', () => {
      const unlocked = contenderEntry(prefix, 'me', 50n, { session: undefined })
      expectType(decide(snapshotOf([unlocked]), options), 'NotContending')
    })

    it('should prune a holder whose contender key disappeared, leaving it out of the body', () => {
      const lock = lockEntry(prefix, '{"Limit":2,"Holders":{"a":true,"gone":true}}', 40n)
      const d = expectType(
        decide(snapshotOf([lock, contenderEntry(prefix, 'a', 10n), me]), options),
        'TryAcquire',
      )
      assert.deepEqual(d.view.liveHolders, ['a'])
      assert.deepEqual(d.view.deadHolders, ['gone'])
      assert.equal(text(d.body), '{"Limit":2,"Holders":{"a":true,"me":true}}')
    })

    it('should wait with no free slot when the live holders fill the limit', () => {
      const lock = lockEntry(prefix, '{"Limit":2,"Holders":{"a":true,"b":true}}', 40n)
      const peers = [contenderEntry(prefix, 'a', 10n), contenderEntry(prefix, 'b', 11n)]
      const d = expectType(decide(snapshotOf([lock, ...peers, me]), options), 'Wait')
      assert.equal(d.freeSlots, 0)
      assert.equal(d.rank, 0)
    })

    it('should let only the first ranked of two waiters try for one slot', () => {
      const lock = lockEntry(prefix, '{"Limit":1,"Holders":{}}', 40n)
      const first = contenderEntry(prefix, 'first', 10n)
      const second = contenderEntry(prefix, 'second', 11n)
      const snapshot = snapshotOf([lock, second, first])
      const one = { prefix, limit: 1 }
      expectType(decide(snapshot, { ...one, session: 'first' }), 'TryAcquire')
      const d = expectType(decide(snapshot, { ...one, session: 'second' }), 'Wait')
      assert.equal(d.rank, 1)
      assert.equal(d.freeSlots, 1)
    })

    it('should let only the first in line try when two slots are free, then the next one', () => {
      const free = lockEntry(prefix, '{"Limit":2,"Holders":{}}', 40n)
      const first = contenderEntry(prefix, 'first', 10n)
      const second = contenderEntry(prefix, 'second', 11n)
      const two = { prefix, limit: 2 }
      const before = snapshotOf([free, second, first])
      expectType(decide(before, { ...two, session: 'first' }), 'TryAcquire')
      const d = expectType(decide(before, { ...two, session: 'second' }), 'Wait')
      assert.equal(d.rank, 1)
      assert.equal(d.freeSlots, 2)
      // The first one's CAS shows: the second is first in line for the slot still free.
      const taken = lockEntry(prefix, '{"Limit":2,"Holders":{"first":true}}', 41n)
      const after = expectType(
        decide(snapshotOf([taken, second, first]), { ...two, session: 'second' }),
        'TryAcquire',
      )
      assert.equal(after.cas, 41n)
    })

    it('should rank waiters with the same CreateIndex by key', () => {
      const snapshot = snapshotOf([
        contenderEntry(prefix, 'b', 10n),
        contenderEntry(prefix, 'a', 10n),
      ])
      const d = expectType(decide(snapshot, { prefix, limit: 1, session: 'b' }), 'Wait')
      assert.equal(d.rank, 1)
      assert.deepEqual(
        d.view.waiting.map((w) => w.session),
        ['a', 'b'],
      )
    })

    it('should let every waiter try when fairness is off', () => {
      const snapshot = snapshotOf([
        contenderEntry(prefix, 'a', 10n),
        contenderEntry(prefix, 'b', 11n),
      ])
      expectType(
        decide(snapshot, { prefix, limit: 1, session: 'b', fairness: false }),
        'TryAcquire',
      )
    })

    it('should let a waiter try regardless of rank when asked to ignore it', () => {
      const snapshot = snapshotOf([
        contenderEntry(prefix, 'a', 10n),
        contenderEntry(prefix, 'b', 11n),
      ])
      expectType(
        decide(snapshot, { prefix, limit: 1, session: 'b', ignoreRank: true }),
        'TryAcquire',
      )
    })

    it('should count as contenders only direct children locked by their own session', () => {
      const entries = [
        contenderEntry(prefix, 'a', 1n, { key: 'svc/lock/deep/a' }),
        contenderEntry(prefix, 'b', 2n, { key: 'svc/lockx/b' }),
        contenderEntry(prefix, 'c', 3n, { session: 'someone-else' }),
        contenderEntry(prefix, 'me', 9n),
      ]
      const d = expectType(decide(snapshotOf(entries), { ...options, limit: 1 }), 'TryAcquire')
      assert.deepEqual(
        d.view.waiting.map((w) => w.session),
        ['me'],
      )
    })

    it('should build keys like Go path.Join from a prefix with a trailing slash', () => {
      const d = decide(snapshotOf([me]), { ...options, prefix: 'svc//lock/' })
      expectType(d, 'TryAcquire')
    })
  })
})
