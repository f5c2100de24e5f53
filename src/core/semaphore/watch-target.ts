import { CONTENDER_FLAGS } from '../../base/flags.js'
import type { KVSnapshot } from '../../base/kv-snapshot.js'
import type { Decision } from '../events.js'
import { contenderKey } from '../keys/contender-key.js'
import { FRONT_PLACES } from './hold-back.js'

/**
 * What a process must long-poll for its semaphore contenders of one prefix: the whole prefix, or
 * only the contender key of the waiter just ahead of its best-placed waiter.
 *
 * @example
 * ```ts
 * const target: WatchTarget = { type: 'key', key: 'svc/lock/4ca8e74b-…', modifyIndex: 812n }
 * ```
 */
export type WatchTarget =
  /** Every key under the prefix (a holder, the front of the queue, anything unsure). */
  | {
      /** Discriminant. */
      readonly type: 'prefix'
    }
  /** One contender key, as the snapshot showed it: a change or its deletion is the wake-up. */
  | {
      /** Discriminant. */
      readonly type: 'key'
      /** The contender key of the waiter ahead. */
      readonly key: string
      /** Its ModifyIndex in the snapshot the target was chosen on. */
      readonly modifyIndex: bigint
    }

/** The target that never misses anything. */
export const WHOLE_PREFIX: WatchTarget = { type: 'prefix' }

/**
 * Herd-free waiting, as in ZooKeeper's lock recipe: a process whose semaphore contenders are all
 * waiting further back than the first `FRONT_PLACES` places has nothing to do until the waiter
 * just ahead of its best-placed one leaves the queue. That waiter's key changes exactly then: the
 * write that makes a contender of this library a holder (its CAS, or a release handing it the
 * slot) rewrites its key, and a contender that leaves or dies loses its key. So such a process
 * long-polls that one key instead of the prefix, and a handover wakes the holders, the front of
 * the queue and the one waiter behind the new holder, not every process of the queue.
 *
 * Anything else watches the whole prefix: a holder (it must see its removal at once), the front
 * of the queue (it takes free slots and prunes dead holders), a contender whose key is not there
 * yet, a prefix problem, or a waiter whose predecessor is a Go contender (Go's CAS does not touch
 * its key, so that key would not say when it became a holder).
 *
 * ```
 * queue:   H H H | w0 w1 w2(go) w3 w4
 * watches: prefix   prefix prefix  prefix(w2 is Go)  key(w3)
 * ```
 *
 * @example
 * ```ts
 * const target = watchTarget(snapshot, 'svc/lock', [decide(snapshot, { prefix, session, limit: 3 })])
 * if (target.type === 'key') console.log('long-poll', target.key)
 * ```
 * @param snapshot - The prefix as last seen.
 * @param prefix - The semaphore prefix.
 * @param decisions - The decisions of this process's contenders of the prefix on the snapshot
 *   (each computed once per snapshot, by the prefix's coordinator); undefined for one that has
 *   none yet, which watches the prefix.
 * @returns What to long-poll next.
 */
export function watchTarget(
  snapshot: KVSnapshot,
  prefix: string,
  decisions: Iterable<Decision | undefined>,
): WatchTarget {
  let best: { rank: number; ahead: string } | undefined
  for (const decision of decisions) {
    // A free slot it may not take yet is worth watching: the fairness grace counts on snapshots
    // of the prefix (the waiters ahead may be dead, and only their sessions' expiry moves them).
    if (
      decision === undefined ||
      decision.type !== 'Wait' ||
      decision.rank === undefined ||
      decision.rank < FRONT_PLACES ||
      decision.freeSlots > 0
    ) {
      return WHOLE_PREFIX
    }
    const ahead = decision.view.waiting[decision.rank - 1]?.session
    if (ahead === undefined) return WHOLE_PREFIX
    if (best === undefined || decision.rank < best.rank) best = { rank: decision.rank, ahead }
  }
  if (best === undefined) return WHOLE_PREFIX
  const key = contenderKey(prefix, best.ahead)
  const entry = snapshot.entries.find((e) => e.key === key)
  if (entry?.flags !== CONTENDER_FLAGS || entry.session !== best.ahead) return WHOLE_PREFIX
  return { type: 'key', key, modifyIndex: entry.modifyIndex }
}

/**
 * Whether two targets are the same long poll.
 *
 * @example
 * targets.pipe(distinctUntilChanged(sameWatchTarget))
 * @param a - A target.
 * @param b - Another.
 * @returns True when both watch the prefix, or the same key at the same index.
 */
export function sameWatchTarget(a: WatchTarget, b: WatchTarget): boolean {
  if (a.type === 'prefix' || b.type === 'prefix') return a.type === b.type
  return a.key === b.key && a.modifyIndex === b.modifyIndex
}
