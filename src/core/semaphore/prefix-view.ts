import * as E from 'fp-ts/lib/Either.js'
import { HOLDER_FLAGS } from '../../base/flags.js'
import type { KVEntry, KVSnapshot } from '../../base/kv-snapshot.js'
import type { PrefixProblem, RankedContender, SemaphoreView, SharedHolder } from '../events.js'
import { directChildParent } from '../keys/direct-child.js'
import { LOCK_KEY_NAME, lockKey } from '../keys/lock-key.js'
import { revokeKey } from '../keys/revoke-key.js'
import { readLockBody } from '../lock-body/read-lock-body.js'
import { unjudgedHolders } from './own-writes.js'
import { pruneHolders } from './prune-holders.js'
import { processOf, rankInTurns, slotsByProcess, splitByHolding } from './waiting-contenders.js'

/**
 * What every contender of a prefix needs from one snapshot, computed once for all of them: the
 * decoded and pruned `.lock`, the queue, and indexes that let each contender find its own place in
 * O(1) (`decideInView`).
 *
 * @example
 * ```ts
 * const shared = prefixView(snapshot, { prefix: 'service/db/lock', limit: 3 })
 * if (E.isRight(shared)) console.log(shared.right.view.waiting.length, 'waiting')
 * ```
 */
export interface PrefixView {
  /** The view every decision of this snapshot carries (the same object for every contender). */
  readonly view: SemaphoreView
  /** The live holders, as a set. */
  readonly holders: ReadonlySet<string>
  /** Sessions whose contender key `<prefix>/<session>` is locked by that same session. */
  readonly contenders: ReadonlySet<string>
  /** Each waiting session's rank (its index in `view.waiting`). */
  readonly ranks: ReadonlyMap<string, number>
  /** Holders whose key the write that made them holders rewrote: its index (HOLDER_FLAGS). */
  readonly acquired: ReadonlyMap<string, bigint>
  /** The revoke keys `<prefix>/.lock.revoke/<session>` of the listing, by the session they name. */
  readonly revokes: ReadonlyMap<string, KVEntry>
  /**
   * `.lock` states another limit than the contender's own, which does not follow it: the
   * contender may keep a slot it holds (and give it back), but may not join, take or hand one on.
   */
  readonly limitConflict: LimitConflict | undefined
}

/** The prefix problem of a `.lock` whose limit is not the contender's. */
export type LimitConflict = Extract<PrefixProblem, { readonly type: 'LimitConflict' }>

/** What the view depends on besides the snapshot. */
export interface PrefixViewOptions {
  /** The semaphore prefix all contenders agree on. */
  readonly prefix: string
  /**
   * The slot limit (a positive integer): the one written when this contender creates `.lock`, and
   * the one `.lock` must state unless `followLimit`.
   */
  readonly limit: number
  /**
   * Take the limit `.lock` states, whatever it is (an operator may change it live: `setLimit`),
   * instead of refusing a `.lock` that states another one (LimitConflict). Default false.
   */
  readonly followLimit?: boolean | undefined
}

/**
 * The part of the semaphore algorithm that depends only on the snapshot (read `.lock`, check flags
 * and limit, prune dead holders, rank the waiters), as one pure function: O(n log n) in the entries
 * of the prefix, done once per snapshot however many contenders of the prefix decide on it.
 *
 * `previous`, the view of an earlier snapshot of the same prefix, only saves memory and
 * comparisons: arrays equal to its arrays are its arrays, so a subscriber can tell "unchanged" by
 * reference. The result is equal (deeply) with or without it.
 *
 * ```
 * snapshot ──► read .lock ──► prune ──► rank ──► PrefixView ──► decideInView(session) per contender
 * ```
 *
 * @example
 * ```ts
 * const shared = prefixView(snapshot, { prefix: 'service/db/lock', limit: 3 })
 * const mine = decideInView(shared, { session, limit: 3 })
 * ```
 * @param snapshot - Everything under the prefix at one index.
 * @param options - Prefix and limit.
 * @param previous - The view of an earlier snapshot of the same prefix and limit, to share arrays with.
 * @returns The shared view, or the prefix problem that forbids any write.
 */
export function prefixView(
  snapshot: KVSnapshot,
  options: PrefixViewOptions,
  previous?: PrefixView,
): E.Either<PrefixProblem, PrefixView> {
  const { prefix, limit } = options
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new RangeError(`limit must be a positive integer, got ${limit}`)
  }
  const key = lockKey(prefix)
  const lock = readLockBody(
    snapshot.entries.find((entry) => entry.key === key),
    key,
  )
  if (E.isLeft(lock)) return lock
  const { record, lockIndex } = lock.right
  const limitConflict: LimitConflict | undefined =
    record === undefined || record.limit === limit || options.followLimit === true
      ? undefined
      : { type: 'LimitConflict', key, lockLimit: record.limit, localLimit: limit }

  const { live, keys, contenders, acquired, revokes } = ownKeys(snapshot, prefix)
  // A `.lock` newer than the listing (`freshestPrefix`) may list holders whose keys are newer too.
  const pruned = pruneHolders(record?.holders ?? [], live, unjudgedHolders(snapshot))
  const holders = new Set(pruned.liveHolders)
  const before = previous?.view
  const { waiting: waiters, holding } = splitByHolding(keys, holders)
  const held = slotsByProcess(holding)
  const { waiting, nextTurn } = rankInTurns(
    waiters,
    held,
    previous && { waiting: previous.view.waiting, ranks: previous.ranks },
  )
  const view: SemaphoreView = {
    limit: record?.limit ?? limit,
    shape: record?.shape,
    lockIndex,
    liveHolders: reuse(pruned.liveHolders, before?.liveHolders, sameString),
    deadHolders: reuse(pruned.deadHolders, before?.deadHolders, sameString),
    waiting: reuse(waiting, before?.waiting, sameRanked),
    sharedHolders: reuse(
      sharedHolders(holding, pruned.liveHolders, held),
      before?.sharedHolders,
      sameShared,
    ),
    nextTurn,
  }
  const ranks = new Map<string, number>()
  for (let i = 0; i < view.waiting.length; i++) {
    const contender = view.waiting[i] as RankedContender
    ranks.set(contender.session, contender.rank)
  }
  return E.right({ view, holders, ranks, limitConflict, contenders, acquired, revokes })
}

