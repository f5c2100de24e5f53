/**
 * fast-check arbitraries of what a semaphore prefix looks like in Consul: contender keys, a
 * `.lock` in every shape found in the wild (and in the shapes no retry fixes), dead holders, uint64
 * flags and indexes as bigint, CreateIndex ties. Each arbitrary builds on the smaller ones, so a
 * test can take a whole snapshot (`semaphoreCase`), a history of one prefix (`semaphoreHistory`),
 * or a single `.lock` (`lockPlan`, then `lockModel`).
 *
 * The arbitraries are records and maps, never `chain`: fast-check shrinks them all the way down,
 * so a failure prints a small case. Values print readably: bigint as `40n`, bodies as
 * `bytes("<text>")`.
 */
import fc from 'fast-check'
import { LOCK_FLAGS, SEMAPHORE_FLAGS } from '../../src/base/flags.js'
import type { KVEntry, KVSnapshot } from '../../src/base/kv-snapshot.js'
import type { LockBodyShape } from '../../src/core/events.js'

const utf8 = new TextEncoder()
const MAX_UINT64 = 2n ** 64n - 1n

/** The bytes of `text`, printed as `bytes("<text>")` in fast-check's reports. */
export function readableBytes(text: string): Uint8Array {
  return withPrint(utf8.encode(text), `bytes(${JSON.stringify(text)})`)
}

function withPrint(value: Uint8Array, printed: string): Uint8Array {
  // Not enumerable: deepStrictEqual and the code under test never see it.
  Object.defineProperty(value, fc.toStringMethod, { value: () => printed })
  return value
}

/**
 * The sessions that may have a contender key. Short, and not integer-like on purpose: a JavaScript
 * object lists integer-like keys first, so a Go-shaped holder map would not keep their listed
 * order. ASCII, so that string order is byte order.
 */
export const SESSIONS = ['a', 'b', 'c', 'd', 'e', 'f'] as const

/** Holders listed in `.lock` whose session holds nothing: the dead, which must be pruned. */
export const GHOSTS = ['gone-1', 'gone-2'] as const

/** A session that locks some key of the listing but has no contender key of its own. */
export const STRANGER = 'stranger-1'

/** Any uint64; fast-check picks values near the bounds more often. */
export const uint64: fc.Arbitrary<bigint> = fc.bigInt({ min: 0n, max: MAX_UINT64 })

/** A Raft index of an existing key (at least 1). */
export const modifyIndex: fc.Arbitrary<bigint> = fc.bigInt({ min: 1n, max: MAX_UINT64 })

/** CreateIndex of a key; a narrow range, so that ties (broken by key) are common. */
export const createIndex: fc.Arbitrary<bigint> = fc.bigInt({ min: 1n, max: 12n })

/** Flags of a key nobody judges (contender keys): usually the semaphore's, but anything goes. */
export const anyFlags: fc.Arbitrary<bigint> = fc.oneof(
  { weight: 6, arbitrary: fc.constant(SEMAPHORE_FLAGS) },
  { weight: 1, arbitrary: fc.constantFrom(0n, LOCK_FLAGS) },
  { weight: 1, arbitrary: uint64 },
)

/** Flags a semaphore accepts on `.lock`: its own, or 0 (clients that set none). */
export const semaphoreLockFlags: fc.Arbitrary<bigint> = fc.constantFrom(SEMAPHORE_FLAGS, 0n)

/** Flags of another tool on `.lock` (consul lock's, or anything else): a Conflict. */
export const conflictingFlags: fc.Arbitrary<bigint> = fc.oneof(
  fc.constant(LOCK_FLAGS),
  uint64.filter((flags) => flags !== 0n && flags !== SEMAPHORE_FLAGS),
)

/** The flags of a `.lock`: mostly accepted ones, sometimes another tool's. */
export const lockFlags: fc.Arbitrary<bigint> = fc.oneof(
  { weight: 6, arbitrary: semaphoreLockFlags },
  { weight: 1, arbitrary: conflictingFlags },
)

/** What one session's contender key `<prefix>/<session>` is in the snapshot. */
export type ContenderKey =
  /** Locked by the session itself: it contends (it waits, or holds a slot). */
  | { readonly state: 'own'; readonly createIndex: bigint; readonly flags: bigint }
  /** Absent. */
  | { readonly state: 'missing' }
  /** Present, locked by nobody (its session was invalidated under behavior `release`). */
  | { readonly state: 'unlocked'; readonly createIndex: bigint; readonly flags: bigint }
  /** Present, locked by another session (the stranger if `by` is the key's own session). */
  | { readonly state: 'other'; readonly by: string; readonly createIndex: bigint }

