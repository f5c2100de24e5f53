// The order of a semaphore's queue: arrival within a process, turns across processes (the slots a
// process holds, plus its waiters ahead), so that a process running many contenders does not queue
// them all ahead of a process that arrives after it.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { KVEntry } from '../../src/base/kv-snapshot.js'
import { waitingFlags } from '../../src/base/flags.js'
import { decide } from '../../src/core/semaphore/decide.js'
import { keepsSlot } from '../../src/core/semaphore/refencing.js'
import { waitingContenders } from '../../src/core/semaphore/waiting-contenders.js'
import { bytes, contenderEntry, lockEntry, snapshotOf } from '../../marbles/support/snapshot.js'

const prefix = 'svc/turns'

/** Contender `session` of process `value` (null: no value, as Go's `consul lock` writes). */
const contender = (session: string, createIndex: bigint, value: string | null): KVEntry =>
  contenderEntry(prefix, session, createIndex, { value: value === null ? null : bytes(value) })

const lockOf = (limit: number, holders: readonly string[]): KVEntry =>
  lockEntry(
    prefix,
    JSON.stringify({ Limit: limit, Holders: Object.fromEntries(holders.map((h) => [h, true])) }),
    100n,
  )

/** A waiter of `permits` permits (a writer of a read-write lock: every permit). */
const weighted = (session: string, createIndex: bigint, value: string, permits: number): KVEntry =>
  contenderEntry(prefix, session, createIndex, {
    value: bytes(value),
    flags: waitingFlags(permits),
  })

const queue = (entries: readonly KVEntry[], holders: readonly string[]): string[] =>
  waitingContenders(entries, prefix, new Set(holders)).map((c) => c.session)