/**
 * In one pass over the listing: the sessions that lock some key (`liveSessions`), the contender
 * keys locked by their own session (whether it holds a slot or waits), their sessions, those
 * of them whose key the write that made them holders rewrote, and the revoke requests. A contender key is told by its
 * length and ends (`<prefix>/<its session>`), without cutting a name out of each key, and the
 * live sessions are the contenders' set and a set of the few others rather than one more set of
 * every session.
 */
function ownKeys(
  snapshot: KVSnapshot,
  prefix: string,
): Pick<PrefixView, 'contenders' | 'acquired' | 'revokes'> & {
  readonly live: LiveSessions
  readonly keys: readonly KVEntry[]
} {
  const parent = directChildParent(prefix)
  const start = parent === '' ? 0 : parent.length + 1
  const others = new Set<string>()
  const keys: KVEntry[] = []
  const contenders = new Set<string>()
  const acquired = new Map<string, bigint>()
  const revokeDir = revokeKey(parent, '')
  const revokeStart = revokeDir.length + 1
  let revokes: Map<string, KVEntry> | undefined
  const entries = snapshot.entries
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as KVEntry
    if (entry.key.length > revokeStart && entry.key.startsWith(revokeDir)) {
      const name = revokedSession(entry.key, revokeStart)
      if (name !== undefined) (revokes ??= new Map()).set(name, entry)
    }
    const session = entry.session
    if (session === undefined || session === '') continue
    if (!isOwnKey(entry.key, session, parent, start)) {
      others.add(session)
      continue
    }
    keys.push(entry)
    contenders.add(session)
    if (entry.flags === HOLDER_FLAGS) acquired.set(session, entry.modifyIndex)
  }
  const live = { has: (session: string) => contenders.has(session) || others.has(session) }
  return { live, keys, contenders, acquired, revokes: revokes ?? NO_REVOKES }
}

const NO_REVOKES: ReadonlyMap<string, KVEntry> = new Map()

/** The session a key under `<prefix>/.lock.revoke/` names, when it is a direct child of it. */
function revokedSession(key: string, start: number): string | undefined {
  return key.charCodeAt(start - 1) === SLASH && key.indexOf('/', start) < 0
    ? key.slice(start)
    : undefined
}

/** The sessions that lock some key of the listing. */
type LiveSessions = Pick<ReadonlySet<string>, 'has'>

/**
 * Whether `key` is the contender key of `session`: the direct child of the prefix (its cleaned
 * form `parent`, whose children's names start at `start`) named by the session, not `.lock`.
 */
function isOwnKey(key: string, session: string, parent: string, start: number): boolean {
  return (
    key.length === start + session.length &&
    key.endsWith(session) &&
    (start === 0 || (key.startsWith(parent) && key.charCodeAt(parent.length) === SLASH)) &&
    session.indexOf('/') < 0 &&
    session !== '.' &&
    session !== '..' &&
    session !== LOCK_KEY_NAME
  )
}

const SLASH = 0x2f

const sameString = (a: string, b: string): boolean => a === b

const sameRanked = (a: RankedContender, b: RankedContender): boolean =>
  a.session === b.session &&
  a.value === b.value &&
  a.createIndex === b.createIndex &&
  a.weight === b.weight

/**
 * The live holders (in their order) whose process holds more than one slot, with how many it holds.
 */
function sharedHolders(
  holding: readonly KVEntry[],
  liveHolders: readonly string[],
  held: ReadonlyMap<string, number>,
): readonly SharedHolder[] {
  // As many processes as holders: each holds one slot.
  if (held.size === liveHolders.length) return []
  const shared = new Map<string, number>()
  for (let i = 0; i < holding.length; i++) {
    const entry = holding[i] as KVEntry
    const process = processOf(entry)
    const slots = process === undefined ? 0 : (held.get(process) ?? 0)
    if (slots > 1) shared.set(entry.session ?? '', slots)
  }
  if (shared.size === 0) return []
  const listed: SharedHolder[] = []
  for (let i = 0; i < liveHolders.length; i++) {
    const session = liveHolders[i] as string
    const slots = shared.get(session)
    if (slots !== undefined) listed.push({ session, slots })
  }
  return listed
}

const sameShared = (a: SharedHolder, b: SharedHolder): boolean =>
  a.session === b.session && a.slots === b.slots

/** `earlier` when it has the same elements as `now`, else `now`. */
function reuse<T>(
  now: readonly T[],
  earlier: readonly T[] | undefined,
  same: (a: T, b: T) => boolean,
): readonly T[] {
  if (earlier === undefined || earlier.length !== now.length) return now
  for (let i = 0; i < now.length; i++) if (!same(now[i] as T, earlier[i] as T)) return now
  return earlier
}
