import type { KVEntry } from '../../base/kv-snapshot.js'
import { directChild } from '../keys/direct-child.js'
import type { RankedContender } from '../events.js'
import { LOCK_KEY_NAME } from '../keys/lock-key.js'

const utf8 = new TextDecoder('utf-8')

/**
 * The contenders waiting for a slot, in rank order: direct children `<prefix>/<id>` (not `.lock`)
 * locked by their own session `id`, that are not live holders, ordered by CreateIndex (ties by
 * key). Ranking in arrival order is what lets only the front of the queue try when a slot frees.
 * O(n log n) for the sort, O(n) otherwise.
 *
 * @example
 * waitingContenders(snapshot.entries, 'svc/lock', new Set(liveHolders))
 * @param entries - Every entry of the prefix listing.
 * @param prefix - The semaphore prefix.
 * @param holders - The live holders, who are not waiting.
 * @returns The waiting contenders, rank 0 first.
 */
export function waitingContenders(
  entries: readonly KVEntry[],
  prefix: string,
  holders: ReadonlySet<string>,
): readonly RankedContender[] {
  const childOf = directChild(prefix)
  const keys: KVEntry[] = []
  for (const entry of entries) {
    const id = childOf(entry.key)
    if (id !== undefined && id !== LOCK_KEY_NAME && entry.session === id) keys.push(entry)
  }
  return rankWaiting(keys, holders)
}

/**
 * `waitingContenders` from the contender keys already picked out of the listing (direct children
 * locked by their own session), in one pass that `prefixView` shares with its other counts.
 *
 * @param keys - The contender keys locked by their own session.
 * @param holders - The live holders, who are not waiting.
 * @returns The waiting contenders, rank 0 first.
 */
export function rankWaiting(
  keys: readonly KVEntry[],
  holders: ReadonlySet<string>,
): readonly RankedContender[] {
  const waiting = keys.filter((entry) => !holders.has(entry.session ?? ''))
  waiting.sort(byArrival)
  return waiting.map((entry, rank) => ({
    session: entry.session ?? '',
    rank,
    value: valueOf(entry),
    createIndex: entry.createIndex,
  }))
}

/**
 * The values decoded so far, by entry: a watch hands the same entry objects from snapshot to
 * snapshot while a key does not change (EntryCache), and a waiter's value is read on each one.
 */
const values = new WeakMap<KVEntry, string | null>()

function valueOf(entry: KVEntry): string | null {
  let value = values.get(entry)
  if (value === undefined) {
    value = entry.value === null ? null : utf8.decode(entry.value)
    values.set(entry, value)
  }
  return value
}

function byArrival(a: KVEntry, b: KVEntry): number {
  if (a.createIndex !== b.createIndex) return a.createIndex < b.createIndex ? -1 : 1
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0
}
