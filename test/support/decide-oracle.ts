/**
 * What a semaphore contender should decide, written from the rules (docs/design.md, "The pure
 * core") without the code under test: a second, plain implementation for property tests to hold
 * `decide` and `decideInView` against. Only the reading of a `.lock` body is borrowed
 * (`decodeLockBody`, tested on its own in core-lock-codec.test.ts).
 */
import * as E from 'fp-ts/lib/Either.js'
import { SEMAPHORE_FLAGS, WEIGHTED_FLAGS_BASE } from '../../src/base/flags.js'
import type { KVEntry, KVSnapshot } from '../../src/base/kv-snapshot.js'
import type { Decision, LockBodyShape, RankedContender } from '../../src/core/events.js'
import { decodeLockBody } from '../../src/core/lock-body/decode-lock-body.js'

/** Who decides, on which prefix (written without `//`, `.` or a trailing `/`). */
export interface OracleOptions {
  readonly prefix: string
  readonly limit: number
  /** Take the limit `.lock` states rather than refusing another one. */
  readonly followLimit?: boolean | undefined
  readonly session: string
  readonly fairness?: boolean | undefined
  readonly ignoreRank?: boolean | undefined
}

const utf8 = new TextEncoder()

/** The decision the rules give `options.session` on `snapshot`. */
export function expectedDecision(snapshot: KVSnapshot, options: OracleOptions): Decision {
  const { prefix, session } = options
  const key = `${prefix}/.lock`
  const lock = snapshot.entries.find((entry) => entry.key === key)

  // Problems first, in Go's order: flags, body, limit.
  if (lock !== undefined && lock.flags !== 0n && lock.flags !== SEMAPHORE_FLAGS) {
    return { type: 'Conflict', key, flags: lock.flags }
  }
  const read = lock === undefined ? E.right(undefined) : decodeLockBody(lock.value, key)
  if (E.isLeft(read)) return read.left
  const record = read.right
  // The limit in force is the one `.lock` states; ours only names a `.lock` not written yet.
  const limit = record?.limit ?? options.limit
  const conflict =
    record !== undefined && record.limit !== options.limit && options.followLimit !== true

  // A session is alive while it locks any key of the listing.
  const live = new Set(snapshot.entries.map((entry) => entry.session).filter((s) => !!s))
  const listed = record?.holders ?? []
  const liveHolders = listed.filter((holder) => live.has(holder))
  const deadHolders = listed.filter((holder) => !live.has(holder))

  const contenders = snapshot.entries.filter((entry) => {
    const id = childName(prefix, entry.key)
    return id !== undefined && id !== '.lock' && entry.session === id
  })
  const valueOf = (entry: KVEntry): string | null =>
    entry.value === null ? null : Buffer.from(entry.value).toString('utf8')
  // A process is told by its contenders' value; one without a value is a process of its own.
  const processOf = (entry: KVEntry): string | undefined => valueOf(entry) || undefined
  const arrived = contenders
    .filter((entry) => !liveHolders.includes(entry.session as string))
    // Arrival order; ties by key, compared as bytes as Consul sorts them.
    .sort((a, b) =>
      a.createIndex !== b.createIndex
        ? Number(a.createIndex - b.createIndex)
        : Buffer.compare(Buffer.from(a.key), Buffer.from(b.key)),
    )
  // A waiter's turn: the slots its process holds, plus its process's waiters that arrived before.
  const turnOf = (entry: KVEntry, at: number): number => {
    const process = processOf(entry)
    if (process === undefined) return 0
    const holding = contenders.filter(
      (c) => liveHolders.includes(c.session as string) && processOf(c) === process,
    ).length
    return holding + arrived.slice(0, at).filter((c) => processOf(c) === process).length
  }
  const inTurns = arrived
    .map((entry, at) => ({ entry, turn: turnOf(entry, at) }))
    // Lower turns first; Array.prototype.sort is stable, so arrival order within a turn.
    .sort((a, b) => a.turn - b.turn)
  const waiting: RankedContender[] = inTurns.map(({ entry }, rank) => ({
    session: entry.session as string,
    rank,
    value: valueOf(entry),
    createIndex: entry.createIndex,
    // A waiting key of k permits says so in its flags: WEIGHTED_FLAGS_BASE + k.
    weight:
      entry.flags - WEIGHTED_FLAGS_BASE >= 2n && entry.flags - WEIGHTED_FLAGS_BASE <= 255n
        ? Number(entry.flags - WEIGHTED_FLAGS_BASE)
        : 1,
  }))
  const nextTurn = inTurns[0]?.turn

  // The holders whose process holds more than one slot, in listed order.
  const slotsOf = (holder: string): number => {
    const entry = contenders.find((c) => c.session === holder)
    const process = entry === undefined ? undefined : processOf(entry)
    if (process === undefined) return 1
    return contenders.filter(
      (c) => liveHolders.includes(c.session as string) && processOf(c) === process,
    ).length
  }
  const sharedHolders = liveHolders
    .map((session) => ({ session, slots: slotsOf(session) }))
    .filter((holder) => holder.slots > 1)

  const lockIndex = lock?.modifyIndex ?? 0n
  const view = {
    limit,
    shape: record?.shape,
    lockIndex,
    liveHolders,
    deadHolders,
    waiting,
    sharedHolders,
    nextTurn,
  }

  // A holder keeps its slot whatever limit `.lock` states; a contender that disagrees with the
  // limit and does not follow it may do nothing else.
  if (liveHolders.includes(session)) return { type: 'Held', view }
  if (conflict) {
    return { type: 'LimitConflict', key, lockLimit: limit, localLimit: options.limit }
  }
  const own = snapshot.entries.find((entry: KVEntry) => entry.key === `${prefix}/${session}`)
  if (own === undefined || own.session !== session) return { type: 'NotContending', view }

  const rank = waiting.findIndex((contender) => contender.session === session)
  const freeSlots = Math.max(0, limit - liveHolders.length)
  const mayTry = rank === 0 || options.fairness === false || options.ignoreRank === true
  if (freeSlots > 0 && mayTry) {
    const body = lockBody(record?.shape ?? 'go-map', limit, [...liveHolders, session])
    return { type: 'TryAcquire', view, body, cas: lockIndex, rank }
  }
  return { type: 'Wait', view, rank, freeSlots }
}

