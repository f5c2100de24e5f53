// The semaphore release as a plan: each path is the conversation between the plan and Consul,
// one call per line, the answers scripted. The driver only makes these calls (release-driver).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import { CONTENDER_FLAGS, HOLDER_FLAGS, LOCK_FLAGS } from '../../src/base/flags.js'
import { releaseNext, releaseStart } from '../../src/core/release/release-slot-plan.js'
import { prefixView } from '../../src/core/semaphore/prefix-view.js'
import { answer, failure, play } from '../support/release-script.js'
import { contenderEntry, lockEntry, snapshotOf } from '../../marbles/support/snapshot.js'
import type { KVSnapshot } from '../../src/base/kv-snapshot.js'
import type { LatestPrefix } from '../../src/core/release/release-call.js'

const prefix = 'svc/lock'
const input = { prefix, session: 'me', limit: 2 }
const ours = (session: string, createIndex: bigint, flags = CONTENDER_FLAGS) =>
  contenderEntry(prefix, session, createIndex, { flags })
const me = ours('me', 5n, HOLDER_FLAGS)
const lock = (holders: string, index: bigint) =>
  lockEntry(prefix, `{"Limit":2,"Holders":{${holders}}}`, index)

/** `.lock` listing us at ModifyIndex 40, and the snapshot around it. */
const listsMe = lock('"me":true', 40n)
const holderHint = snapshotOf([listsMe, me])
const handOffHint = snapshotOf([listsMe, me, ours('w1', 10n)])
const { committed, rolledBack, deleted, destroyed, waited } = answer
const CAS_OP = 1
const HEIR_CHECK = 0

/** The calls, as describeCall writes them. */
const call = {
  read: `get ${prefix}/.lock`,
  deleteKey: `delete ${prefix}/me`,
  destroy: 'destroy me',
  casOut: (index: bigint, holders = '') =>
    `txn [cas ${prefix}/.lock@${index} {"Limit":2,"Holders":{${holders}}} flags=SEMAPHORE; delete ${prefix}/me]`,
  handOff: (index: bigint, holders: string) =>
    `txn [check-session ${prefix}/w1 w1; ` +
    `cas ${prefix}/.lock@${index} {"Limit":2,"Holders":{${holders}}} flags=SEMAPHORE; ` +
    `delete ${prefix}/me; set ${prefix}/w1  flags=HOLDER]`,
}

describe('releaseStart / releaseNext: a holder', () => {
  it('should CAS out at once from a hint that lists it, then destroy the session', () => {
    const { calls, result } = play(releaseStart({ ...input, hint: holderHint }), releaseNext, [
      committed(),
      destroyed(),
    ])
    assert.deepEqual(calls, [call.casOut(40n), call.destroy])
    assert.deepEqual(result, E.right({ type: 'Released' }))
  })

  it('should read only .lock first without a hint', () => {
    const { calls, result } = play(releaseStart(input), releaseNext, [
      answer.lock(listsMe),
      committed(),
      destroyed(),
    ])
    assert.deepEqual(calls, [call.read, call.casOut(40n), call.destroy])
    assert.deepEqual(result, E.right({ type: 'Released' }))
  })

  it('should ignore a hint that does not list it (taken before its own CAS) and read .lock', () => {
    const early = snapshotOf([me])
    const { calls } = play(releaseStart({ ...input, hint: early }), releaseNext, [
      answer.lock(listsMe),
      committed(),
      destroyed(),
    ])
    assert.deepEqual(calls, [call.read, call.casOut(40n), call.destroy])
  })

  it('should, on a stale hint, lose one CAS, pause a jittered moment, re-read and keep the newer holder', () => {
    const later = lock('"me":true,"other":true', 45n)
    const { calls, result } = play(releaseStart({ ...input, hint: holderHint }), releaseNext, [
      rolledBack(0, 0.4), // the pause after the first lost CAS: 0.4 × 5 ms
      waited(),
      answer.lock(later),
      committed(),
      destroyed(),
    ])
    assert.deepEqual(calls, [
      call.casOut(40n),
      'wait 2ms',
      call.read,
      call.casOut(45n, '"other":true'),
      call.destroy,
    ])
    assert.deepEqual(result, E.right({ type: 'Released' }))
  })

  it('should give up after the attempts all lost their CAS, and destroy the session anyway', () => {
    const churn = (index: bigint) => answer.lock(lock('"me":true', index))
    const { calls, result } = play(
      releaseStart({ ...input, hint: holderHint, attempts: 3 }),
      releaseNext,
      [rolledBack(0, 1), waited(), churn(41n), rolledBack(0, 1), waited(), churn(42n)].concat([
        rolledBack(0, 1),
        destroyed(),
      ]),
    )
    assert.deepEqual(calls, [
      call.casOut(40n),
      'wait 5ms',
      call.read,
      call.casOut(41n),
      'wait 10ms',
      call.read,
      call.casOut(42n),
      call.destroy, // no pause and no read after the last attempt
    ])
    assert.deepEqual(result, E.right({ type: 'GaveUp' }))
  })

  it('should destroy the session at once when attempts is 0', () => {
    const { calls, result } = play(
      releaseStart({ ...input, hint: holderHint, attempts: 0 }),
      releaseNext,
      [destroyed()],
    )
    assert.deepEqual(calls, [call.destroy])
    assert.deepEqual(result, E.right({ type: 'GaveUp' }))
  })
})

