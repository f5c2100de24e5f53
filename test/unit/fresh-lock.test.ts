// FreshLock (src/effects/fresh-lock.ts): what a process knows of its prefix's `.lock` beyond its
// watch (its own answers), the overlay made once per listing and knowledge, and the turn its
// writers of `.lock` take.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { VirtualTimeScheduler } from 'rxjs'
import { HOLDER_FLAGS, SEMAPHORE_FLAGS } from '../../src/base/flags.js'
import type { KVEntry } from '../../src/base/kv-snapshot.js'
import type { TxnOp, TxnResult } from '../../src/base/txn.js'
import { FreshLock, WRITE_TURN_MS } from '../../src/effects/fresh-lock.js'
import { bytes, contenderEntry, lockEntry, snapshotOf } from '../../marbles/support/snapshot.js'

const prefix = 'svc/lock'
const lockKey = `${prefix}/.lock`
const listing = snapshotOf(
  [lockEntry(prefix, '{"Limit":2,"Holders":{"a":true}}', 40n), contenderEntry(prefix, 'a', 5n)],
  40n,
)
/** A CAS of `.lock` on `cas` writing `holders`, and its committed answer at `index`. */
function write(cas: bigint, index: bigint, holders: string): [TxnOp[], TxnResult] {
  const body = `{"Limit":2,"Holders":{${holders}}}`
  const ops: TxnOp[] = [
    { verb: 'cas', key: lockKey, value: bytes(body), flags: SEMAPHORE_FLAGS, index: cas },
  ]
  const written: KVEntry = {
    ...lockEntry(prefix, null, index),
    flags: SEMAPHORE_FLAGS,
  }
  return [ops, { committed: true, results: [written] }]
}
const lockIndexOf = (fresh: FreshLock): bigint | undefined =>
  fresh.freshest(listing).entries.find((e) => e.key === lockKey)?.modifyIndex

