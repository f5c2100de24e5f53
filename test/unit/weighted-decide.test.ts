// Several permits, decided by the pure core: a waiting key says how many it asks for in its flags,
// the first in line takes them all in one write when as many slots are free, the waiters behind a
// request that does not fit wait for it (no grace lets them pass it), it holds only while every
// one of its sessions is listed, and no holder hands a single slot to it.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  CONTENDER_FLAGS,
  HOLDER_FLAGS,
  SEMAPHORE_FLAGS,
  waitingFlags,
  weightOfFlags,
} from '../../src/base/flags.js'
import type { KVEntry } from '../../src/base/kv-snapshot.js'
import { decidePatiently } from '../../src/core/contender/decide-patiently.js'
import { decide } from '../../src/core/semaphore/decide.js'
import { handOffSlot } from '../../src/core/semaphore/hand-off.js'
import { prefixView } from '../../src/core/semaphore/prefix-view.js'
import { refenceKept, refencing } from '../../src/core/semaphore/refencing.js'

const prefix = 'svc/jobs'
const utf8 = new TextEncoder()

const key = (session: string, createIndex: bigint, flags: bigint, value = session): KVEntry => ({
  key: `${prefix}/${session}`,
  value: utf8.encode(value),
  flags,
  session,
  lockIndex: 1n,
  createIndex,
  modifyIndex: createIndex,
})

/**
 * Limit 5: `holders` listed in `.lock` (each its own process, its key there unless `dead`), then
 * `waiters` in arrival order.
 */
const snapshot = (
  holders: readonly string[],
  waiters: readonly KVEntry[],
  dead: readonly string[] = [],
  index = 50n,
) => ({
  index,
  entries: [
    {
      key: `${prefix}/.lock`,
      value: utf8.encode(
        JSON.stringify({ Limit: 5, Holders: Object.fromEntries(holders.map((h) => [h, true])) }),
      ),
      flags: SEMAPHORE_FLAGS,
      lockIndex: 0n,
      createIndex: 1n,
      modifyIndex: index,
    },
    ...holders.filter((h) => !dead.includes(h)).map((h, i) => key(h, BigInt(2 + i), HOLDER_FLAGS)),
    ...waiters,
  ],
})

const holdersOf = (body: Uint8Array) =>
  Object.keys((JSON.parse(new TextDecoder().decode(body)) as { Holders: object }).Holders).sort()

describe('several permits', () => {
  it('states its permits in its waiting key’s flags, one permit as today', () => {
    assert.equal(waitingFlags(1), CONTENDER_FLAGS)
    assert.equal(weightOfFlags(waitingFlags(4)), 4)
    for (const flags of [SEMAPHORE_FLAGS, CONTENDER_FLAGS, HOLDER_FLAGS, 0n]) {
      assert.equal(weightOfFlags(flags), 1)
    }
    const view = decide(snapshot(['h1'], [key('big', 10n, waitingFlags(4))]), {
      prefix,
      session: 'h1',
      limit: 5,
    }).view
    assert.equal(view?.waiting[0]?.weight, 4)
  })

  it('takes all of them in one write when as many are free, first in line; waits while fewer are', () => {
    const big = key('big', 10n, waitingFlags(3))
    const options = { prefix, session: 'big', limit: 5, companions: ['c1', 'c2'] }
    const short = decide(snapshot(['h1', 'h2', 'h3'], [big]), options)
    assert.equal(short.type, 'Wait', 'two free, three asked')
    const room = decide(snapshot(['h1', 'h2'], [big]), options)
    assert.equal(room.type, 'TryAcquire')
    if (room.type === 'TryAcquire') {
      assert.deepEqual(holdersOf(room.body), ['big', 'c1', 'c2', 'h1', 'h2'])
    }
  })

  it('keeps the waiters behind a request that does not fit waiting, however long the slots stay free', () => {
    const waiters = [key('big', 10n, waitingFlags(4)), key('small', 11n, CONTENDER_FLAGS)]
    const at = snapshot(['h1', 'h2'], waiters)
    const options = { prefix, limit: 5 }
    const first = decidePatiently(
      at,
      'small',
      0,
      { graceFront: undefined, graceSince: undefined },
      options,
    )
    assert.equal(first.decision.type, 'Wait')
    assert.equal(first.patientAt, undefined, 'three free slots of four asked: no stall counted')
    const later = decidePatiently(at, 'small', 3_600_000, first, options)
    assert.equal(later.decision.type, 'Wait', 'an hour on: still behind the request of four')
    // One permit at the front instead: the grace counts, and runs out.
    const stalled = snapshot(['h1', 'h2'], [key('front', 10n, CONTENDER_FLAGS), waiters[1]!])
    const counted = decidePatiently(
      stalled,
      'small',
      0,
      { graceFront: undefined, graceSince: undefined },
      options,
    )
    assert.notEqual(counted.patientAt, undefined)
    const over = decidePatiently(stalled, 'small', 3_600_000, counted, options)
    assert.equal(over.decision.type, 'TryAcquire')
  })

  it('holds only while every one of its sessions is listed', () => {
    const options = { prefix, session: 'big', limit: 5, companions: ['c1', 'c2'] }
    assert.equal(decide(snapshot(['big', 'c1', 'c2'], []), options).type, 'Held')
    // c2's session ended: Consul deleted its key, and the next writer prunes it from .lock.
    const lost = decide(snapshot(['big', 'c1', 'c2'], [], ['c2']), options)
    assert.equal(lost.type, 'Wait', 'not held: one of its permits is gone')
  })

  it('is never handed a single slot by a holder that releases', () => {
    const at = snapshot(['h1', 'h2', 'h3', 'h4', 'h5'], [key('big', 10n, waitingFlags(2))])
    assert.equal(handOffSlot(at, { prefix, session: 'h1', limit: 5 }), undefined)
    const one = snapshot(['h1', 'h2', 'h3', 'h4', 'h5'], [key('one', 10n, CONTENDER_FLAGS)])
    assert.notEqual(handOffSlot(one, { prefix, session: 'h1', limit: 5 }), undefined)
  })

  it('gives every permit back between two jobs when the slot goes on, and keeps a token only while all are listed', () => {
    const options = { prefix, session: 'big', limit: 5, companions: ['c1'] }
    const at = snapshot(['big', 'c1', 'h1', 'h2', 'h3'], [key('one', 60n, CONTENDER_FLAGS)])
    const rotate = refencing(at, options, prefixView(at, options), false)
    assert.equal(rotate?.type, 'Rotate')
    if (rotate?.type === 'Rotate') {
      assert.equal(rotate.handOff, undefined, 'no hand-off of one of its permits')
      assert.deepEqual(holdersOf(rotate.body), ['h1', 'h2', 'h3'])
    }
    const keep = refencing(at, options, prefixView(at, options), true)
    assert.equal(keep?.type, 'Refence')
    if (keep?.type === 'Refence') {
      const lock = at.entries[0]
      assert.ok(refenceKept(keep, 'big', lock, ['c1']))
      const without = snapshot(['big', 'h1'], []).entries[0]
      assert.ok(!refenceKept(keep, 'big', without, ['c1']), 'c1 no longer listed')
    }
  })
})