describe('releaseStart / releaseNext: a hand-off', () => {
  it('should hand the slot to our first waiter in its one transaction', () => {
    const { calls, result } = play(releaseStart({ ...input, hint: handOffHint }), releaseNext, [
      committed(),
      destroyed(),
    ])
    assert.deepEqual(calls, [call.handOff(40n, '"w1":true'), call.destroy])
    assert.deepEqual(result, E.right({ type: 'HandedOff', heir: 'w1' }))
  })

  it('should use the view it is given instead of its own', () => {
    const hintView = prefixView(handOffHint, input)
    const { calls } = play(releaseStart({ ...input, hint: handOffHint, hintView }), releaseNext, [
      committed(),
      destroyed(),
    ])
    assert.deepEqual(calls, [call.handOff(40n, '"w1":true'), call.destroy])
  })

  it('should, after a lost CAS, hand off again to the same heir from .lock as read now', () => {
    const later = lock('"me":true,"other":true', 45n)
    const { calls, result } = play(releaseStart({ ...input, hint: handOffHint }), releaseNext, [
      rolledBack(CAS_OP, 0.8),
      waited(),
      answer.lock(later),
      committed(),
      destroyed(),
    ])
    assert.deepEqual(calls, [
      call.handOff(40n, '"w1":true'),
      'wait 4ms',
      call.read,
      call.handOff(45n, '"other":true,"w1":true'),
      call.destroy,
    ])
    assert.deepEqual(result, E.right({ type: 'HandedOff', heir: 'w1' }))
  })

  it('should release the plain way, from the same read, when another release served the heir', () => {
    const served = lock('"me":true,"w1":true', 45n)
    const { calls, result } = play(releaseStart({ ...input, hint: handOffHint }), releaseNext, [
      rolledBack(CAS_OP, 0.6),
      waited(),
      answer.lock(served),
      committed(),
      destroyed(),
    ])
    assert.deepEqual(calls, [
      call.handOff(40n, '"w1":true'),
      'wait 3ms',
      call.read,
      call.casOut(45n, '"w1":true'),
      call.destroy,
    ])
    assert.deepEqual(result, E.right({ type: 'Released' }))
  })

  it('should release the plain way, after a read, when the heir no longer locks its key', () => {
    const { calls, result } = play(releaseStart({ ...input, hint: handOffHint }), releaseNext, [
      rolledBack(HEIR_CHECK),
      answer.lock(listsMe),
      committed(),
      destroyed(),
    ])
    assert.deepEqual(calls, [
      call.handOff(40n, '"w1":true'),
      call.read,
      call.casOut(40n),
      call.destroy,
    ])
    assert.deepEqual(result, E.right({ type: 'Released' }))
  })

  it('should hand nothing to a Go waiter first in line', () => {
    const goFirst = snapshotOf([listsMe, me, contenderEntry(prefix, 'w1', 10n)])
    const { calls } = play(releaseStart({ ...input, hint: goFirst }), releaseNext, [
      committed(),
      destroyed(),
    ])
    assert.deepEqual(calls, [call.casOut(40n), call.destroy])
  })
})

