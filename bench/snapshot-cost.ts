// A probe, not a figure of `npm run bench`: what one snapshot of a prefix of n contenders costs
// this process, step by step, without Consul: decoding the listing's body (with the entry cache of
// a watch), the shared view, and each contender's decision in it. Run it with
// `npx tsx bench/snapshot-cost.ts [contenders]`.
import { randomUUID } from 'node:crypto'
import { EntryCache } from '../src/consul/entry-cache.js'
import { decodeListing } from '../src/consul/codecs.js'
import type { KVSnapshot } from '../src/base/kv-snapshot.js'
import { viewCache } from '../src/core/semaphore/view-cache.js'
import { encodeLockBody } from '../src/core/lock-body/encode-lock-body.js'
import { CONTENDER_FLAGS, HOLDER_FLAGS, SEMAPHORE_FLAGS } from '../src/base/flags.js'

const n = Number(process.argv[2] ?? 1000)
const limit = 10
const prefix = 'bench-scale/1764287402000/p0'
const sessions: string[] = Array.from({ length: n }, () => randomUUID())
let index = 1000

/** The JSON body of a listing: `.lock` with the first `limit` sessions, and every contender key. */
function body(live: readonly string[]): string {
  const lock = {
    LockIndex: 0,
    Key: `${prefix}/.lock`,
    Flags: SEMAPHORE_FLAGS.toString(),
    Value: Buffer.from(
      encodeLockBody({ limit, holders: live.slice(0, limit), shape: 'go-map' }),
    ).toString('base64'),
    CreateIndex: 10,
    ModifyIndex: index,
  }
  const holders = new Set(live.slice(0, limit))
  const keys = [...live]
    .sort()
    .map(
      (s) =>
        `{"LockIndex":1,"Key":"${prefix}/${s}","Flags":${(holders.has(s) ? HOLDER_FLAGS : CONTENDER_FLAGS).toString()},"Value":"${Buffer.from(`{"pid":${created.get(s)}}`).toString('base64')}","Session":"${s}","CreateIndex":${created.get(s)},"ModifyIndex":${created.get(s)}}`,
    )
  return `[${[JSON.stringify(lock), ...keys].join(',')}]`
}
const created = new Map<string, number>(sessions.map((s, i) => [s, 100 + i]))

/** CPU time of this process (ms): the machine may be busy with others. */
const cpuMs = (): number => {
  const { user, system } = process.cpuUsage()
  return (user + system) / 1000
}

const cache = new EntryCache()
const views = viewCache()
let live = sessions
const timings = { decode: 0, view: 0, decide: 0 }
const rounds = 200
for (let r = 0; r < rounds + 20; r++) {
  // One release: the first holder leaves, a new contender joins at the back.
  const gone = live[0] as string
  const fresh = randomUUID()
  created.set(fresh, ++index)
  created.delete(gone)
  live = [...live.slice(1), fresh]
  index++
  // The body in the chunks a socket hands over (64 KB at most).
  const bytes = Buffer.from(body(live))
  const chunks: Buffer[] = []
  for (let at = 0; at < bytes.length; at += 65_536) {
    chunks.push(Buffer.from(bytes.subarray(at, at + 65_536)))
  }
  const t0 = cpuMs()
  const decoded = decodeListing(chunks, 'GET', BigInt(index), cache)
  if (decoded._tag === 'Left') throw new Error(decoded.left.message)
  const snapshot: KVSnapshot = { index: BigInt(index), entries: decoded.right }
  const t1 = cpuMs()
  views.view(snapshot, { prefix, limit })
  const t2 = cpuMs()
  for (const session of live) views.decide(snapshot, { prefix, session, limit, fairness: true })
  const t3 = cpuMs()
  if (r >= 20) {
    timings.decode += t1 - t0
    timings.view += t2 - t1
    timings.decide += t3 - t2
  }
}
const us = (ms: number): string => ((ms * 1000) / rounds).toFixed(0).padStart(6)
console.log(
  `${n} contenders, per snapshot (µs of CPU): decode ${us(timings.decode)}  view ${us(timings.view)}  decide × n ${us(timings.decide)}  (${((timings.decide * 1000) / rounds / n).toFixed(2)} µs each)`,
)