/** `<id>` when `key` is `<prefix>/<id>` with a plain one-segment id, else undefined. */
function childName(prefix: string, key: string): string | undefined {
  if (!key.startsWith(`${prefix}/`)) return undefined
  const name = key.slice(prefix.length + 1)
  return name === '' || name === '.' || name === '..' || name.includes('/') ? undefined : name
}

/**
 * The body to write, in the shape read. Holder ids are plain ASCII in these tests, so JSON's
 * escaping is Go's and string order is byte order.
 */
function lockBody(shape: LockBodyShape, limit: number, holders: readonly string[]): Uint8Array {
  const list = JSON.stringify(holders)
  switch (shape) {
    case 'go-map': {
      const map = [...holders].sort().map((h) => `${JSON.stringify(h)}:true`)
      return utf8.encode(`{"Limit":${limit},"Holders":{${map.join(',')}}}`)
    }
    case 'guide-list':
      return utf8.encode(`{"Limit":${limit},"Holders":${list}}`)
    case 'java-list':
      return utf8.encode(`{"limit":${limit},"holders":${list}}`)
  }
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/**
 * A decision with its body as text, for assertions that print readably: strict UTF-8 decoding
 * (no replacement, no BOM stripping) maps different bytes to different text, so equal results
 * mean equal bytes.
 */
export function comparable(decision: Decision): unknown {
  return decision.type === 'TryAcquire'
    ? { ...decision, body: `bytes(${strictUtf8.decode(decision.body)})` }
    : decision
}