describe('releaseStart / releaseNext: a holder that watched only its key and .lock (listReads)', () => {
  const listReads = { ...input, listReads: true }
  const list = `list ${prefix}/`

  it('should hand off at once to the heir its hint names, with no read', () => {
    const { calls, result } = play(releaseStart({ ...listReads, hint: handOffHint }), releaseNext, [
      committed(),
      destroyed(),
    ])
    assert.deepEqual(calls, [call.handOff(40n, '"w1":true'), call.destroy])
    assert.deepEqual(result, E.right({ type: 'HandedOff', heir: 'w1' }))
  })

  it('should list the prefix when its hint names no heir (waiters may have joined since), and hand off to the one listed', () => {
    const { calls, result } = play(releaseStart({ ...listReads, hint: holderHint }), releaseNext, [
      answer.listing(snapshotOf([lock('"me":true', 44n), me, ours('w1', 10n)])),
      committed(),
      destroyed(),
    ])
    assert.deepEqual(calls, [list, call.handOff(44n, '"w1":true'), call.destroy])
    assert.deepEqual(result, E.right({ type: 'HandedOff', heir: 'w1' }))
  })

  it('should release the plain way after a listing that shows nobody waiting', () => {
    const { calls, result } = play(releaseStart(listReads), releaseNext, [
      answer.listing(holderHint),
      committed(),
      destroyed(),
    ])
    assert.deepEqual(calls, [list, call.casOut(40n), call.destroy])
    assert.deepEqual(result, E.right({ type: 'Released' }))
  })

  it('should list again when the heir left, and hand the slot to the next in line', () => {
    const next = snapshotOf([listsMe, me, ours('w2', 11n)])
    const { calls, result } = play(releaseStart({ ...listReads, hint: handOffHint }), releaseNext, [
      rolledBack(HEIR_CHECK),
      answer.listing(next),
      committed(),
      destroyed(),
    ])
    assert.deepEqual(calls, [
      call.handOff(40n, '"w1":true'),
      list,
      call.handOff(40n, '"w1":true').replaceAll('w1', 'w2'),
      call.destroy,
    ])
    assert.deepEqual(result, E.right({ type: 'HandedOff', heir: 'w2' }))
  })

  it('should list again after a lost CAS, not build on what the process knew', () => {
    const other = ours('other', 8n, HOLDER_FLAGS)
    const later = snapshotOf([lock('"me":true,"other":true', 45n), me, other, ours('w1', 10n)])
    const { calls } = play(releaseStart({ ...listReads, hint: handOffHint }), releaseNext, [
      rolledBack(CAS_OP),
      waited({ snapshot: handOffHint }),
      answer.listing(later),
      committed(),
      destroyed(),
    ])
    assert.deepEqual(calls, [
      call.handOff(40n, '"w1":true'),
      'wait 2.5ms',
      list,
      call.handOff(45n, '"other":true,"w1":true'),
      call.destroy,
    ])
  })
})

