import { CONTENDER_FLAGS, weightOfFlags } from '../../base/flags.js'
import type { KVEntry, KVSnapshot } from '../../base/kv-snapshot.js'
import { contenderKey } from '../keys/contender-key.js'
import { directChild } from '../keys/direct-child.js'
import type { RankedContender } from '../events.js'
import { LOCK_KEY_NAME } from '../keys/lock-key.js'

const utf8 = new TextDecoder('utf-8')

/**
 * The contenders waiting for a slot, in rank order: direct children `<prefix>/<id>` (not `.lock`)
 * locked by their own session `id`, that are not live holders, in turns (`sortByTurn`). Ranking in
 * one order that every contender computes alike is what lets only the front of the queue try when
 * a slot frees. O(n log n) for the sort, O(n) otherwise.
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
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as KVEntry
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
  const { waiting, holding } = splitByHolding(keys, holders)
  return rankInTurns(waiting, slotsByProcess(holding), previous).waiting
}

/** The contender keys of the holders, and those of the waiters, in one pass. */
export function splitByHolding(
  keys: readonly KVEntry[],
  holders: ReadonlySet<string>,
): { readonly waiting: KVEntry[]; readonly holding: readonly KVEntry[] } {
  const waiting: KVEntry[] = []
  const holding: KVEntry[] = []
  for (let i = 0; i < keys.length; i++) {
    const entry = keys[i] as KVEntry
    ;(holders.has(entry.session ?? '') ? holding : waiting).push(entry)
  }
  return { waiting, holding }
}

/**
 * The waiters' keys (`splitByHolding`) ranked in turns, given the slots each process holds
 * (`slotsByProcess`), and the turn of the first in line; see `rankWaiting`. `waiters` is sorted in
 * place (the caller's own array).
 */
