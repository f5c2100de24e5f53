// A session named by the start of its ID, as `rxsem run` and `rxsem watch` print it (8
// characters), is looked up among the sessions of the prefix: `.lock`'s holders, the session
// holding a leader lock, and the contender keys.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { KVEntry } from '../../src/base/kv-snapshot.js'
import {
  isFullSessionId,
  resolveSessionPrefix,
  sessionsAt,
} from '../../src/core/semaphore/session-prefix.js'
import { LOCK_FLAGS, SEMAPHORE_FLAGS } from '../../src/base/flags.js'

const a = '49e92154-0c4e-5b6a-8f2d-3a1b2c3d4e5f'
const b = '49e9aaaa-1111-2222-3333-444455556666'
const c = '4ca8e74b-6350-7587-addf-a18084928f3c'
const dead = '0badc0de-0000-1111-2222-333344445555'

const entry = (key: string, value: string, more: Partial<KVEntry> = {}): KVEntry => ({
  key,
  value: new TextEncoder().encode(value),
  flags: SEMAPHORE_FLAGS,
  lockIndex: 1n,
  createIndex: 10n,
  modifyIndex: 10n,
  ...more,
})

describe('resolveSessionPrefix', () => {
  it('takes a full ID as it is, and the one session a start names', () => {
    assert.deepEqual(resolveSessionPrefix(a, [a, b, c]), { type: 'found', session: a })
    assert.deepEqual(resolveSessionPrefix('4ca8e74b', [a, b, c]), { type: 'found', session: c })
    assert.deepEqual(resolveSessionPrefix(' 49E92154 ', [a, b, c]), { type: 'found', session: a })
  })

  it('refuses a start that several sessions share, naming them in full', () => {
    assert.deepEqual(resolveSessionPrefix('49e9', [c, b, a]), {
      type: 'ambiguous',
      candidates: [a, b],
    })
  })

  it('refuses a start no session has, naming the sessions there are', () => {
    assert.deepEqual(resolveSessionPrefix('ffff', [c, a]), { type: 'none', known: [a, c] })
    assert.deepEqual(resolveSessionPrefix('49e9', []), { type: 'none', known: [] })
  })

  it('refuses a start of fewer than 4 characters, even when one session alone starts so', () => {
    assert.deepEqual(resolveSessionPrefix('4ca', [a, c]), { type: 'short', known: [a, c] })
    assert.deepEqual(resolveSessionPrefix('', [a]), { type: 'short', known: [a] })
    assert.deepEqual(resolveSessionPrefix('4ca8', [a, c]), { type: 'found', session: c })
  })

  it('tells a full ID from a start', () => {
    assert.equal(isFullSessionId(a), true)
    assert.equal(isFullSessionId('49e92154'), false)
  })
})

describe('sessionsAt', () => {
  it("lists .lock's holders (a dead one too) and the contender keys' sessions, once each", () => {
    const entries = [
      entry('jobs/.lock', JSON.stringify({ Limit: 2, Holders: { [a]: true, [dead]: true } })),
      entry(`jobs/${a}`, 'host:1', { session: a }),
      entry(`jobs/${b}`, 'host:2', { session: b }),
      entry(`jobs/deeper/${c}`, 'elsewhere', { session: c }),
    ]
    assert.deepEqual([...sessionsAt(entries, 'jobs')].sort(), [a, b, dead].sort())
  })

  it('lists the session holding a leader lock', () => {
    const entries = [entry('jobs/.lock', 'leader', { flags: LOCK_FLAGS, session: c })]
    assert.deepEqual(sessionsAt(entries, 'jobs'), [c])
  })

  it('adds no holders from a .lock it cannot read', () => {
    const entries = [entry('jobs/.lock', '{not json'), entry(`jobs/${a}`, 'x', { session: a })]
    assert.deepEqual(sessionsAt(entries, 'jobs'), [a])
  })
})