describe('releaseStart / releaseNext: building on what the process knows', () => {
  /** The freshest prefix the process knows, as its driver hands it to the plan. */
  const known = (snapshot: KVSnapshot): LatestPrefix => ({ snapshot })
  const w2 = ours('w2', 11n)
  /** Another holder of the process handed its slot to w1 at 41: w2 is first in line now. */
  const w1Served = snapshotOf([
    lock('"me":true,"w1":true', 41n),
    me,
    ours('w1', 10n, HOLDER_FLAGS),
    w2,
  ])
  const handOffTo = (heir: string, index: bigint, holders: string) =>
    call.handOff(index, holders).replaceAll('/w1', `/${heir}`).replace(' w1;', ` ${heir};`)

  it('should build a hand-off the driver did not send (stale) again on the newer .lock, with no read', () => {
    const { calls, result } = play(
      releaseStart({ ...input, hint: snapshotOf([listsMe, me, ours('w1', 10n), w2]) }),
      releaseNext,
      [answer.stale(known(w1Served)), committed(), destroyed()],
    )
    assert.deepEqual(calls, [
      call.handOff(40n, '"w1":true'),
      handOffTo('w2', 41n, '"w1":true,"w2":true'),
      call.destroy,
    ])
    assert.deepEqual(result, E.right({ type: 'HandedOff', heir: 'w2' }))
  })

  it('should build a plain release the driver did not send again on the newer .lock', () => {
    const other = lock('"me":true,"other":true', 45n)
    const { calls } = play(releaseStart({ ...input, hint: holderHint }), releaseNext, [
      answer.stale(known(snapshotOf([other, me]))),
      committed(),
      destroyed(),
    ])
    assert.deepEqual(calls, [call.casOut(40n), call.casOut(45n, '"other":true'), call.destroy])
  })

  it('should count a CAS not sent among its attempts', () => {
    const { calls, result } = play(
      releaseStart({ ...input, hint: holderHint, attempts: 1 }),
      releaseNext,
      [answer.stale(known(snapshotOf([lock('"me":true', 45n), me]))), destroyed()],
    )
    assert.deepEqual(calls, [call.casOut(40n), call.destroy])
    assert.deepEqual(result, E.right({ type: 'GaveUp' }))
  })

  it('should, after a lost CAS, build on a newer .lock the process learnt meanwhile instead of reading', () => {
    const { calls } = play(releaseStart({ ...input, hint: holderHint }), releaseNext, [
      rolledBack(CAS_OP - 1, 0.4),
      answer.waited(known(snapshotOf([lock('"me":true,"other":true', 45n), me]))),
      committed(),
      destroyed(),
    ])
    assert.deepEqual(calls, [
      call.casOut(40n),
      'wait 2ms',
      call.casOut(45n, '"other":true'),
      call.destroy,
    ])
  })

  it('should read .lock after a lost CAS when the process knows nothing newer than what it lost on', () => {
    const { calls } = play(releaseStart({ ...input, hint: holderHint }), releaseNext, [
      rolledBack(CAS_OP - 1, 0.4),
      answer.waited(known(holderHint)),
      answer.lock(lock('"me":true', 46n)),
      committed(),
      destroyed(),
    ])
    assert.deepEqual(calls, [
      call.casOut(40n),
      'wait 2ms',
      call.read,
      call.casOut(46n),
      call.destroy,
    ])
  })
})

describe('releaseStart / releaseNext: a waiter', () => {
  const notListed = lock('"other":true', 40n)

  it('should delete its key, read .lock once more, and only then destroy', () => {
    const { calls, result } = play(releaseStart(input), releaseNext, [
      answer.lock(notListed),
      deleted(),
      answer.lock(notListed),
      destroyed(),
    ])
    assert.deepEqual(calls, [call.read, call.deleteKey, call.read, call.destroy])
    assert.deepEqual(result, E.right({ type: 'NotListed' }))
  })

  it('should CAS itself out when a hand-off named it between its read and its delete', () => {
    const handedToMe = lock('"me":true,"other":true', 44n)
    const { calls, result } = play(releaseStart(input), releaseNext, [
      answer.lock(notListed),
      deleted(),
      answer.lock(handedToMe),
      committed(),
      destroyed(),
    ])
    assert.deepEqual(calls, [
      call.read,
      call.deleteKey,
      call.read,
      call.casOut(44n, '"other":true'),
      call.destroy,
    ])
    assert.deepEqual(result, E.right({ type: 'Released' }))
  })

  it('should treat a missing .lock as not listed', () => {
    const { calls } = play(releaseStart(input), releaseNext, [
      answer.lock(null),
      deleted(),
      answer.lock(null),
      destroyed(),
    ])
    assert.deepEqual(calls, [call.read, call.deleteKey, call.read, call.destroy])
  })
})

