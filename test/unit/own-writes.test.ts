// The freshest `.lock` a process knows (src/core/semaphore/own-writes.ts): the watch's listing
// overlaid with the answers of the process's own writes since, the rules that keep it safe (a
// newer listing supersedes it, a reset drops it, a body that could not be read is never built on,
// a holder newer than the listing is never pruned), and the decisions made on it.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import { CONTENDER_FLAGS, HOLDER_FLAGS, SEMAPHORE_FLAGS } from '../../src/base/flags.js'
import type { KVEntry } from '../../src/base/kv-snapshot.js'
import type { TxnOp, TxnResult } from '../../src/base/txn.js'
import { handOffOps, casOutOps, refenceOps } from '../../src/core/release/release-ops.js'
import { decide } from '../../src/core/semaphore/decide.js'
import { handOffSlot } from '../../src/core/semaphore/hand-off.js'
import {
  afterListing,
  freshestPrefix,
  learnLock,
  learnTxn,
  listingOf,
  staleCas,
  type OwnWrites,
} from '../../src/core/semaphore/own-writes.js'
import { prefixView } from '../../src/core/semaphore/prefix-view.js'
import type { ContenderInput } from '../../src/core/contender/contender-input.js'
import {
  initialContenderState,
  type ContenderState,
} from '../../src/core/contender/contender-state-model.js'
import { contenderStep } from '../../src/core/contender/contender-step.js'
import { bytes, contenderEntry, lockEntry, snapshotOf } from '../../marbles/support/snapshot.js'

const prefix = 'svc/lock'
const options = { prefix, limit: 2 }
const ours = (session: string, createIndex: bigint, flags = CONTENDER_FLAGS): KVEntry =>
  contenderEntry(prefix, session, createIndex, { flags, value: bytes(session) })
const lockOf = (holders: readonly string[], index: bigint): KVEntry =>
  lockEntry(prefix, `{"Limit":2,"Holders":{${holders.map((h) => `"${h}":true`).join(',')}}}`, index)
const sessionCreated = (session: string): ContenderInput => ({
  type: 'session-created',
  session,
  ttlMs: 10_000,
  sentAt: 0,
})
const holdersOf = (view: ReturnType<typeof prefixView>): readonly string[] =>
  E.isRight(view) ? view.right.view.liveHolders : assert.fail('no view')
const waitingOf = (view: ReturnType<typeof prefixView>): readonly string[] =>
  E.isRight(view) ? view.right.view.waiting.map((w) => w.session) : assert.fail('no view')

/** The listing at 40: a and b hold, w1 and w2 wait (in that order). */
const listing = snapshotOf(
  [
    lockOf(['a', 'b'], 40n),
    ours('a', 5n, HOLDER_FLAGS),
    ours('b', 6n, HOLDER_FLAGS),
    ours('w1', 10n),
    ours('w2', 11n),
  ],
  40n,
)

/** What Consul answers a committed transaction: an entry per written key, at `index`. */
function committedAt(ops: readonly TxnOp[], index: bigint, before = listing): TxnResult {
  const results: KVEntry[] = []
  for (const op of ops) {
    const was = before.entries.find((e) => e.key === op.key)
    if (op.verb === 'check-session' && was !== undefined) results.push(was)
    if (op.verb === 'cas' || op.verb === 'set' || op.verb === 'lock') {
      results.push({
        key: op.key,
        value: null,
        flags: op.flags ?? 0n,
        session: op.verb === 'lock' ? op.session : was?.session,
        lockIndex: 1n,
        createIndex: op.verb === 'lock' || was === undefined ? index : was.createIndex,
        modifyIndex: index,
      })
    }
  }
  return { committed: true, results }
}

/** a hands its slot to w1 at 41, as the hand-off of a's release writes it. */
function aHandsToW1(): { known: OwnWrites | undefined; ops: TxnOp[] } {
  const handOff = handOffSlot(listing, { ...options, session: 'a' })
  assert.ok(handOff, 'a hands its slot on')
  assert.equal(handOff.heir, 'w1')
  const ops = handOffOps(prefix, `${prefix}/a`, handOff)
  return { known: learnTxn(undefined, prefix, ops, committedAt(ops, 41n)), ops }
}