/** A contender key, usually locked by its own session. */
export const contenderKey: fc.Arbitrary<ContenderKey> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ state: fc.constant('own'), createIndex, flags: anyFlags }) },
  { weight: 1, arbitrary: fc.constant({ state: 'missing' }) },
  {
    weight: 1,
    arbitrary: fc.record({ state: fc.constant('unlocked'), createIndex, flags: anyFlags }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      state: fc.constant('other'),
      by: fc.constantFrom(...SESSIONS, STRANGER),
      createIndex,
    }),
  },
)

/** A session of `SESSIONS` with its contender key and the key's value (a name, or null). */
export interface Peer {
  readonly session: string
  readonly key: ContenderKey
  readonly value: string | null
}

/** Some of `SESSIONS`, each once, with their keys. */
export const peers: fc.Arbitrary<Peer[]> = fc.uniqueArray(
  fc.record({
    session: fc.constantFrom(...SESSIONS),
    key: contenderKey,
    value: fc.option(fc.string({ maxLength: 6 }), { nil: null }),
  }),
  { selector: (peer) => peer.session, maxLength: SESSIONS.length },
)

/** The entry of a contender key, or none. */
export function contenderEntry(prefix: string, peer: Peer): KVEntry[] {
  const { session, key, value } = peer
  if (key.state === 'missing') return []
  const lockedBy =
    key.state === 'own'
      ? session
      : key.state === 'other'
        ? key.by === session
          ? STRANGER
          : key.by
        : undefined
  return [
    {
      key: `${prefix}/${session}`,
      value: value === null ? null : readableBytes(value),
      flags: key.state === 'other' ? SEMAPHORE_FLAGS : key.flags,
      session: lockedBy,
      lockIndex: key.state === 'unlocked' ? 2n : 1n,
      createIndex: key.createIndex,
      modifyIndex: key.createIndex + 1n,
    },
  ]
}

/** Keys under the prefix that are not contender keys, some locked by a session (thereby live). */
export function strayKeys(prefix: string): fc.Arbitrary<KVEntry[]> {
  const key = fc.constantFrom(`${prefix}/deep/x`, `${prefix}x/y`, `${prefix}/`, `${prefix}/./z`)
  const by = fc.option(fc.constantFrom(...SESSIONS, STRANGER), { nil: undefined })
  return fc.array(
    fc.record({ key, session: by, createIndex }).map(({ key, session, createIndex }): KVEntry => ({
      key,
      value: null,
      flags: 0n,
      session,
      lockIndex: session === undefined ? 0n : 1n,
      createIndex,
      modifyIndex: createIndex,
    })),
    { maxLength: 2 },
  )
}

/** A value a valid Go-shaped holder map may give a holder (Go counts the key whatever it says). */
export const holderFlag: fc.Arbitrary<boolean | null> = fc.oneof(
  { weight: 4, arbitrary: fc.constant(true) },
  { weight: 1, arbitrary: fc.constantFrom(false, null) },
)

/** Bodies that no client reads: each reason decodeLockBody knows, with a limit that fits or not. */
export const corruptBody: fc.Arbitrary<string | Uint8Array> = fc.oneof(
  fc.constantFrom('{"Limit":', '[1]', 'null', '"x"', '3', '{"Limit":2,"Holders":7}'),
  fc.constant(withPrint(new Uint8Array([0x7b, 0xff, 0x7d]), 'bytes(7b ff 7d: not UTF-8)')),
  fc
    .oneof(fc.integer({ min: -3, max: 0 }), fc.constantFrom(1.5, '"2"'))
    .map((limit) => `{"Limit":${limit},"Holders":[]}`),
  fc.constantFrom('{"Holders":{}}', '{"holders":[]}'),
  fc.integer({ min: 1, max: 5 }).map((n) => `{"Limit":${n},"Holders":["a",5]}`),
  fc.integer({ min: 1, max: 5 }).map((n) => `{"Limit":${n},"holders":["a"]}`),
  fc.integer({ min: 1, max: 5 }).map((n) => `{"Limit":${n},"Holders":{"a":1}}`),
)

/** How a readable body is written: which client's casing, and whether it lists its holders. */
type BodyForm = 'go-map' | 'go-map-lowercase' | 'guide-list' | 'java-list'