describe('releaseStart / releaseNext: a .lock it must not write', () => {
  const cases = [
    ['corrupt', lockEntry(prefix, '{"Limit":2,', 40n), 'CorruptLock'],
    ['of consul lock', lockEntry(prefix, 'x', 40n, { flags: LOCK_FLAGS }), 'Conflict'],
  ] as const
  for (const [what, entry, problem] of cases) {
    it(`should delete only its key under a .lock ${what}, and not read again`, () => {
      const { calls, result } = play(releaseStart(input), releaseNext, [
        answer.lock(entry),
        deleted(),
        destroyed(),
      ])
      assert.deepEqual(calls, [call.read, call.deleteKey, call.destroy])
      assert.ok(E.isRight(result) && result.right.type === 'KeyOnly')
      assert.equal(result.right.problem.type, problem)
    })
  }

  it('should not use a hint whose .lock it must not write', () => {
    const hint = snapshotOf([lockEntry(prefix, '{"Limit":2,', 40n), me])
    const { calls } = play(releaseStart({ ...input, hint }), releaseNext, [
      answer.lock(hint.entries[0] ?? null),
      deleted(),
      destroyed(),
    ])
    assert.deepEqual(calls, [call.read, call.deleteKey, call.destroy])
  })
})

describe('releaseStart / releaseNext: a limit an operator changed', () => {
  const limited = (limit: number, holders: string, index: bigint) =>
    lockEntry(prefix, `{"Limit":${limit},"Holders":{${holders}}}`, index)
  const casOutAt = (limit: number, index: bigint, holders: string) =>
    `txn [cas ${prefix}/.lock@${index} {"Limit":${limit},"Holders":{${holders}}} flags=SEMAPHORE; delete ${prefix}/me]`

  it('should CAS itself out of a .lock that states another limit now, writing that limit back', () => {
    const raised = limited(3, '"me":true,"other":true', 46n)
    const { calls, result } = play(releaseStart(input), releaseNext, [
      answer.lock(raised),
      committed(),
      destroyed(),
    ])
    assert.deepEqual(calls, [call.read, casOutAt(3, 46n, '"other":true'), call.destroy])
    assert.deepEqual(result, E.right({ type: 'Released' }))
  })

  it('should not hand its slot on when it does not follow the new limit (the plain release)', () => {
    const raised = limited(3, '"me":true', 46n)
    const hint = snapshotOf([raised, me, ours('w1', 10n)])
    const { calls } = play(releaseStart({ ...input, hint }), releaseNext, [
      committed(),
      destroyed(),
    ])
    assert.deepEqual(calls, [casOutAt(3, 46n, ''), call.destroy])
  })

  it('should not hand its slot on while the holders are more than a lowered limit', () => {
    const lowered = lockEntry(prefix, '{"Limit":1,"Holders":{"me":true,"other":true}}', 47n)
    const hint = snapshotOf([lowered, me, ours('other', 6n, HOLDER_FLAGS), ours('w1', 10n)])
    const follower = { ...input, followLimit: true, hint }
    const { calls } = play(releaseStart(follower), releaseNext, [committed(), destroyed()])
    assert.deepEqual(calls, [casOutAt(1, 47n, '"other":true'), call.destroy])
  })

  it('should hand its slot on under a raised limit when it follows the limit', () => {
    const raised = limited(3, '"me":true', 46n)
    const hint = snapshotOf([raised, me, ours('w1', 10n)])
    const follower = { ...input, followLimit: true, hint }
    const { calls, result } = play(releaseStart(follower), releaseNext, [committed(), destroyed()])
    assert.deepEqual(calls, [
      `txn [check-session ${prefix}/w1 w1; ` +
        `cas ${prefix}/.lock@46 {"Limit":3,"Holders":{"w1":true}} flags=SEMAPHORE; ` +
        `delete ${prefix}/me; set ${prefix}/w1  flags=HOLDER]`,
      call.destroy,
    ])
    assert.deepEqual(result, E.right({ type: 'HandedOff', heir: 'w1' }))
  })

  it('should give up a hand-off retried after the limit was lowered under the holders', () => {
    const lowered = lockEntry(prefix, '{"Limit":1,"Holders":{"me":true,"other":true}}', 48n)
    const follower = { ...input, followLimit: true, hint: handOffHint }
    const { calls } = play(releaseStart(follower), releaseNext, [
      rolledBack(CAS_OP, 0),
      waited(),
      answer.lock(lowered),
      committed(),
      destroyed(),
    ])
    assert.deepEqual(calls, [
      call.handOff(40n, '"w1":true'),
      'wait 0ms',
      call.read,
      casOutAt(1, 48n, '"other":true'),
      call.destroy,
    ])
  })
})

