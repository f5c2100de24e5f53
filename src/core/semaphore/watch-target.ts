import { CONTENDER_FLAGS, HOLDER_FLAGS } from '../../base/flags.js'
import type { KVEntry, KVSnapshot } from '../../base/kv-snapshot.js'
import type { Decision, Handed } from '../events.js'
import { contenderKey } from '../keys/contender-key.js'
import { ownWaiterKey } from './waiting-contenders.js'
import { FRONT_PLACES } from './hold-back.js'

/**
 * What a process must long-poll for its semaphore contenders of one prefix: the whole prefix, only
 * the contender key of the waiter just ahead of its best-placed waiter, or only the key of its one
 * contender.
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
  /**
   * `<prefix>/.lock` alone (as a prefix, so with the revoke requests named after it), for the
   * first in line of a leader lock's queue and for its leader (`leaderWatchTarget`): each change
   * of those keys is the news, delivered as the last listing with them patched in, without listing
   * the prefix. Whatever else changes under the prefix (waiters joining behind) does not concern
   * them. The poll goes on from the last listing.
   */
  | {
      /** Discriminant. */
      readonly type: 'lock'
      /** The `.lock` key. */
      readonly key: string
    }
  /**
   * The contender key of the process's only contender, as the snapshot showed it: its change is
   * the contender's own news (a slot handed to it, its session gone), to be read at once.
   */
  | {
      /** Discriminant. */
      readonly type: 'own'
      /** The contender's key. */
      readonly key: string
      /** The contender's session, which locks the key. */
      readonly session: string
      /** Its ModifyIndex in the snapshot the target was chosen on. */
      readonly modifyIndex: bigint
      /**
       * For a holder: `.lock`'s ModifyIndex in the snapshot, and whether other live holders share
       * the semaphore with it (`othersHold`: their hand-overs rewrite `.lock`). A holder
       * long-polls `.lock` beside its key, and the prefix is listed when `.lock` no longer lists
       * it.
       */
      readonly held?: { readonly lockIndex: bigint; readonly othersHold: boolean } | undefined
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
 * A process whose only contender neither re-fences between jobs nor holds several permits (`alone`:
 * a replica, `rxsem run`) goes further, while the slots change hands only by hand-off (`ownTarget`):
 * it long-polls its own key (a holder, `.lock` too), and so a waiter wakes once, when it is handed
 * a slot, whatever the others do before it.
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
 * @param alone - The session of the process's only contender, when it has one and it may watch
 *   its own key alone (see above); its decision is then the only one.
 * @returns What to long-poll next.
 */
export function watchTarget(
  snapshot: KVSnapshot,
  prefix: string,
  decisions: Iterable<Decision | undefined>,
  alone?: string,
): WatchTarget {
  // Read once: the decisions may come from a generator.
  const decided = alone === undefined ? decisions : [...decisions]
  if (alone !== undefined) {
    for (const decision of decided) {
      const own = decision && ownTarget(snapshot, prefix, alone, decision)
      if (own !== undefined) return own
    }
  }
  let best: { rank: number; ahead: string } | undefined
  for (const decision of decided) {
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
  const entry = ownWaiterKey(snapshot, prefix, best.ahead)
  if (entry === undefined) return WHOLE_PREFIX
  return { type: 'key', key: entry.key, modifyIndex: entry.modifyIndex }
}

/**
 * The own key of a process's only contender, when nothing but a change of that key concerns it:
 *
 * - a holder (HOLDER_FLAGS on its key) that nobody asked to give its slot back, once someone
 *   waits (until then it watches the prefix, whose first join names the heir its release hands
 *   the slot to without a listing first): the slot is lost only with its key (its session gone:
 *   Consul deletes the key) or by an edit of `.lock` by hand, so it long-polls `.lock` too, and
 *   lists the prefix when either changes to its loss; its release builds on the newest `.lock` it
 *   saw, and lists the prefix when that was not enough (`ReleaseInput.listReads`);
 * - a waiter of one permit in line while every slot is taken by a holder of this library of one
 *   permit (HOLDER_FLAGS) and every waiter ahead of it runs this library (CONTENDER_FLAGS): each
 *   release then hands its slot to the first in line, rewriting that waiter's key, so this
 *   waiter's turn comes as a change of its own key, and nothing before it is news to it.
 *
 * What a waiter sees only when it lists the prefix again, every 5 s (`PARKED_RECHECK_MS`): a slot
 * freed without a hand-off (a holder whose process died, whose session Consul expired). An
 * eviction by force and a raise of the limit write the keys of the waiters of this library they
 * admit again as they are (`evict`, `setLimit`), which wakes them. A holder that loses its session
 * while its process runs hands its slot on all the same (`handOffSlot` takes a dead holder's slot
 * too). A holder misses nothing that concerns it: a revoke request (`evict` with a grace) rewrites
 * its key as it is, so it sees the request at once; a new limit in `.lock` that still lists it is
 * seen at its release.
 */
function ownTarget(
  snapshot: KVSnapshot,
  prefix: string,
  session: string,
  decision: Decision,
): WatchTarget | undefined {
  if (decision.type !== 'Held' && decision.type !== 'Wait') return undefined
  const key = contenderKey(prefix, session)
  const entry = snapshot.entries.find((e) => e.key === key)
  if (entry?.session !== session) return undefined
  const { view } = decision
  if (view.sharedHolders.length > 0) return undefined
  if (decision.type === 'Held') {
    if (entry.flags !== HOLDER_FLAGS || decision.revokeRequested !== undefined) return undefined
    // Nobody waits: the first to join is the heir of its release, which the prefix shows at once
    // and its own key and `.lock` never would (its release would list the prefix first).
    if (view.waiting.length === 0) return undefined
    const held = { lockIndex: view.lockIndex, othersHold: view.liveHolders.length > 1 }
    return { type: 'own', key, session, modifyIndex: entry.modifyIndex, held }
  }
  const own: WatchTarget = { type: 'own', key, session, modifyIndex: entry.modifyIndex }
  if (decision.rank === undefined || decision.freeSlots > 0 || entry.flags !== CONTENDER_FLAGS) {
    return undefined
  }
  // Only holders that hand their slot on, and no more of them than the limit (a limit lowered
  // under its holders admits no one, so their releases hand nothing).
  if (view.liveHolders.length > view.limit) return undefined
  const byKey = new Map<string, KVEntry>()
  for (const e of snapshot.entries) byKey.set(e.key, e)
  const flagged = (id: string, flags: bigint): boolean => {
    const found = byKey.get(contenderKey(prefix, id))
    return found?.flags === flags && found.session === id
  }
  if (!view.liveHolders.every((holder) => flagged(holder, HOLDER_FLAGS))) return undefined
  for (let rank = 0; rank < decision.rank; rank++) {
    const ahead = view.waiting[rank]
    if (ahead === undefined || !flagged(ahead.session, CONTENDER_FLAGS)) return undefined
  }
  return own
}

/**
 * The hand-off that a waiter asleep on its own key (`target`, no `held`) reads in its key's new
 * entry, if that is what the change is: its key, still locked by its session, marked
 * `HOLDER_FLAGS` at a new index. Two writes mark a waiter's key so, and both are transactions
 * that write `.lock` listing its session at the same index: a release handing it the slot
 * (`handOffOps`), and its own CAS, which a waiter asleep on its key does not make. So the entry
 * proves the slot was its at that index, and it may hold at once (`handed`) instead of after the
 * listing that follows, which confirms it or shows what changed since.
 *
 * @example
 * ```ts
 * const handed = handedTo(target, answer.entries.find((e) => e.key === target.key))
 * if (handed !== undefined) member.onWatch(handed) // holds with handed.index as its token
 * ```
 * @param target - What the process long-polls.
 * @param entry - The target key's entry in the poll's answer (undefined: the key is gone).
 * @returns The `handed` event, or undefined when the change is anything else.
 */
export function handedTo(target: WatchTarget, entry: KVEntry | undefined): Handed | undefined {
  if (target.type !== 'own' || target.held !== undefined || entry === undefined) return undefined
  const { key, session, modifyIndex } = target
  if (entry.key !== key || entry.session !== session || entry.flags !== HOLDER_FLAGS) {
    return undefined
  }
  return entry.modifyIndex > modifyIndex
    ? { type: 'handed', session, index: entry.modifyIndex }
    : undefined
}

/**
 * Whether two targets are the same long poll.
 *
 * @example
 * targets.pipe(distinctUntilChanged(sameWatchTarget))
 * @param a - A target.
 * @param b - Another.
 * @returns True when both watch the prefix, or `.lock` (whatever its index), or the same key at
 *   the same index (and, for a holder's own key, `.lock` at the same index).
 */
export function sameWatchTarget(a: WatchTarget, b: WatchTarget): boolean {
  if (a.type === 'prefix' || b.type === 'prefix') return a.type === b.type
  // A watch of `.lock` follows the key from its own answers and the listings: a target chosen on
  // one of them is where the watch already is.
  if (a.type === 'lock' || b.type === 'lock') return a.type === b.type && a.key === b.key
  if (a.type === 'own' && b.type === 'own') {
    if (a.held?.lockIndex !== b.held?.lockIndex || a.held?.othersHold !== b.held?.othersHold) {
      return false
    }
  }
  return a.type === b.type && a.key === b.key && a.modifyIndex === b.modifyIndex
}
