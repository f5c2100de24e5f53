// Property test of `decide` on thousands of generated snapshots (seeded; the seed is printed on
// failure and can be replayed with DECIDE_SEED=<seed>).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import * as E from 'fp-ts/lib/Either.js'
import { LOCK_FLAGS, SEMAPHORE_FLAGS } from '../../src/consul/flags.js'
import type { KVEntry } from '../../src/consul/types.js'
import { decide } from '../../src/core/decide.js'
import { decodeLock } from '../../src/core/decode-lock.js'
import type { LockShape } from '../../src/core/events.js'

/** mulberry32: a small, fast, seedable PRNG returning floats in [0, 1). */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const prefix = 'svc/sem'
const utf8 = new TextEncoder()
type LockKind = 'absent' | 'empty' | 'valid' | 'corrupt' | 'conflict' | 'limit-conflict'

interface Case {
  readonly entries: KVEntry[]
  readonly limit: number
  readonly kind: LockKind
  readonly shape: LockShape | undefined
  readonly lockIndex: bigint
  readonly holders: readonly string[]
  readonly fairness: boolean
  readonly ignoreRank: boolean
}

function generate(random: () => number): Case {
  const int = (n: number): number => Math.floor(random() * n)
  const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)] as T
  const limit = 1 + int(5)
  const pool = Array.from({ length: 2 + int(18) }, (_, i) => `s${i}`).concat('me')
  const entries: KVEntry[] = []
  let index = 100n
  for (const session of pool) {
    const roll = random()
    if (roll < 0.15) continue // no contender key: a dead session if listed
    entries.push({
      key: `${prefix}/${session}`,
      value: null,
      flags: random() < 0.9 ? SEMAPHORE_FLAGS : LOCK_FLAGS,
      // Some keys are unlocked or locked by someone else: not contenders.
      session: roll < 0.25 ? undefined : roll < 0.3 ? pick(pool) : session,
      lockIndex: 1n,
      createIndex: BigInt(1 + int(50)),
      modifyIndex: (index += 1n),
    })
  }
  const holders = pool.filter(() => random() < limit / pool.length + 0.05)
  const kind = pick<LockKind>([
    'absent',
    'empty',
    'valid',
    'valid',
    'valid',
    'corrupt',
    'conflict',
    'limit-conflict',
  ])
  const shape = pick<LockShape>(['go-map', 'guide-list', 'java-list'])
  const lockLimit = kind === 'limit-conflict' ? limit + 1 + int(3) : limit
  const body =
    kind === 'corrupt'
      ? pick(['{"Limit":', '[1]', `{"Limit":${limit},"Holders":[1]}`, `{"Limit":-1}`, 'null'])
      : shape === 'go-map'
        ? JSON.stringify({
            Holders: Object.fromEntries(holders.map((h) => [h, true])),
            Limit: lockLimit,
          })
        : shape === 'guide-list'
          ? JSON.stringify({ Limit: lockLimit, Holders: holders })
          : JSON.stringify({ holders, limit: lockLimit, extra: 1 })
  const lockIndex = index + 1n + BigInt(int(10))
  if (kind !== 'absent') {
    entries.push({
      key: `${prefix}/.lock`,
      value: kind === 'empty' ? null : utf8.encode(body),
      flags: kind === 'conflict' ? LOCK_FLAGS : random() < 0.8 ? SEMAPHORE_FLAGS : 0n,
      lockIndex: 0n,
      createIndex: 1n,
      modifyIndex: lockIndex,
    })
  }
  entries.sort((a, b) => (a.key < b.key ? -1 : 1))
  return {
    entries,
    limit,
    kind,
    shape: kind === 'valid' ? shape : undefined,
    lockIndex: kind === 'absent' ? 0n : lockIndex,
    holders: kind === 'valid' ? holders : [],
    fairness: random() < 0.7,
    ignoreRank: random() < 0.2,
  }
}

function check(c: Case): void {
  const decision = decide(
    { index: 1000n, entries: c.entries },
    { prefix, session: 'me', limit: c.limit, fairness: c.fairness, ignoreRank: c.ignoreRank },
  )
  const expectedProblem = {
    corrupt: 'CorruptLock',
    conflict: 'Conflict',
    'limit-conflict': 'LimitConflict',
  }[c.kind as string]
  if (expectedProblem !== undefined) {
    assert.equal(decision.type, expectedProblem, 'a corrupt or conflicting .lock is never written')
    return
  }
  // The oracle: live sessions are those holding some key of the listing.
  const live = new Set(c.entries.flatMap((e) => (e.session === undefined ? [] : [e.session])))
  const liveHolders = c.holders.filter((h) => live.has(h))
  if (liveHolders.includes('me')) {
    assert.equal(decision.type, 'Held', 'a live holder is Held, never written again')
    return
  }
  if (decision.type !== 'TryAcquire') return
  assert.ok(liveHolders.length < c.limit, 'tries only with a free slot')
  assert.equal(decision.cas, c.lockIndex, "cas is .lock's ModifyIndex, 0n if absent")
  const written = decodeLock(decision.body, 'k')
  assert.ok(E.isRight(written) && written.right !== undefined, 'the body decodes')
  const body = written.right
  assert.equal(body.limit, c.limit)
  assert.equal(body.shape, c.shape ?? 'go-map', 'written in the shape read')
  assert.ok(body.holders.includes('me'), 'the deciding session is in the body')
  for (const h of liveHolders) assert.ok(body.holders.includes(h), `live holder ${h} kept`)
  assert.ok(
    body.holders.every((h) => live.has(h)),
    'dead holders pruned',
  )
  assert.ok(body.holders.length <= c.limit, 'never more live holders than the limit')
}

describe('decide (property)', () => {
  it('should keep its safety properties on 5000 generated snapshots', () => {
    const seed = Number(process.env.DECIDE_SEED ?? 0x5eed)
    const random = mulberry32(seed)
    const seen = new Map<string, number>()
    for (let i = 0; i < 5000; i++) {
      const c = generate(random)
      try {
        check(c)
      } catch (error) {
        const why = error instanceof Error ? error.message : String(error)
        assert.fail(
          `seed ${seed}, case ${i}: ${why}\n${JSON.stringify(c, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v instanceof Uint8Array ? new TextDecoder().decode(v) : v))}`,
        )
      }
      const type = decide(
        { index: 1000n, entries: c.entries },
        { prefix, session: 'me', limit: c.limit },
      ).type
      seen.set(type, (seen.get(type) ?? 0) + 1)
    }
    // The generator must reach every outcome, or the properties above prove little.
    for (const type of [
      'Held',
      'TryAcquire',
      'Wait',
      'NotContending',
      'CorruptLock',
      'Conflict',
      'LimitConflict',
    ]) {
      assert.ok((seen.get(type) ?? 0) > 20, `${type} reached ${seen.get(type) ?? 0} times`)
    }
    console.log(`seed ${seed}: ${JSON.stringify(Object.fromEntries(seen))}`)
  })
})