describe('releaseStart / releaseNext: transient failures', () => {
  it('should try a call again 100, 200 and 400 ms after transient failures (BACKOFF.release)', () => {
    const { calls, result } = play(releaseStart(input), releaseNext, [
      answer.failed('get', failure.server()),
      waited(),
      answer.failed('get', failure.server()),
      waited(),
      answer.failed('get', failure.server()),
      waited(),
      answer.lock(listsMe),
      committed(),
      destroyed(),
    ])
    assert.deepEqual(calls, [
      call.read,
      'wait 100ms',
      call.read,
      'wait 200ms',
      call.read,
      'wait 400ms',
      call.read,
      call.casOut(40n),
      call.destroy,
    ])
    assert.deepEqual(result, E.right({ type: 'Released' }))
  })

  it('should wait what a 429 asks, up to 2 s, plus jitter', () => {
    const { calls } = play(releaseStart({ ...input, hint: holderHint }), releaseNext, [
      answer.failed('txn', failure.server(429, 1200), 0.4), // 1200 × (1 + 0.4/4)
      waited(),
      committed(),
      answer.failed('destroy', failure.server(503, 30_000)),
      waited(),
      destroyed(),
    ])
    assert.deepEqual(calls, [
      call.casOut(40n),
      'wait 1320ms',
      call.casOut(40n),
      call.destroy,
      'wait 2000ms',
      call.destroy,
    ])
  })

  it('should stop the KV part after the fourth failure in a row, destroy, and answer the failure', () => {
    const error = failure.server()
    const { calls, result } = play(releaseStart({ ...input, hint: holderHint }), releaseNext, [
      answer.failed('txn', error),
      waited(),
      answer.failed('txn', error),
      waited(),
      answer.failed('txn', error),
      waited(),
      answer.failed('txn', error),
      destroyed(),
    ])
    assert.equal(calls.filter((c) => c.startsWith('txn')).length, 4)
    assert.equal(calls.at(-1), call.destroy)
    assert.deepEqual(result, E.left(error))
  })

  it('should not retry a permanent failure, and still destroy the session', () => {
    const { calls, result } = play(releaseStart(input), releaseNext, [
      answer.failed('get', failure.denied()),
      destroyed(),
    ])
    assert.deepEqual(calls, [call.read, call.destroy])
    assert.deepEqual(result, E.left(failure.denied()))
  })

  it("should answer the KV part's failure rather than the destroy's", () => {
    const { result } = play(releaseStart(input), releaseNext, [
      answer.failed('get', failure.denied()),
      answer.failed('destroy', failure.badRequest()),
    ])
    assert.deepEqual(result, E.left(failure.denied()))
  })

  it("should answer the destroy's failure after a released slot", () => {
    const error = failure.badRequest()
    const { result } = play(releaseStart({ ...input, hint: holderHint }), releaseNext, [
      committed(),
      answer.failed('destroy', error),
    ])
    assert.deepEqual(result, E.left(error))
  })

  it('should refuse an answer to another call than the one asked', () => {
    const step = releaseStart(input)
    assert.ok(step.type === 'call')
    assert.throws(() => releaseNext(step.state, committed()), TypeError)
  })
})

