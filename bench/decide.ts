// Figure 5b, the pure core: `decide` on one snapshot of 100 / 1,000 / 10,000 contender keys, to
// show that its cost grows linearly (µs per key roughly flat). Absorbs the old decide.bench.ts;
// `npx tsx bench/decide.ts` still runs it alone.
import { SEMAPHORE_FLAGS } from '../src/base/flags.js'
import type { KVEntry, KVSnapshot } from '../src/base/kv-snapshot.js'
import { decide } from '../src/core/semaphore/decide.js'

const prefix = 'bench/sem'
const limit = 10

export interface DecideRow {
  readonly contenders: number
  readonly iterations: number
  readonly usPerSnapshot: number
  readonly usPerKey: number
  readonly decision: string
}

function snapshotOf(contenders: number): KVSnapshot {
  const entries: KVEntry[] = []
  const holders: Record<string, true> = {}
  for (let i = 0; i < contenders; i++) {
    const session = `00000000-0000-0000-0000-${i.toString(16).padStart(12, '0')}`
    // Shuffled CreateIndex, so the ranking has real sorting to do.
    const createIndex = BigInt(((i * 7919) % contenders) + 1)
    entries.push({
      key: `${prefix}/${session}`,
      value: null,
      flags: SEMAPHORE_FLAGS,
      session,
      lockIndex: 1n,
      createIndex,
      modifyIndex: createIndex,
    })
    if (i < limit - 1) holders[session] = true
  }
  // A dead holder, so that pruning has work to do too.
  holders['dead-holder'] = true
  entries.push({
    key: `${prefix}/.lock`,
    value: new TextEncoder().encode(JSON.stringify({ Limit: limit, Holders: holders })),
    flags: SEMAPHORE_FLAGS,
    lockIndex: 0n,
    createIndex: 1n,
    modifyIndex: BigInt(contenders + 1),
  })
  entries.sort((a, b) => (a.key < b.key ? -1 : 1))
  return { index: BigInt(contenders + 1), entries }
}

function time(snapshot: KVSnapshot, session: string, iterations: number): number {
  const options = { prefix, session, limit }
  for (let i = 0; i < Math.max(5, iterations / 10); i++) decide(snapshot, options) // warm-up
  const start = performance.now()
  for (let i = 0; i < iterations; i++) decide(snapshot, options)
  return ((performance.now() - start) * 1000) / iterations
}

export function measureDecide(quick = false): DecideRow[] {
  const sizes: readonly (readonly [number, number])[] = [
    [100, quick ? 2_000 : 20_000],
    [1_000, quick ? 200 : 2_000],
    [10_000, quick ? 20 : 200],
  ]
  return sizes.map(([contenders, iterations]) => {
    const snapshot = snapshotOf(contenders)
    // The last-created contender: it waits, the most work (full ranking, no early exit).
    const last = snapshot.entries.reduce((a, b) =>
      b.createIndex > a.createIndex && b.session !== undefined ? b : a,
    )
    const session = last.session ?? ''
    const us = time(snapshot, session, iterations)
    const decision = decide(snapshot, { prefix, session, limit }).type
    return { contenders, iterations, usPerSnapshot: us, usPerKey: us / contenders, decision }
  })
}

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const row of measureDecide()) console.log(row)
}
