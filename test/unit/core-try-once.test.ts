// The try-once rule (`tryOnceVerdict`) as a table of facts and verdicts, and the library's reading
// of it on the core's state (`tryOnceRefused`), which `tryAcquire` and `tryLead` give up on.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  initialContenderState,
  type ContenderState,
} from '../../src/core/contender/contender-state-model.js'
import { tryOnceFacts, tryOnceRefused } from '../../src/core/contender/try-once-refused.js'
import {
  tryOnceVerdict,
  type TryOnceFacts,
  type TryOnceVerdict,
} from '../../src/core/contender/try-once-verdict.js'
import type { Decision, SemaphoreView } from '../../src/core/events.js'

const waiting: TryOnceFacts = {
  holding: false,
  place: 'contending',
  freeSlots: 1,
  weight: 1,
  rank: 0,
  ranked: false,
  lockDelayed: false,
}

describe('tryOnceVerdict', () => {
  const rows: [string, Partial<TryOnceFacts>, TryOnceVerdict][] = [
    ['holding', { holding: true }, 'held'],
    ['holding, even where the slots say full', { holding: true, freeSlots: 0 }, 'held'],
    ['no decision or key yet', { place: 'none', freeSlots: 0 }, 'undecided'],
    ['listed, holding not yet true', { place: 'listed', freeSlots: 0 }, 'undecided'],
    ['a prefix problem (its error follows)', { place: 'problem', freeSlots: 0 }, 'undecided'],
    ['a free slot, its write on the way', {}, 'undecided'],
    ['no free slot', { freeSlots: 0 }, 'not-held'],
    ['a lock held by another (no slot)', { freeSlots: 0, rank: undefined }, 'not-held'],
    ['the lock refused for a lock-delay', { rank: undefined, lockDelayed: true }, 'not-held'],
    ['unranked, behind waiters, a slot free', { rank: 3, freeSlots: 1 }, 'undecided'],
    [
      'ranked, the free slots for waiters ahead',
      { ranked: true, rank: 2, freeSlots: 2 },
      'not-held',
    ],
    ['ranked, a free slot in its turn', { ranked: true, rank: 1, freeSlots: 2 }, 'undecided'],
    ['ranked, no free slot', { ranked: true, rank: 0, freeSlots: 0 }, 'not-held'],
  ]
  for (const [facts, change, verdict] of rows) {
    it(`should answer ${verdict} for: ${facts}`, () =>
      assert.equal(tryOnceVerdict({ ...waiting, ...change }), verdict))
  }
})

describe('tryOnceRefused (the rule on the core state)', () => {
  const view = (liveHolders: string[], limit = 2): SemaphoreView => ({
    limit,
    shape: 'go-map',
    lockIndex: 10n,
    liveHolders,
    deadHolders: [],
    waiting: [],
    sharedHolders: [],
    nextTurn: undefined,
  })
  const tryAcquire: Decision = {
    type: 'TryAcquire',
    view: view(['a']),
    body: new Uint8Array(),
    cas: 10n,
    rank: 1,
  }
  const state = (decision: Decision | undefined, change: Partial<ContenderState> = {}) => ({
    ...initialContenderState,
    session: 'me',
    connected: true,
    decision,
    ...change,
  })
  const rows: [string, ContenderState, boolean][] = [
    ['before any decision', state(undefined), false],
    ['while its key is written', state({ type: 'NotContending', view: view([]) }), false],
    [
      'when all slots are held',
      state({ type: 'Wait', view: view(['a', 'b']), rank: 0, freeSlots: 0 }),
      true,
    ],
    [
      'when another session holds the lock',
      state({ type: 'Wait', view: view(['x'], 1), rank: undefined, freeSlots: 0 }),
      true,
    ],
    [
      'while its CAS for a free slot is on the way',
      state(tryAcquire, { write: tryAcquire }),
      false,
    ],
    ['after a refused CAS, before the next snapshot', state(tryAcquire), false],
    ['when the lock write was refused for a lock-delay', state(tryAcquire, { retryAt: 250 }), true],
    ['when listed, before holding', state({ type: 'Held', view: view(['me']) }), false],
    ['while holding', state({ type: 'Held', view: view(['me']) }, { holding: true }), false],
    [
      'after a prefix problem',
      state({ type: 'CorruptLock', key: 'p/.lock', reason: 'not JSON' }),
      false,
    ],
    [
      'after its session is gone',
      state(
        { type: 'Wait', view: view(['a', 'b']), rank: 0, freeSlots: 0 },
        { retired: 'session-gone' },
      ),
      false,
    ],
  ]
  for (const [when, s, refused] of rows) {
    it(`should ${refused ? '' : 'not '}give up ${when}`, () =>
      assert.equal(tryOnceRefused(s), refused))
  }

  it('should read the free slots from the decision view, unranked', () => {
    assert.deepEqual(tryOnceFacts(state(tryAcquire, { write: tryAcquire })), {
      holding: false,
      place: 'contending',
      freeSlots: 1,
      weight: 1,
      rank: 1,
      ranked: false,
      lockDelayed: false,
    })
  })
})