describe('releaseStart / releaseNext: keeping the session for another contender', () => {
  const keep = { ...input, keepSession: true }
  const notListed = lock('"other":true', 40n)

  it('should end without the destroy after a released slot, and say the session was kept', () => {
    const { calls, result } = play(releaseStart({ ...keep, hint: holderHint }), releaseNext, [
      committed(),
    ])
    assert.deepEqual(calls, [call.casOut(40n)])
    assert.deepEqual(result, E.right({ type: 'Released', sessionKept: true }))
  })

  it('should end without the destroy after a hand-off', () => {
    const { calls, result } = play(releaseStart({ ...keep, hint: handOffHint }), releaseNext, [
      committed(),
    ])
    assert.deepEqual(calls, [call.handOff(40n, '"w1":true')])
    assert.deepEqual(result, E.right({ type: 'HandedOff', heir: 'w1', sessionKept: true }))
  })

  it('should end without the destroy once a waiter deleted its key and .lock does not list it', () => {
    const { calls, result } = play(releaseStart(keep), releaseNext, [
      answer.lock(notListed),
      deleted(),
      answer.lock(notListed),
    ])
    assert.deepEqual(calls, [call.read, call.deleteKey, call.read])
    assert.deepEqual(result, E.right({ type: 'NotListed', sessionKept: true }))
  })

  it('should still destroy the session when it gave up on a churning .lock', () => {
    const { calls, result } = play(
      releaseStart({ ...keep, hint: holderHint, attempts: 1 }),
      releaseNext,
      [rolledBack(0, 1), destroyed()],
    )
    assert.deepEqual(calls, [call.casOut(40n), call.destroy])
    assert.deepEqual(result, E.right({ type: 'GaveUp' }))
  })

  it('should still destroy the session when only its key could go (a corrupt .lock)', () => {
    const { calls, result } = play(releaseStart(keep), releaseNext, [
      answer.lock(lockEntry(prefix, '{"Limit":2,', 40n)),
      deleted(),
      destroyed(),
    ])
    assert.deepEqual(calls, [call.read, call.deleteKey, call.destroy])
    assert.ok(E.isRight(result) && result.right.type === 'KeyOnly')
  })

  it('should still destroy the session after a failure', () => {
    const { calls, result } = play(releaseStart(keep), releaseNext, [
      answer.failed('get', failure.denied()),
      destroyed(),
    ])
    assert.deepEqual(calls, [call.read, call.destroy])
    assert.deepEqual(result, E.left(failure.denied()))
  })
})

describe('releaseStart / releaseNext: the slot of a session Consul ended', () => {
  const gone = { ...input, sessionGone: true, listReads: true }
  const list = `list ${prefix}/`
  /** `.lock` still lists the session; its key went with it. */
  const deadHint = snapshotOf([listsMe, ours('w1', 10n)])

  it('should hand the slot it still holds in .lock to the first waiter, with no destroy', () => {
    const { calls, result } = play(releaseStart({ ...gone, hint: deadHint }), releaseNext, [
      committed(),
    ])
    assert.deepEqual(calls, [call.handOff(40n, '"w1":true')])
    assert.deepEqual(result, E.right({ type: 'HandedOff', heir: 'w1' }))
  })

  it('should list first without a hint, and CAS it out when nobody waits, with no destroy', () => {
    const { calls, result } = play(releaseStart(gone), releaseNext, [
      answer.listing(snapshotOf([listsMe])),
      committed(),
    ])
    assert.deepEqual(calls, [list, call.casOut(40n)])
    assert.deepEqual(result, E.right({ type: 'Released' }))
  })

  it('should end at once, with no delete, when .lock no longer lists it (someone pruned it)', () => {
    const { calls, result } = play(releaseStart(gone), releaseNext, [
      answer.listing(snapshotOf([lock('"other":true', 44n), ours('w1', 10n)])),
    ])
    assert.deepEqual(calls, [list])
    assert.deepEqual(result, E.right({ type: 'NotListed' }))
  })
})