export function rankInTurns(
  waiters: KVEntry[],
  held: ReadonlyMap<string, number>,
  previous?: EarlierQueue,
): { readonly waiting: readonly RankedContender[]; readonly nextTurn: number | undefined } {
  const waiting = inEarlierOrder(waiters, previous)
  const { values, turns } = sortByTurn(waiting, held)
  const before = previous?.waiting
  const ranked = waiting.map((entry, rank) => {
    const session = entry.session ?? ''
    const value = values[rank] ?? null
    const was = before?.[rank]
    const weight = weightOfFlags(entry.flags)
    return was !== undefined &&
      was.session === session &&
      was.value === value &&
      was.createIndex === entry.createIndex &&
      was.weight === weight
      ? was
      : { session, rank, value, createIndex: entry.createIndex, weight }
  })
  return { waiting: ranked, nextTurn: turns[0] }
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
  for (let i = 0; i < waiting.length; i++) {
    const entry = waiting[i] as KVEntry
    const rank = previous.ranks.get(entry.session ?? '')
    if (rank === undefined || placed[rank] !== undefined) rest.push(entry)
    else placed[rank] = entry
  }
  const laidOut: KVEntry[] = []
  for (let i = 0; i < placed.length; i++) {
    const entry = placed[i]
    if (entry !== undefined) laidOut.push(entry)
  }
  for (let i = 0; i < rest.length; i++) laidOut.push(rest[i] as KVEntry)
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

/**
 * The slots each process holds: the holders' contender keys (`splitByHolding`) counted by process
 * (`processOf`; a contender without a value is counted nowhere, being a process of its own).
 *
 * @param holding - The contender keys of the live holders.
 * @returns The number of slots by process.
 */
export function slotsByProcess(holding: readonly KVEntry[]): ReadonlyMap<string, number> {
  const held = new Map<string, number>()
  for (let i = 0; i < holding.length; i++) {
    const process = processOf(holding[i] as KVEntry)
    if (process !== undefined) held.set(process, (held.get(process) ?? 0) + 1)
  }
  return held
}

/**
 * Sorts `waiting` in turns, and returns each one's value and turn in that order: a waiter's turn
 * is the number of slots its process holds (`held`) plus the number of its process's waiters that
 * arrived before it; lower turns first, then arrival (CreateIndex, then key). A process is told by
 * its contenders' value (the library's default value is `host:pid`); a contender with an empty
 * value (Go's `consul lock`) is a process of its own.
 *
 * With one contender per process, every waiter's turn is 0 and the order is arrival's. A process
 * that runs several contenders (a job pool) does not queue all of them ahead of a process that
 * arrives later: the later one's first waiter comes before the pool's second, so that freed slots
 * go round the processes, the one holding the fewest first. Every contender ranks one listing
 * alike, so the front of the queue is the same for all of them.
 *
 * A waiter of several permits (a writer of a read-write lock among them) keeps its place by
 * arrival: turns are taken only among the waiters that arrived between two such waiters, so
 * nobody who arrived after it is ranked ahead of it, and it is ranked ahead of nobody who arrived
 * before it. A large request, which waits for several slots at once, is then not passed again and
 * again by later waiters of processes that hold less.
 *
 * ```
 * holders: A A A      waiting, by arrival: A4 A5 B1 A6 B2 C1
 * turns:                                   3  4  0  5  1  0
 * queue:   B1 C1 B2 A4 A5 A6
 *
 * holders: A A        waiting, by arrival: A3 B1 W(3 permits) B2 C1
 * queue:   B1 A3 W C1 B2          (W is a barrier: B2 and C1 arrived after it)
 * ```
 */
function sortByTurn(
  waiting: KVEntry[],
  held: ReadonlyMap<string, number>,
): { readonly values: readonly (string | null)[]; readonly turns: readonly number[] } {
  waiting.sort(byArrival)
  const values: (string | null)[] = []
  const turns: number[] = []
  // Waiters of a process ahead of the one at hand, by process; the run of the last one's process
  // is counted apart and written back when another process comes (one process is the common case).
  const seen = new Map<string, number>()
  let run: string | undefined
  let runAhead = 0
  let runHeld = 0
  // The waiters of several permits met so far, as each waiter's epoch: 2k between the k-th and
  // the next, 2k + 1 for the k-th itself, so that it sorts after those before it and ahead of
  // those after it.
  const epochs: number[] = []
  let barriers = 0
  let inTurns = true
  for (let i = 0; i < waiting.length; i++) {
    const entry = waiting[i] as KVEntry
    const value = valueOf(entry)
    const process = processNamed(value)
    let turn = 0
    if (process !== undefined) {
      if (process !== run) {
        if (run !== undefined) seen.set(run, runAhead)
        run = process
        runAhead = seen.get(process) ?? 0
        runHeld = held.get(process) ?? 0
      }
      turn = runHeld + runAhead
      runAhead += 1
    }
    const barrier = weightOfFlags(entry.flags) > 1
    const epoch = barrier ? 2 * barriers + 1 : 2 * barriers
    if (barrier) barriers += 1
    // A barrier's turn does not order it: it is alone in its epoch.
    if (epoch === (epochs[epochs.length - 1] ?? 0) && turn < (turns[turns.length - 1] ?? 0)) {
      inTurns = false
    }
    values.push(value)
    turns.push(turn)
    epochs.push(epoch)
  }
  // Already in turns (one contender per process, or one process): arrival order stands.
  if (inTurns) return { values, turns }
  const order = waiting.map((_, i) => i)
  order.sort(
    (a, b) => (epochs[a] ?? 0) - (epochs[b] ?? 0) || (turns[a] ?? 0) - (turns[b] ?? 0) || a - b,
  )
  const arrived = [...waiting]
  order.forEach((from, to) => (waiting[to] = arrived[from] as KVEntry))
  return {
    values: order.map((from) => values[from] ?? null),
    turns: order.map((from) => turns[from] ?? 0),
  }
}

/** The process a contender belongs to: its value, or undefined (a process of its own) if empty. */
export function processOf(entry: KVEntry): string | undefined {
  return processNamed(valueOf(entry))
}

/** The process a contender key's value names: undefined for none or an empty one. */
function processNamed(value: string | null): string | undefined {
  return value === null || value === '' ? undefined : value
}

function byArrival(a: KVEntry, b: KVEntry): number {
  if (a.createIndex !== b.createIndex) return a.createIndex < b.createIndex ? -1 : 1
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0
}

/**
 * The key of the waiter `session` when it is this library's one-permit waiter: its contender key
 * in the snapshot, with CONTENDER_FLAGS and locked by that session. Such a key is what a hand-off
 * rewrites (`handOffSlot`), what an operator's write wakes (`waitersToWake`) and what a waiter
 * parked behind it long-polls (`watchTarget`); a Go waiter's key, or one of several permits, is
 * none of these.
 *
 * @example
 * const entry = ownWaiterKey(snapshot, 'svc/lock', view.waiting[0].session)
 * @param snapshot - The prefix listing.
 * @param prefix - The semaphore prefix.
 * @param session - The waiter's session.
 * @returns Its entry, or undefined.
 */
export function ownWaiterKey(
  snapshot: KVSnapshot,
  prefix: string,
  session: string,
): KVEntry | undefined {
  const key = contenderKey(prefix, session)
  const entry = snapshot.entries.find((e) => e.key === key)
  return entry?.flags === CONTENDER_FLAGS && entry.session === session ? entry : undefined
}
