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
 * `previous`, the queue of an earlier snapshot of the same prefix, only saves work: the keys are
 * laid out in its order before the sort (a queue mostly keeps its order from one snapshot to the
 * next, and the sort then runs in about n comparisons), and a waiter whose place, value and
 * CreateIndex did not change keeps its object. The result is equal (deeply) with or without it.
 *
 * @param keys - The contender keys locked by their own session.
 * @param holders - The live holders, who are not waiting.
 * @param previous - An earlier queue of the prefix and the rank of each of its sessions.
 * @returns The waiting contenders, rank 0 first.
 */
export function rankWaiting(
  keys: readonly KVEntry[],
  holders: ReadonlySet<string>,
  previous?: EarlierQueue,
): readonly RankedContender[] {
  const waiting = inEarlierOrder(
    keys.filter((entry) => !holders.has(entry.session ?? '')),
    previous,
  )
  waiting.sort(byArrival)
  const before = previous?.waiting
  return waiting.map((entry, rank) => {
    const session = entry.session ?? ''
    const value = valueOf(entry)
    const was = before?.[rank]
    return was !== undefined &&
      was.session === session &&
      was.value === value &&
      was.createIndex === entry.createIndex
      ? was
      : { session, rank, value, createIndex: entry.createIndex }
  })
}

/** An earlier queue of a prefix (a `PrefixView`'s), to lay out and share a new one with. */
export interface EarlierQueue {
  readonly waiting: readonly RankedContender[]
  readonly ranks: ReadonlyMap<string, number>
}

/** The waiters with the sessions of `previous` first, in its order, then the others as given. */
function inEarlierOrder(waiting: KVEntry[], previous: EarlierQueue | undefined): KVEntry[] {
  if (previous === undefined || previous.waiting.length === 0) return waiting
  const placed: (KVEntry | undefined)[] = new Array<KVEntry | undefined>(previous.waiting.length)
  const rest: KVEntry[] = []
  for (const entry of waiting) {
    const rank = previous.ranks.get(entry.session ?? '')
    if (rank === undefined || placed[rank] !== undefined) rest.push(entry)
    else placed[rank] = entry
  }
  const laidOut: KVEntry[] = []
  for (const entry of placed) if (entry !== undefined) laidOut.push(entry)
  for (const entry of rest) laidOut.push(entry)
  return laidOut
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