describe('FreshLock', () => {
  it("overlays the listing with its own writes' answers, once per listing and knowledge", () => {
    const fresh = new FreshLock(prefix)
    fresh.listed(listing, false)
    assert.equal(fresh.freshest(listing), listing)
    const feed = fresh.sending()
    feed.txn(...write(40n, 41n, '"a":true,"b":true'))
    const overlaid = fresh.freshest(listing)
    assert.notEqual(overlaid, listing)
    assert.equal(fresh.freshest(listing), overlaid, 'the same object: the view is made once')
    assert.equal(fresh.freshest(overlaid), overlaid, 'an overlay is laid over its listing again')
    assert.equal(lockIndexOf(fresh), 41n)
    assert.equal(fresh.latestFrom(undefined), overlaid)
  })

  it('drops what a listing at its index shows, and everything at a reset', () => {
    const fresh = new FreshLock(prefix)
    fresh.listed(listing, false)
    fresh.sending().txn(...write(40n, 41n, '"a":true'))
    const caughtUp = { ...listing, index: 41n }
    fresh.listed(caughtUp, false)
    assert.equal(fresh.freshest(caughtUp), caughtUp)
    fresh.sending().txn(...write(41n, 42n, '"a":true'))
    fresh.listed({ ...listing, index: 3n }, true)
    assert.equal(fresh.latestFrom(undefined)?.index, 3n)
    assert.equal(lockIndexOf(fresh), 40n, 'nothing of before the reset is laid over')
  })

  it('takes no answer to a call sent before a reset: its index is of the history before', () => {
    const fresh = new FreshLock(prefix)
    fresh.listed(listing, false)
    const before = fresh.sending()
    const restored = snapshotOf(
      [lockEntry(prefix, '{"Limit":2,"Holders":{"a":true}}', 4n), contenderEntry(prefix, 'a', 3n)],
      5n,
    )
    fresh.listed(restored, true)
    before.txn(...write(40n, 1000n, '"a":true'))
    assert.equal(fresh.latestFrom(undefined), restored)
    fresh.sending().txn(...write(4n, 6n, '"a":true'))
    const lock = fresh.latestFrom(undefined)?.entries.find((e) => e.key === lockKey)
    assert.equal(lock?.modifyIndex, 6n)
  })

  it('tells a CAS on an index older than an answer, or than the last listing, stale', () => {
    const fresh = new FreshLock(prefix)
    const [ops] = write(40n, 41n, '"a":true')
    assert.equal(fresh.stale(ops), false)
    fresh.listed({ ...listing, entries: [{ ...listing.entries[0]!, modifyIndex: 42n }] }, false)
    assert.equal(fresh.stale(ops), true, 'the listing shows .lock at 42')
    const other = new FreshLock(prefix)
    other.listed(listing, false)
    other.sending().txn(...write(40n, 41n, '"a":true'))
    assert.equal(other.stale(ops), true, 'our own write moved it to 41')
    assert.equal(other.stale(write(41n, 42n, '"a":true')[0]), false)
  })

  it('gives the turn to one writer at a time, first come first served', () => {
    const fresh = new FreshLock(prefix, new VirtualTimeScheduler())
    const order: string[] = []
    const giveA = fresh.request(() => order.push('a'))
    const giveB = fresh.request(() => order.push('b'))
    const withdrawC = fresh.request(() => order.push('c'))
    const giveD = fresh.request(() => order.push('d'))
    assert.deepEqual(order, ['a'])
    withdrawC()
    giveA()
    assert.deepEqual(order, ['a', 'b'])
    giveA()
    assert.deepEqual(order, ['a', 'b'], 'giving back twice passes it on once')
    giveB()
    assert.deepEqual(order, ['a', 'b', 'd'])
    giveD()
    fresh.request(() => order.push('e'))
    assert.deepEqual(order, ['a', 'b', 'd', 'e'], 'free: granted at once')
  })

  it(`passes the turn on after ${WRITE_TURN_MS} ms when a write's answer is late`, () => {
    const scheduler = new VirtualTimeScheduler()
    const fresh = new FreshLock(prefix, scheduler)
    const order: string[] = []
    const giveA = fresh.request(() => order.push('a'))
    fresh.request(() => order.push('b'))
    scheduler.maxFrames = WRITE_TURN_MS - 1
    scheduler.flush()
    assert.deepEqual(order, ['a'])
    scheduler.maxFrames = WRITE_TURN_MS
    scheduler.flush()
    assert.deepEqual(order, ['a', 'b'])
    giveA()
    fresh.request(() => order.push('c'))
    assert.deepEqual(order, ['a', 'b'], "a's late give-back does not take b's turn")
  })

  it('marks the heir of a hand-off holder from the key the write set', () => {
    const fresh = new FreshLock(prefix)
    fresh.listed(
      { ...listing, entries: [...listing.entries, contenderEntry(prefix, 'w', 9n)] },
      false,
    )
    const ops: TxnOp[] = [
      { verb: 'check-session', key: `${prefix}/w`, session: 'w' },
      ...write(40n, 41n, '"w":true')[0],
      { verb: 'delete', key: `${prefix}/a` },
      { verb: 'set', key: `${prefix}/w`, value: null, flags: HOLDER_FLAGS },
    ]
    const heirKey: KVEntry = { ...contenderEntry(prefix, 'w', 9n), flags: HOLDER_FLAGS }
    fresh.sending().txn(ops, {
      committed: true,
      results: [
        contenderEntry(prefix, 'w', 9n),
        { ...lockEntry(prefix, null, 41n) },
        { ...heirKey, modifyIndex: 41n },
      ],
    })
    const entries = fresh.latestFrom(undefined)?.entries ?? []
    assert.deepEqual(
      entries.map((e) => [e.key, e.modifyIndex, e.flags === HOLDER_FLAGS]),
      [
        [lockKey, 41n, false],
        [`${prefix}/w`, 41n, true],
      ],
    )
  })
})