describe('the freshest prefix a process knows (own writes over the listing)', () => {
  it('is the listing itself while nothing newer is known', () => {
    assert.equal(freshestPrefix(listing, prefix, undefined), listing)
  })

  it("takes .lock and the keys as the process's own committed write left them", () => {
    const { known } = aHandsToW1()
    const fresh = freshestPrefix(listing, prefix, known)
    assert.notEqual(fresh, listing)
    assert.equal(fresh.index, 40n, 'the listing index: its keys are as of then')
    assert.equal(listingOf(fresh), listing)
    const view = prefixView(fresh, options)
    assert.deepEqual(holdersOf(view), ['b', 'w1'])
    // a's key went with the hand-off; w2 is first in line now.
    assert.deepEqual(waitingOf(view), ['w2'])
    assert.ok(E.isRight(view))
    assert.equal(view.right.view.lockIndex, 41n)
    // The heir's key as the hand-off marked it: its index is the heir's fencing token.
    assert.equal(view.right.acquired.get('w1'), 41n)
    assert.deepEqual(decide(fresh, { ...options, session: 'w1' }), {
      type: 'Held',
      view: view.right.view,
      acquiredAt: 41n,
    })
  })

  it("builds the next holder's release on it: the hand-off goes to whoever is first in line now", () => {
    const { known } = aHandsToW1()
    const fresh = freshestPrefix(listing, prefix, known)
    const next = handOffSlot(fresh, { ...options, session: 'b' })
    assert.ok(next)
    assert.equal(next.heir, 'w2')
    assert.equal(next.cas, 41n, 'on the index of the write before, not the listing')
    // On the listing alone, b would have named w1 (served already) on an index gone.
    const stale = handOffSlot(listing, { ...options, session: 'b' })
    assert.equal(stale?.heir, 'w1')
    assert.equal(stale?.cas, 40n)
  })

  it('keeps the greater index: an older answer does not replace a newer one', () => {
    const { known } = aHandsToW1()
    const older = learnLock(known, prefix, lockOf(['a', 'b'], 40n))
    assert.equal(older, known)
    const newer = learnLock(known, prefix, lockOf(['b', 'w1', 'x'], 45n))
    assert.equal(newer?.lock?.modifyIndex, 45n)
  })

  it('is superseded by a listing at or above its index, and kept over one below it', () => {
    const { known } = aHandsToW1()
    assert.equal(afterListing(known, { ...listing, index: 40n }, false), known)
    const caughtUp = snapshotOf([lockOf(['b', 'w1'], 41n), ours('b', 6n), ours('w2', 11n)], 41n)
    assert.equal(afterListing(known, caughtUp, false), undefined)
    // Another process wrote .lock after us: the listing shows that, not our write.
    const later = snapshotOf([lockOf(['b', 'x'], 44n), ours('b', 6n)], 44n)
    assert.equal(afterListing(known, later, false), undefined)
    assert.equal(freshestPrefix(later, prefix, known), later)
  })

  it('is dropped by a reset (indexes went back: an agent restarted or restored)', () => {
    const { known } = aHandsToW1()
    const restored = snapshotOf([lockOf(['a'], 7n), ours('a', 5n)], 8n)
    assert.equal(afterListing(known, restored, true), undefined)
  })

  it("never prunes a holder that the listing's .lock did not list: its key may be newer than the listing", () => {
    // Another process's contender x joined and took a slot after the listing; the process read
    // .lock (a release's read after a lost CAS) and wrote it on, x still listed.
    const write = casOutOps(prefix, `${prefix}/a`, {
      body: bytes('{"Limit":2,"Holders":{"b":true,"x":true}}'),
      cas: 44n,
    })
    const known = learnTxn(undefined, prefix, write, committedAt(write, 45n))
    const fresh = freshestPrefix(listing, prefix, known)
    const view = prefixView(fresh, options)
    assert.deepEqual(holdersOf(view), ['b', 'x'], 'x has no key in the listing, and is kept')
    // No free slot: w1 waits, where pruning x would have let it write .lock without x.
    assert.equal(decide(fresh, { ...options, session: 'w1' }).type, 'Wait')
  })

  it('still prunes a holder both .locks list whose key the listing shows gone', () => {
    const gone = snapshotOf([lockOf(['a', 'dead'], 40n), ours('a', 5n), ours('w1', 10n)], 40n)
    const write = casOutOps(prefix, `${prefix}/a`, {
      body: bytes('{"Limit":2,"Holders":{"dead":true}}'),
      cas: 40n,
    })
    const known = learnTxn(undefined, prefix, write, committedAt(write, 41n, gone))
    const view = prefixView(freshestPrefix(gone, prefix, known), options)
    assert.deepEqual(holdersOf(view), [])
    assert.ok(E.isRight(view))
    assert.deepEqual(view.right.view.deadHolders, ['dead'])
  })

  it('never overlays a .lock the listing shows unreadable: its problem stands', () => {
    const { known } = aHandsToW1()
    const corrupt = snapshotOf([lockEntry(prefix, '{"Limit":', 40n), ours('b', 6n)], 40n)
    assert.equal(freshestPrefix(corrupt, prefix, known), corrupt)
    const foreign = snapshotOf([lockOf(['b'], 40n), ours('b', 6n)], 40n)
    const conflict = {
      ...foreign,
      entries: foreign.entries.map((e) => (e.key.endsWith('.lock') ? { ...e, flags: 7n } : e)),
    }
    assert.equal(freshestPrefix(conflict, prefix, known), conflict)
  })

  it('learns nothing from a missing or unreadable read of .lock, nor from a rollback', () => {
    const { known, ops } = aHandsToW1()
    assert.equal(learnLock(known, prefix, null), known)
    assert.equal(learnLock(known, prefix, lockEntry(prefix, 'not json', 50n)), known)
    const lost: TxnResult = { committed: false, errors: [{ opIndex: 1, what: 'index is stale' }] }
    assert.equal(learnTxn(known, prefix, ops, lost), known)
  })

  it('learns .lock from the read of a Refence, and a rotated key at the tail of the queue', () => {
    const shared = prefixView(listing, options)
    assert.ok(E.isRight(shared))
    const { view } = shared.right
    const refence = refenceOps(prefix, `${prefix}/b`, 'b', bytes('b'), {
      type: 'Refence',
      view,
      cas: 40n,
    })
    const read: TxnResult = { committed: true, results: [lockOf(['a', 'b'], 43n)] }
    assert.equal(learnTxn(undefined, prefix, refence, read)?.lock?.modifyIndex, 43n)
    // b rotates: its slot to w1, its key deleted and locked again in the same write.
    const handOff = handOffSlot(listing, { ...options, session: 'b' })
    assert.ok(handOff)
    const rotate = refenceOps(prefix, `${prefix}/b`, 'b', bytes('b'), {
      type: 'Rotate',
      view,
      body: handOff.body,
      cas: handOff.cas,
      handOff,
    })
    const known = learnTxn(undefined, prefix, rotate, committedAt(rotate, 42n))
    const fresh = prefixView(freshestPrefix(listing, prefix, known), options)
    assert.deepEqual(holdersOf(fresh), ['a', 'w1'])
    assert.deepEqual(waitingOf(fresh), ['w2', 'b'], 'b queues again behind w2')
  })

  it('tells a CAS known to lose: on an index older than an answer or the last listing', () => {
    const { known } = aHandsToW1()
    const on = (index: bigint): TxnOp[] => [
      { verb: 'cas', key: `${prefix}/.lock`, value: null, flags: SEMAPHORE_FLAGS, index },
    ]
    assert.equal(staleCas(known, undefined, prefix, on(40n)), true)
    assert.equal(staleCas(known, undefined, prefix, on(41n)), false)
    assert.equal(staleCas(undefined, 44n, prefix, on(41n)), true)
    assert.equal(staleCas(undefined, undefined, prefix, on(0n)), false)
    assert.equal(
      staleCas(known, undefined, prefix, [{ verb: 'get', key: `${prefix}/.lock` }]),
      false,
    )
  })
})

