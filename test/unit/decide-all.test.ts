// decideAll: an all-or-nothing contender's decision on one snapshot of each of its prefixes, as
// each prefix's semaphore decision combined: it tries only when it may take a slot of every one,
// and holds only while every `.lock` lists it.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ALL_SLOTS_FLAGS } from '../../src/base/flags.js'
import type { KVEntry } from '../../src/base/kv-snapshot.js'
import { decideAll } from '../../src/core/semaphore/decide-all.js'
import { contenderEntry, lockEntry, snapshotOf } from '../../marbles/support/snapshot.js'

const targets = [
  { prefix: 'svc/a', limit: 1 },
  { prefix: 'svc/b', limit: 2 },
]

/** Prefix `prefix` with `.lock` listing `holders`, and the keys of `keys` (session, CreateIndex). */
const prefixOf = (
  prefix: string,
  limit: number,
  holders: readonly string[],
  keys: readonly [string, bigint][],
  index = 10n,
) =>
  snapshotOf([
    lockEntry(
      prefix,
      JSON.stringify({ Limit: limit, Holders: Object.fromEntries(holders.map((h) => [h, true])) }),
      index,
    ),
    ...keys.map(([session, createIndex]): KVEntry =>
      contenderEntry(prefix, session, createIndex, {
        flags: session.startsWith('me') ? ALL_SLOTS_FLAGS : undefined,
      }),
    ),
  ])

describe('decideAll', () => {
  it('tries with one write per .lock when first in line with a free slot in every prefix', () => {
    const decision = decideAll(
      [
        prefixOf('svc/a', 1, [], [['me', 5n]]),
        prefixOf(
          'svc/b',
          2,
          ['x'],
          [
            ['x', 2n],
            ['me', 5n],
          ],
        ),
      ],
      targets,
      'me',
    )
    assert.equal(decision.type, 'TryAcquire')
    if (decision.type !== 'TryAcquire') return
    assert.deepEqual(
      decision.writes.map((w) => [w.prefix, w.cas]),
      [
        ['svc/a', 10n],
        ['svc/b', 10n],
      ],
    )
  })

  it('waits, writing nothing, while one prefix has no free slot, however free the others are', () => {
    const decision = decideAll(
      [
        prefixOf(
          'svc/a',
          1,
          ['x'],
          [
            ['x', 2n],
            ['me', 5n],
          ],
        ),
        prefixOf('svc/b', 2, [], [['me', 5n]]),
      ],
      targets,
      'me',
    )
    assert.deepEqual(decision, { type: 'Wait', ranks: [0, 0] })
  })

  it('waits behind an earlier all-or-nothing contender in every prefix they share, whatever the order listed', () => {
    // `early` arrived first: it is ahead in both, so `me` waits in both, and `early` never waits on `me`.
    const a = prefixOf(
      'svc/a',
      1,
      [],
      [
        ['early', 4n],
        ['me', 5n],
      ],
    )
    const b = prefixOf(
      'svc/b',
      2,
      ['x', 'y'],
      [
        ['x', 1n],
        ['y', 2n],
        ['early', 4n],
        ['me', 5n],
      ],
    )
    const mine = decideAll([a, b], targets, 'me')
    assert.equal(mine.type, 'Wait')
    const theirs = decideAll([b, a], [...targets].reverse(), 'early')
    assert.deepEqual(theirs, { type: 'Wait', ranks: [0, 0] })
  })

  it('holds only while every .lock lists it; listed in some only, it holds none', () => {
    const a = prefixOf('svc/a', 1, ['me'], [['me', 5n]])
    const held = [a, prefixOf('svc/b', 2, ['me'], [['me', 5n]])]
    assert.deepEqual(decideAll(held, targets, 'me'), { type: 'Held' })
    const partial = [a, prefixOf('svc/b', 2, [], [['me', 5n]])]
    assert.deepEqual(decideAll(partial, targets, 'me'), { type: 'Partial', listedIn: ['svc/a'] })
  })

  it('joins the prefixes where its key is missing', () => {
    const decision = decideAll(
      [prefixOf('svc/a', 1, [], [['me', 5n]]), prefixOf('svc/b', 2, [], [])],
      targets,
      'me',
    )
    assert.deepEqual(decision, { type: 'Join', prefixes: ['svc/b'] })
  })

  it('stops at a prefix problem, naming the prefix', () => {
    const decision = decideAll(
      [prefixOf('svc/a', 1, [], [['me', 5n]]), prefixOf('svc/b', 3, [], [['me', 5n]])],
      targets,
      'me',
    )
    assert.equal(decision.type, 'Problem')
    assert.equal(decision.type === 'Problem' ? decision.prefix : '', 'svc/b')
  })
})