describe('waitingContenders: the order of the queue', () => {
  it('is arrival order when each process has one contender', () => {
    const entries = [
      contender('h1', 1n, 'host:1'),
      contender('w3', 4n, 'host:3'),
      contender('w2', 3n, 'host:2'),
      contender('w4', 5n, 'host:4'),
    ]
    assert.deepEqual(queue(entries, ['h1']), ['w2', 'w3', 'w4'])
  })

  it('is arrival order among the contenders of one process, whatever it holds', () => {
    const entries = [
      contender('a1', 1n, 'host:1'),
      contender('a3', 4n, 'host:1'),
      contender('a2', 3n, 'host:1'),
    ]
    assert.deepEqual(queue(entries, ['a1']), ['a2', 'a3'])
  })

  it('puts the first waiter of a process that holds fewer slots ahead of the others', () => {
    // A holds 3 and has three waiters (turns 3, 4, 5); B holds none (turns 0, 1); C none (0).
    const entries = [
      contender('a1', 1n, 'host:A'),
      contender('a2', 2n, 'host:A'),
      contender('a3', 3n, 'host:A'),
      contender('a4', 4n, 'host:A'),
      contender('a5', 5n, 'host:A'),
      contender('b1', 6n, 'host:B'),
      contender('a6', 7n, 'host:A'),
      contender('b2', 8n, 'host:B'),
      contender('c1', 9n, 'host:C'),
    ]
    assert.deepEqual(queue(entries, ['a1', 'a2', 'a3']), ['b1', 'c1', 'b2', 'a4', 'a5', 'a6'])
  })

  it('counts the slots a process holds: the one that holds fewer goes first, then arrival', () => {
    // A holds 2 (its waiter's turn is 2), B holds 1 (turn 1): B's later waiter goes first.
    const entries = [
      contender('a1', 1n, 'host:A'),
      contender('a2', 2n, 'host:A'),
      contender('b1', 3n, 'host:B'),
      contender('a3', 4n, 'host:A'),
      contender('b2', 5n, 'host:B'),
    ]
    assert.deepEqual(queue(entries, ['a1', 'a2', 'b1']), ['b2', 'a3'])
  })

  it('takes a contender without a value (Go) as a process of its own', () => {
    // Two Go contenders are not one process: the second is not sent behind the pool's waiters.
    const entries = [
      contender('a1', 1n, 'host:A'),
      contender('a2', 2n, 'host:A'),
      contender('g1', 3n, null),
      contender('a3', 4n, 'host:A'),
      contender('g2', 5n, null),
      contender('e1', 6n, ''),
    ]
    assert.deepEqual(queue(entries, ['a1']), ['g1', 'g2', 'e1', 'a2', 'a3'])
  })

  it('names the holders whose process holds more than one slot (sharedHolders)', () => {
    const entries = [
      lockOf(4, ['a1', 'b1', 'a2', 'g1']),
      contender('a1', 1n, 'host:A'),
      contender('b1', 2n, 'host:B'),
      contender('a2', 3n, 'host:A'),
      contender('g1', 4n, null),
      contender('g2', 5n, null),
    ]
    const decision = decide(snapshotOf(entries), { prefix, session: 'g2', limit: 4 })
    assert.deepEqual(decision.type === 'Wait' ? decision.view.sharedHolders : undefined, [
      { session: 'a1', slots: 2 },
      { session: 'a2', slots: 2 },
    ])
  })

  it('tells the turn of the first in line (nextTurn)', () => {
    const held = [lockOf(4, ['a1', 'a2']), contender('a1', 1n, 'A'), contender('a2', 2n, 'A')]
    const turnOf = (entries: readonly KVEntry[]): number | undefined => {
      const decision = decide(snapshotOf(entries), { prefix, session: 'a1', limit: 4 })
      return decision.type === 'Held' ? decision.view.nextTurn : -1
    }
    assert.equal(turnOf(held), undefined, 'nobody waits')
    assert.equal(turnOf([...held, contender('a3', 3n, 'A')]), 2, 'A holds 2')
    assert.equal(turnOf([...held, contender('a3', 3n, 'A'), contender('b1', 4n, 'B')]), 0)
  })

  it('makes the first waiter of a process that holds nothing the one that takes a free slot', () => {
    // Limit 4: A holds 3 and waits with a4, B (arrived later) waits with b1; one slot is free.
    const entries = [
      lockOf(4, ['a1', 'a2', 'a3']),
      contender('a1', 1n, 'host:A'),
      contender('a2', 2n, 'host:A'),
      contender('a3', 3n, 'host:A'),
      contender('a4', 4n, 'host:A'),
      contender('b1', 5n, 'host:B'),
    ]
    const snapshot = snapshotOf(entries)
    const b1 = decide(snapshot, { prefix, session: 'b1', limit: 4 })
    const a4 = decide(snapshot, { prefix, session: 'a4', limit: 4 })
    assert.equal(b1.type, 'TryAcquire')
    assert.equal(a4.type, 'Wait')
    assert.equal(a4.type === 'Wait' ? a4.rank : undefined, 1)
  })

  it('keeps a waiter of several permits in its arrival place: later turns do not pass it', () => {
    // A holds 2; b1 (turn 0) arrived before the writer w, b2 and c1 (turn 0 too) after it.
    const entries = [
      contender('a1', 1n, 'host:A'),
      contender('a2', 2n, 'host:A'),
      contender('a3', 3n, 'host:A'),
      contender('b1', 4n, 'host:B'),
      weighted('w', 5n, 'host:W', 3),
      contender('b2', 6n, 'host:B'),
      contender('c1', 7n, 'host:C'),
    ]
    assert.deepEqual(queue(entries, ['a1', 'a2']), ['b1', 'a3', 'w', 'c1', 'b2'])
  })

  it('ranks a waiter of several permits behind the turns of those that arrived before it', () => {
    // The writer's own process holds two readers: its turn (2) does not send it behind c1.
    const entries = [
      contender('r1', 1n, 'host:W'),
      contender('r2', 2n, 'host:W'),
      weighted('w', 3n, 'host:W', 4),
      contender('c1', 4n, 'host:C'),
    ]
    assert.deepEqual(queue(entries, ['r1', 'r2']), ['w', 'c1'])
  })

  it('gives a slot on within the quantum only to a process holding two or more fewer', () => {
    const heldBy = (holders: readonly [string, string][], waiter: [string, string]) => {
      const entries = [
        lockOf(
          4,
          holders.map(([session]) => session),
        ),
        ...holders.map(([session, value], i) => contender(session, BigInt(i + 1), value)),
        contender(waiter[0], 9n, waiter[1]),
      ]
      const decision = decide(snapshotOf(entries), { prefix, session: holders[0]![0], limit: 4 })
      assert.equal(decision.type, 'Held')
      return decision.type === 'Held' ? decision.view : undefined
    }
    // A holds 3, B holds 1 and waits for a second: A's slot goes to B when A's job ends.
    const uneven = heldBy(
      [
        ['a1', 'host:A'],
        ['a2', 'host:A'],
        ['a3', 'host:A'],
        ['b1', 'host:B'],
      ],
      ['b2', 'host:B'],
    )
    assert.equal(uneven?.nextTurn, 1)
    assert.equal(uneven && keepsSlot(uneven, 'a1', true), false, 'A holds two more than B')
    assert.equal(uneven && keepsSlot(uneven, 'b1', true), true, 'B keeps its one slot')
    // A holds 2, B holds 2 and waits for a third: both keep theirs for their quantum.
    const even = heldBy(
      [
        ['a1', 'host:A'],
        ['a2', 'host:A'],
        ['b1', 'host:B'],
        ['b2', 'host:B'],
      ],
      ['b3', 'host:B'],
    )
    assert.equal(even?.nextTurn, 2)
    assert.equal(
      even && keepsSlot(even, 'a1', true),
      true,
      'one more slot than B after a hand-over',
    )
    assert.equal(even && keepsSlot(even, 'a1', false), false, 'the quantum over')
  })

  it('gives a slot on (no quantum) when the first in line waits for several permits', () => {
    const entries = [
      lockOf(4, ['r1', 'r2']),
      contender('r1', 1n, 'host:R'),
      contender('r2', 2n, 'host:S'),
      weighted('w', 3n, 'host:W', 4),
      contender('r3', 4n, 'host:R'),
    ]
    const held = decide(snapshotOf(entries), { prefix, session: 'r1', limit: 4 })
    assert.equal(held.type, 'Held')
    if (held.type !== 'Held') return
    assert.equal(keepsSlot(held.view, 'r1', true), false, 'the writer waits first in line')
    const readersOnly = entries.filter((e) => e.session !== 'w')
    const alone = decide(snapshotOf(readersOnly), { prefix, session: 'r1', limit: 4 })
    assert.equal(
      alone.type === 'Held' && keepsSlot(alone.view, 'r1', true),
      true,
      'within its quantum',
    )
  })
})
