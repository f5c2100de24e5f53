import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { CONTENDER_FLAGS, HOLDER_FLAGS, LOCK_FLAGS } from '../../src/base/flags.js'
import { decide } from '../../src/core/semaphore/decide.js'
import { handOffAgain, handOffSlot } from '../../src/core/semaphore/hand-off.js'
import { prefixView } from '../../src/core/semaphore/prefix-view.js'
import { contenderEntry, lockEntry, snapshotOf, text } from '../../marbles/support/snapshot.js'

const prefix = 'svc/lock'
const options = { prefix, session: 'me', limit: 2 }
const ours = (session: string, createIndex: bigint) =>
  contenderEntry(prefix, session, createIndex, { flags: CONTENDER_FLAGS })
// A Go client's contender key: the semaphore's own flags.
const go = (session: string, createIndex: bigint) => contenderEntry(prefix, session, createIndex)
const lock = (body: string, index = 40n) => lockEntry(prefix, body, index)

describe('handOffSlot', () => {
  it('hands the slot to the first waiter when it runs this library, in the shape read', () => {
    const snapshot = snapshotOf([
      lock('{"Limit":2,"Holders":["other","me"]}'),
      ours('me', 1n),
      ours('other', 2n),
      ours('w1', 10n),
      go('w2', 11n),
    ])
    const handOff = handOffSlot(snapshot, options)
    assert.equal(handOff?.heir, 'w1')
    assert.equal(handOff?.cas, 40n)
    assert.equal(handOff?.heirEntry.key, `${prefix}/w1`)
    assert.equal(text(handOff?.body ?? new Uint8Array()), '{"Limit":2,"Holders":["other","w1"]}')
    // Given the snapshot's view (as a release gets it from the contenders' shared step), the
    // same hand-off, without a view of its own.
    assert.deepEqual(handOffSlot(snapshot, options, prefixView(snapshot, options)), handOff)
  })

  it('hands nothing when the first waiter is a Go contender, even with ours behind it', () => {
    const snapshot = snapshotOf([
      lock('{"Limit":2,"Holders":{"me":true}}'),
      ours('me', 1n),
      go('w1', 10n),
      ours('w2', 11n),
    ])
    assert.equal(handOffSlot(snapshot, options), undefined)
  })

  it('hands nothing without a waiter, when not a live holder, or over a .lock it must not write', () => {
    const alone = snapshotOf([lock('{"Limit":2,"Holders":{"me":true}}'), ours('me', 1n)])
    assert.equal(handOffSlot(alone, options), undefined)
    const notListed = snapshotOf([lock('{"Limit":2,"Holders":{}}'), ours('me', 1n), ours('w', 2n)])
    assert.equal(handOffSlot(notListed, options), undefined)
    const foreign = snapshotOf([
      lockEntry(prefix, '{"Limit":2,"Holders":{"me":true}}', 40n, { flags: LOCK_FLAGS }),
      ours('me', 1n),
      ours('w', 2n),
    ])
    assert.equal(handOffSlot(foreign, options), undefined)
    const otherLimit = snapshotOf([
      lock('{"Limit":3,"Holders":{"me":true}}'),
      ours('me', 1n),
      ours('w', 2n),
    ])
    assert.equal(handOffSlot(otherLimit, options), undefined)
  })

  it('hands on the slot of its own session that Consul ended (its key gone, .lock naming it)', () => {
    const snapshot = snapshotOf([
      lock('{"Limit":2,"Holders":{"other":true,"me":true}}'),
      ours('other', 2n),
      ours('w', 10n),
    ])
    const handOff = handOffSlot(snapshot, options)
    assert.equal(handOff?.heir, 'w')
    assert.equal(
      text(handOff?.body ?? new Uint8Array()),
      '{"Limit":2,"Holders":{"other":true,"w":true}}',
    )
  })

  it('hands nothing for its dead session when the live holders fill the limit without it', () => {
    const snapshot = snapshotOf([
      lock('{"Limit":2,"Holders":{"a":true,"b":true,"me":true}}'),
      ours('a', 2n),
      ours('b', 3n),
      ours('w', 10n),
    ])
    assert.equal(handOffSlot(snapshot, options), undefined)
  })

  it('prunes dead holders from the body it writes, as any acquisition does', () => {
    const snapshot = snapshotOf([
      lock('{"Limit":2,"Holders":{"dead":true,"me":true}}'),
      ours('me', 1n),
      ours('w', 10n),
    ])
    assert.equal(
      text(handOffSlot(snapshot, options)?.body ?? new Uint8Array()),
      '{"Limit":2,"Holders":{"w":true}}',
    )
  })

  it("never hands to a key locked by another session than the waiter's own", () => {
    const snapshot = snapshotOf([
      lock('{"Limit":2,"Holders":{"me":true}}'),
      ours('me', 1n),
      contenderEntry(prefix, 'w', 10n, { flags: CONTENDER_FLAGS, session: 'intruder' }),
    ])
    assert.equal(handOffSlot(snapshot, options), undefined)
  })
})

describe('handOffAgain', () => {
  const first = handOffSlot(
    snapshotOf([lock('{"Limit":2,"Holders":{"me":true}}'), ours('me', 1n), ours('w', 10n)]),
    options,
  )
  assert.ok(first)

  it('hands to the same heir from .lock as read now, keeping the other holders listed', () => {
    const now = lock('{"Limit":2,"Holders":{"me":true,"x":true}}', 44n)
    const again = handOffAgain(now, options, first)
    assert.equal(again?.heir, 'w')
    assert.equal(again?.cas, 44n)
    assert.equal(text(again?.body ?? new Uint8Array()), '{"Limit":2,"Holders":{"w":true,"x":true}}')
  })

  it('gives up when .lock no longer lists this session, already lists the heir, or is gone', () => {
    assert.equal(
      handOffAgain(lock('{"Limit":2,"Holders":{"x":true}}', 44n), options, first),
      undefined,
    )
    const served = lock('{"Limit":2,"Holders":{"me":true,"w":true}}', 44n)
    assert.equal(handOffAgain(served, options, first), undefined)
    assert.equal(handOffAgain(undefined, options, first), undefined)
    const foreign = lockEntry(prefix, '{"Limit":2,"Holders":{"me":true}}', 44n, {
      flags: LOCK_FLAGS,
    })
    assert.equal(handOffAgain(foreign, options, first), undefined)
  })
})

describe('decide after a hand-off', () => {
  it("says Held with the hand-off's index, read from the holder's own key", () => {
    const snapshot = snapshotOf([
      lock('{"Limit":2,"Holders":{"me":true}}', 45n),
      contenderEntry(prefix, 'me', 1n, { flags: HOLDER_FLAGS, modifyIndex: 40n }),
    ])
    assert.deepEqual(
      { ...decide(snapshot, options), view: undefined },
      { type: 'Held', view: undefined, acquiredAt: 40n },
    )
  })

  it('says Held without a hand-off index for a holder that took its slot by CAS', () => {
    const snapshot = snapshotOf([lock('{"Limit":2,"Holders":{"me":true}}', 45n), ours('me', 1n)])
    const decision = decide(snapshot, options)
    assert.equal(decision.type, 'Held')
    assert.equal('acquiredAt' in decision, false)
  })
})