/** The ingredients of a `.lock`, independent of the limit (so no `chain` is needed). */
export type LockPlan =
  | { readonly kind: 'absent' }
  /** An empty value (`null`, or zero bytes): no holders yet. */
  | {
      readonly kind: 'empty'
      readonly flags: bigint
      readonly modifyIndex: bigint
      readonly zeroBytes: boolean
    }
  | {
      readonly kind: 'valid'
      readonly form: BodyForm
      /** `listed`, or `null`/`absent`: no holders at all. */
      readonly holdersField: 'listed' | 'null' | 'absent'
      readonly holders: readonly string[]
      /** The map values of a Go-shaped body, holder by holder. */
      readonly values: readonly (boolean | null)[]
      readonly holdersFirst: boolean
      readonly extraField: boolean
      /** 0: the contenders' limit; otherwise another one (a LimitConflict). */
      readonly otherLimit: number
      readonly flags: bigint
      readonly modifyIndex: bigint
    }
  | {
      readonly kind: 'corrupt'
      readonly body: string | Uint8Array
      readonly flags: bigint
      readonly modifyIndex: bigint
    }

/** `.lock` in every case a semaphore meets: absent, empty, valid in each shape, or corrupt. */
export const lockPlan: fc.Arbitrary<LockPlan> = fc.oneof(
  { weight: 1, arbitrary: fc.constant({ kind: 'absent' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('empty' as const),
      flags: lockFlags,
      modifyIndex,
      zeroBytes: fc.boolean(),
    }),
  },
  {
    weight: 7,
    arbitrary: fc.record({
      kind: fc.constant('valid' as const),
      form: fc.constantFrom<BodyForm>('go-map', 'go-map-lowercase', 'guide-list', 'java-list'),
      holdersField: fc.oneof(
        { weight: 8, arbitrary: fc.constant('listed' as const) },
        { weight: 1, arbitrary: fc.constantFrom('null' as const, 'absent' as const) },
      ),
      // Live or not; a list may name one twice (it counts once).
      holders: fc.array(fc.constantFrom(...SESSIONS, ...GHOSTS, STRANGER), { maxLength: 6 }),
      values: fc.array(holderFlag, { minLength: 6, maxLength: 6 }),
      holdersFirst: fc.boolean(),
      extraField: fc.boolean(),
      otherLimit: fc.oneof(
        { weight: 7, arbitrary: fc.constant(0) },
        { weight: 1, arbitrary: fc.integer({ min: 1, max: 5 }) },
      ),
      flags: lockFlags,
      modifyIndex,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('corrupt' as const),
      body: corruptBody,
      flags: lockFlags,
      modifyIndex,
    }),
  },
)

/** `<prefix>/.lock` as the test means it: what `lockEntry` puts in the snapshot. */
export type LockModel =
  | Exclude<LockPlan, { kind: 'valid' }>
  /** A body that decodes; `holders` in listed order, as written (a list may repeat one). */
  | {
      readonly kind: 'valid'
      readonly shape: LockBodyShape
      readonly limit: number
      readonly holders: readonly string[]
      readonly body: string
      readonly flags: bigint
      readonly modifyIndex: bigint
    }

/** The `.lock` a plan gives for contenders whose limit is `limit`. */
export function lockModel(plan: LockPlan, limit: number): LockModel {
  if (plan.kind !== 'valid') return plan
  // Another limit in 1..6, never the contenders' own.
  const lockLimit = plan.otherLimit === 0 ? limit : ((limit - 1 + plan.otherLimit) % 6) + 1
  const lowercase = plan.form === 'go-map-lowercase' || plan.form === 'java-list'
  const [limitField, holdersField] = lowercase ? ['limit', 'holders'] : ['Limit', 'Holders']
  const isMap = plan.form === 'go-map' || plan.form === 'go-map-lowercase'
  const holders =
    plan.holdersField !== 'listed' ? [] : isMap ? [...new Set(plan.holders)] : plan.holders
  const listed = isMap
    ? `{${holders.map((h, i) => `${JSON.stringify(h)}:${JSON.stringify(plan.values[i] ?? true)}`).join(',')}}`
    : JSON.stringify(holders)
  const fields = [`"${limitField}":${lockLimit}`]
  if (plan.holdersField !== 'absent') {
    fields[plan.holdersFirst ? 'unshift' : 'push'](
      `"${holdersField}":${plan.holdersField === 'null' ? 'null' : listed}`,
    )
  }
  if (plan.extraField) fields.push('"Owner":"ops"')
  const shape: LockBodyShape =
    plan.holdersField !== 'listed'
      ? lowercase
        ? 'java-list'
        : 'go-map'
      : isMap
        ? 'go-map'
        : plan.form === 'guide-list'
          ? 'guide-list'
          : 'java-list'
  return {
    kind: 'valid',
    shape,
    limit: lockLimit,
    holders,
    body: `{${fields.join(',')}}`,
    flags: plan.flags,
    modifyIndex: plan.modifyIndex,
  }
}