describe("a contender's fencing token on the freshest prefix", () => {
  const contender = { prefix, limit: 2 }
  const step = (state: ContenderState, input: ContenderInput, now: number): ContenderState =>
    contenderStep(state, input, now, contender).state
  /** w1 of this process, waiting on the listing at 40. */
  const waitingW1 = (): ContenderState => {
    const created = step(initialContenderState, sessionCreated('w1'), 0)
    const waiting = step(created, { type: 'snapshot', snapshot: listing }, 1)
    assert.equal(waiting.decision?.type, 'Wait')
    return waiting
  }
  /**
   * Other processes: a hands its slot to w1 at 41 (w1's key marked at 41), b to w2 at 43. This
   * process only reads `.lock` at 43 (a Refence of another of its contenders), not w1's key.
   */
  const lockAt43 = lockOf(['w1', 'w2'], 43n)
  const overlaid = freshestPrefix(listing, prefix, learnLock(undefined, prefix, lockAt43))

  it("takes no token from a .lock newer than the keys: its index is another holder's token", () => {
    const state = step(waitingW1(), { type: 'snapshot', snapshot: overlaid }, 2)
    assert.equal(state.decision?.type, 'Held', '.lock at 43 lists w1')
    assert.equal(state.fencingToken, undefined, 'not 43, the index of the write that admitted w2')
    assert.equal(state.holding, false, 'no token known: not holding yet')
    assert.equal(state.write, undefined, 'and nothing to write: the listing will tell')
  })

  it('holds under the index on its own key once the listing shows the hand-off', () => {
    const overlaidFirst = step(waitingW1(), { type: 'snapshot', snapshot: overlaid }, 2)
    const caughtUp = snapshotOf(
      [
        lockAt43,
        { ...ours('w1', 10n, HOLDER_FLAGS), modifyIndex: 41n },
        { ...ours('w2', 11n, HOLDER_FLAGS), modifyIndex: 43n },
      ],
      43n,
    )
    const state = step(overlaidFirst, { type: 'snapshot', snapshot: caughtUp }, 3)
    assert.equal(state.holding, true)
    assert.equal(state.fencingToken, 41n, "the hand-off's index, w1's own")
  })
})
