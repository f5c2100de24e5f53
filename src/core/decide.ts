import * as E from 'fp-ts/lib/Either.js'
import type { KVSnapshot } from '../consul/types.js'
import { contenderKey } from './contender-key.js'
import { encodeLock } from './encode-lock.js'
import type { Decision, SemaphoreView } from './events.js'
import { liveSessions } from './live-sessions.js'
import { lockKey } from './lock-key.js'
import { pruneHolders } from './prune-holders.js'
import { readLock } from './read-lock.js'
import { waitingContenders } from './waiting-contenders.js'

/**
 * What `decide` needs besides the snapshot.
 *
 * @example
 * ```ts
 * const options: DecideOptions = { prefix: 'service/db/lock', session, limit: 3, fairness: true }
 * const decision = decide(snapshot, options)
 * ```
 */
export interface DecideOptions {
  /** The semaphore prefix all contenders agree on. */
  readonly prefix: string
  /** This contender's session id. */
  readonly session: string
  /** This contender's slot limit (a positive integer); `.lock` must agree. */
  readonly limit: number
  /**
   * Rank waiters by arrival and let only the first of them try while a slot is free (default
   * true), so that a release wakes one CAS attempt rather than one per waiter. Two free slots are
   * filled one after the other: two waiters trying at once would CAS on the same ModifyIndex and
   * one of them would lose anyway. false: every waiter tries.
   */
  readonly fairness?: boolean
  /** Try whenever a slot is free, whatever the rank (set by the liveness guard after the grace). */
  readonly ignoreRank?: boolean
}

/**
 * Decides what this contender does next from one snapshot of its prefix: the whole semaphore
 * algorithm of the seeds (read `.lock`, check flags and limit, prune dead holders, rank waiters,
 * CAS) as a pure function. Linear in the number of entries (plus the sort of the waiters).
 *
 * - `Held`: this session is among the live holders; nothing to write.
 * - `NotContending`: `<prefix>/<session>` is missing (or not locked by this session): create it.
 * - `TryAcquire`: PUT `body` to `.lock` with `?cas=<cas>` (0n creates) and SEMAPHORE_FLAGS. The
 *   body is the pruned holders plus this session, in the shape `.lock` was read in (Go's for a
 *   new one).
 * - `Wait`: no free slot, or a free slot that the waiter ranked first should take (one CAS at a
 *   time: the next in line tries once the first one's write shows in a snapshot).
 * - `Conflict` / `LimitConflict` / `CorruptLock`: never write; no retry fixes these.
 *
 * Safety never depends on the ranking: the CAS on `.lock`'s ModifyIndex serialises every writer,
 * including Go clients that do not rank themselves.
 *
 * @example
 * ```ts
 * const prefix = 'service/db/lock'
 * const decision = decide(snapshot, { prefix, session, limit: 3 })
 * if (decision.type === 'TryAcquire') {
 *   const options = { cas: decision.cas, flags: SEMAPHORE_FLAGS }
 *   await consul.kv.put(lockKey(prefix), decision.body, options)()
 * }
 * ```
 * @param snapshot - Everything under the prefix at one index.
 * @param options - Prefix, session, limit and fairness.
 * @returns The decision.
 */
export function decide(snapshot: KVSnapshot, options: DecideOptions): Decision {
  const { prefix, session, limit } = options
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new RangeError(`limit must be a positive integer, got ${limit}`)
  }
  const key = lockKey(prefix)
  const ownKey = contenderKey(prefix, session)
  const lockEntry = snapshot.entries.find((entry) => entry.key === key)
  const contending = snapshot.entries.some(
    (entry) => entry.key === ownKey && entry.session === session,
  )

  const lock = readLock(lockEntry, key, limit)
  if (E.isLeft(lock)) return lock.left
  const { record, lockIndex } = lock.right

  const { liveHolders, deadHolders } = pruneHolders(
    record?.holders ?? [],
    liveSessions(snapshot.entries),
  )
  const holderSet = new Set(liveHolders)
  const waiting = waitingContenders(snapshot.entries, prefix, holderSet)
  const view: SemaphoreView = {
    limit,
    shape: record?.shape,
    lockIndex,
    liveHolders,
    deadHolders,
    waiting,
  }

  if (holderSet.has(session)) return { type: 'Held', view }
  if (!contending) return { type: 'NotContending', view }

  const freeSlots = Math.max(0, limit - liveHolders.length)
  const rank = waiting.findIndex((contender) => contender.session === session)
  const ranked = options.fairness !== false && options.ignoreRank !== true
  if (freeSlots > 0 && (!ranked || rank === 0)) {
    const body = encodeLock({
      limit,
      holders: [...liveHolders, session],
      shape: record?.shape ?? 'go-map',
    })
    return { type: 'TryAcquire', view, body, cas: lockIndex }
  }
  return { type: 'Wait', view, rank, freeSlots }
}
