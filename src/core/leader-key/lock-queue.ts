import { LOCK_WAITER_FLAGS } from '../../base/flags.js'
import type { KVEntry, KVSnapshot } from '../../base/kv-snapshot.js'
import type { Decision, RankedContender } from '../events.js'
import { waiterName } from '../keys/waiter-key.js'

/** The waiters of a leader lock in one snapshot (`lockQueue`). */
export interface LockQueue {
  /** The live waiters, by arrival (the CreateIndex of their keys): rank 0 is first in line. */
  readonly waiting: readonly RankedContender[]
  /** Each live waiter's key as the snapshot shows it, in the same order. */
  readonly keys: readonly KVEntry[]
  /**
   * Waiter keys whose session ended (Consul cleared it, behavior `release`), by arrival: nobody
   * waits there any more. They are skipped, and removed (`deadWaitersToRemove`).
   */
  readonly dead: readonly KVEntry[]
}

const utf8 = new TextDecoder('utf-8')
const EMPTY_QUEUE: LockQueue = { waiting: [], keys: [], dead: [] }

/** One queue per snapshot object and prefix: every member of a process decides on the same one. */
const queues = new WeakMap<KVSnapshot, { readonly prefix: string; readonly queue: LockQueue }>()

/**
 * The queue of this library's waiters for the single-key lock of `prefix`: the keys
 * `<prefix>/.queue/<session>` with LOCK_WAITER_FLAGS, ordered by arrival. A key still locked by the
 * session it is named after is a live waiter, unless that session holds `.lock` (its acquisition
 * deletes the key in the same transaction, so only a snapshot patched from a later `.lock` shows
 * both); a key with no session is a dead waiter (its session ended: Consul keeps the key with
 * behavior `release`). Any other key under `.queue/` (other flags, another session) is not ours to
 * read or remove. Go's `consul lock` writes none of these keys, so it is never in this queue.
 * Computed once per snapshot (kept weakly by the snapshot object). O(n log n).
 *
 * @example
 * const { waiting } = lockQueue(snapshot, 'svc/leader')
 * console.log(waiting.map((w) => `#${w.rank} ${w.value ?? w.session}`).join(', '))
 * @param snapshot - Everything under the prefix at one index.
 * @param prefix - The lock's prefix.
 * @param holder - The session on `.lock`, if any: not a waiter.
 * @returns The live waiters and the dead keys, by arrival.
 */
export function lockQueue(snapshot: KVSnapshot, prefix: string, holder?: string): LockQueue {
  const known = queues.get(snapshot)
  if (known !== undefined && known.prefix === prefix) return withoutHolder(known.queue, holder)
  const waiterOf = waiterName(prefix)
  const live: KVEntry[] = []
  const dead: KVEntry[] = []
  for (const entry of snapshot.entries) {
    if (entry.flags !== LOCK_WAITER_FLAGS) continue
    const session = waiterOf(entry.key)
    if (session === undefined) continue
    if (entry.session === session) live.push(entry)
    else if (entry.session === undefined || entry.session === '') dead.push(entry)
  }
  const queue =
    live.length === 0 && dead.length === 0
      ? EMPTY_QUEUE
      : {
          keys: live.sort(byArrival),
          waiting: live.map(rankedAt),
          dead: dead.sort(byArrival),
        }
  queues.set(snapshot, { prefix, queue })
  return withoutHolder(queue, holder)
}

/**
 * The dead waiter keys that this process removes, from the decisions of its members on the
 * snapshot: each dead key is removed by the process of the first live waiter behind it (the one
 * that long-polled it, and woke when Consul cleared its session); a dead key with no live waiter
 * behind it, by the process that leads (a member `Held`), when a listing it has shows the key (the
 * one its acquisition read: a leader then long-polls `.lock` alone). So a dead key with one of ours
 * behind it always has a remover; one at the end of the line that the leader does not see (it died
 * later, or a Go process leads) stays until a waiter of ours joins behind it. Each removal is a delete
 * on the key's ModifyIndex (`delete-cas`), which cannot remove a newer key.
 *
 * ```
 * queue:   a  (b dead)  c  (d dead)
 * removes: c's process removes b; the leader's process removes d (nobody waits behind it)
 * ```
 *
 * @example
 * for (const entry of deadWaitersToRemove(snapshot, prefix, decisions)) deleteCas(entry)
 * @param snapshot - The prefix as last seen.
 * @param prefix - The lock's prefix.
 * @param decisions - The decisions of this process's contenders of the prefix on the snapshot.
 * @returns The dead keys to remove, by arrival.
 */
export function deadWaitersToRemove(
  snapshot: KVSnapshot,
  prefix: string,
  decisions: Iterable<Decision | undefined>,
): readonly KVEntry[] {
  const { keys, dead } = lockQueue(snapshot, prefix)
  if (dead.length === 0) return []
  const ours = new Set<string>()
  let leads = false
  for (const decision of decisions) {
    if (decision?.type === 'Held') leads = true
    const rank =
      decision?.type === 'Wait' || decision?.type === 'TryAcquire' ? decision.rank : undefined
    const session = rank === undefined ? undefined : decision?.view?.waiting[rank]?.session
    if (session !== undefined) ours.add(session)
  }
  const removed: KVEntry[] = []
  let next = 0
  for (const entry of dead) {
    // The first live waiter that arrived after the dead one.
    while (next < keys.length && (keys[next]?.createIndex ?? 0n) < entry.createIndex) next++
    const behind = keys[next]?.session
    if (behind === undefined ? leads : ours.has(behind)) removed.push(entry)
  }
  return removed
}

function withoutHolder(queue: LockQueue, holder: string | undefined): LockQueue {
  if (holder === undefined) return queue
  const at = queue.keys.findIndex((entry) => entry.session === holder)
  if (at < 0) return queue
  const keys = queue.keys.filter((_, i) => i !== at)
  return { keys, waiting: keys.map(rankedAt), dead: queue.dead }
}

function byArrival(a: KVEntry, b: KVEntry): number {
  return a.createIndex < b.createIndex ? -1 : a.createIndex > b.createIndex ? 1 : 0
}

function rankedAt(entry: KVEntry, rank: number): RankedContender {
  return {
    session: entry.session ?? '',
    rank,
    value: entry.value === null ? null : utf8.decode(entry.value),
    createIndex: entry.createIndex,
    weight: 1,
  }
}