/** The entry Consul returns for a `.lock`, or none. */
export function lockEntry(prefix: string, lock: LockModel): KVEntry[] {
  if (lock.kind === 'absent') return []
  const value =
    lock.kind === 'empty'
      ? lock.zeroBytes
        ? withPrint(new Uint8Array(0), 'bytes("")')
        : null
      : typeof lock.body === 'string'
        ? readableBytes(lock.body)
        : lock.body
  return [
    {
      key: `${prefix}/.lock`,
      value,
      flags: lock.flags,
      lockIndex: 0n,
      createIndex: 1n,
      modifyIndex: lock.modifyIndex,
    },
  ]
}

/** The ingredients of everything under a prefix: contender keys, `.lock`, other keys. */
export interface PrefixPlan {
  readonly peers: readonly Peer[]
  readonly lock: LockPlan
  readonly strays: readonly KVEntry[]
}

/** Everything under `prefix`. */
export function prefixPlan(prefix: string): fc.Arbitrary<PrefixPlan> {
  return fc.record({ peers, lock: lockPlan, strays: strayKeys(prefix) })
}

/** The entries a plan gives (sorted by key, as Consul lists them) and its `.lock`. */
function entriesOf(
  prefix: string,
  plan: PrefixPlan,
  limit: number,
): { lock: LockModel; entries: KVEntry[] } {
  const lock = lockModel(plan.lock, limit)
  const entries = [
    ...lockEntry(prefix, lock),
    ...plan.peers.flatMap((peer) => contenderEntry(prefix, peer)),
    ...plan.strays,
  ]
  return { lock, entries: sortedByKey(entries) }
}

function sortedByKey(entries: readonly KVEntry[]): KVEntry[] {
  return [...entries].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
}

/** A snapshot of a prefix at a Raft index: by default the largest ModifyIndex of its entries. */
export function snapshotAt(entries: readonly KVEntry[], index?: bigint): KVSnapshot {
  const top = entries.reduce((max, e) => (e.modifyIndex > max ? e.modifyIndex : max), 1n)
  return { index: index ?? top, entries }
}

/** One generated snapshot of a prefix, the limit its contenders use, and what `.lock` means. */
export interface SemaphoreCase {
  readonly limit: number
  readonly lock: LockModel
  readonly snapshot: KVSnapshot
}

/** A snapshot of `prefix` with up to six contender keys, a limit of 1 to 5 and any `.lock`. */
export function semaphoreCase(prefix: string): fc.Arbitrary<SemaphoreCase> {
  return fc
    .record({ limit: fc.integer({ min: 1, max: 5 }), plan: prefixPlan(prefix) })
    .map(({ limit, plan }) => {
      const { lock, entries } = entriesOf(prefix, plan, limit)
      return { limit, lock, snapshot: snapshotAt(entries) }
    })
}

/** How the next snapshot of a history differs from the one before. */
type Step =
  /** Nothing changed but the index: a new snapshot object with the same entries. */
  | { readonly step: 'same' }
  /** Only `.lock` was rewritten. */
  | { readonly step: 'lock'; readonly lock: LockPlan }
  /** Anything may have changed. */
  | { readonly step: 'any'; readonly plan: PrefixPlan }

/** Snapshots of one prefix over time, as its watch delivers them, and its contenders' limit. */
export interface SemaphoreHistory {
  readonly limit: number
  readonly snapshots: readonly KVSnapshot[]
}

/**
 * 1 to 8 successive snapshots of `prefix`: each one the same as the one before at a new index, or
 * with `.lock` rewritten, or anything new (so that runs of unchanged queues are common).
 */
export function semaphoreHistory(prefix: string): fc.Arbitrary<SemaphoreHistory> {
  const step: fc.Arbitrary<Step> = fc.oneof(
    fc.constant({ step: 'same' as const }),
    lockPlan.map((lock) => ({ step: 'lock' as const, lock })),
    prefixPlan(prefix).map((plan) => ({ step: 'any' as const, plan })),
  )
  return fc
    .record({
      limit: fc.integer({ min: 1, max: 4 }),
      first: prefixPlan(prefix),
      steps: fc.array(step, { maxLength: 7 }),
    })
    .map(({ limit, first, steps }) => {
      let plan = first
      let index = 1000n
      const snapshots = [snapshotAt(entriesOf(prefix, plan, limit).entries, index)]
      for (const next of steps) {
        if (next.step === 'lock') plan = { ...plan, lock: next.lock }
        if (next.step === 'any') plan = next.plan
        // Built again even when nothing changed: equal entries, new objects, as a new answer has.
        snapshots.push(snapshotAt(entriesOf(prefix, plan, limit).entries, (index += 1n)))
      }
      return { limit, snapshots }
    })
}
