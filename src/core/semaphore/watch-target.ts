import * as E from 'fp-ts/lib/Either.js'
import { CONTENDER_FLAGS } from '../../consul/flags.js'
import type { KVEntry, KVSnapshot } from '../../consul/types.js'
import type { Decision } from '../events.js'
import { contenderKey } from '../keys/contender-key.js'
import { lockKey } from '../keys/lock-key.js'
import { readLock } from '../lock-body/read-lock.js'
import { FRONT_PLACES } from './pass-to-waiter.js'

/** A key as a snapshot showed it: a change of its ModifyIndex, or its deletion, is news. */
export interface WatchedKey {
  /** The full key. */
  readonly key: string
  /** Its ModifyIndex in the snapshot the target was chosen on. */
  readonly modifyIndex: bigint
}

/**
 * What a process must long-poll for its semaphore contenders of one prefix: the whole prefix,
 * only the contender key of the waiter just ahead of its best-placed waiter, or, when all of
 * them hold, `.lock` and their own keys.
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
   * Holders only: `.lock` (any removal of a holder, prune or hand-off writes it) and each
   * holder's own contender key (its deletion, or its session's end, which deletes it). A `.lock`
   * that still lists every one of them is no news (`heldLockNews`).
   */
  | {
      /** Discriminant. */
      readonly type: 'held'
      /** `.lock` as the snapshot showed it. */
      readonly lock: WatchedKey
      /** The holders' sessions. */
      readonly sessions: readonly string[]
      /** Their contender keys, as the snapshot showed them. */
      readonly keys: readonly WatchedKey[]
    }

/** One contender of the process and its decision on the snapshot (none without a session). */
export interface MemberDecision {
  /** Its session. */
  readonly session: string
  /** Its decision on the snapshot. */
  readonly decision: Decision
}

/**
 * How many holders of one process may park on their own keys: each is one more long poll on the
 * client's pool (16 connections by default), which its renewals and writes share. More holders
 * than this watch the prefix, one long poll for all of them.
 */
export const PARKED_HOLDERS_MAX = 3

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
 * A process whose contenders all hold (at most `PARKED_HOLDERS_MAX` of them) has nothing to do
 * until one of them loses its slot, and only two keys say so: `.lock`, which every removal of a
 * holder writes (an operator's edit, a prune by an acquirer, a hand-off, a release), and the
 * holder's own contender key, which goes with its session (behavior `delete`) or an operator's
 * delete. It long-polls those instead of the prefix, so that the queue's joins and the other
 * holders' keys do not wake it; a `.lock` write that still lists all of them is no news
 * (`heldLockNews`).
 *
 * Anything else watches the whole prefix: the front of the queue (it takes free slots and prunes
 * dead holders), a process with both holders and waiters, a contender whose key is not there
 * yet, a prefix problem, or a waiter whose predecessor is a Go contender (Go's CAS does not touch
 * its key, so that key would not say when it became a holder).
 *
 * ```
 * queue:   H H H | w0 w1 w2(go) w3 w4
 * watches: .lock+own key   prefix prefix  prefix(w2 is Go)  key(w3)
 * ```
 *
 * @example
 * ```ts
 * const target = watchTarget(snapshot, 'svc/lock', [{ session, decision: decide(snapshot, { prefix, session, limit: 3 }) }])
 * if (target.type === 'key') console.log('long-poll', target.key)
 * ```
 * @param snapshot - The prefix as last seen.
 * @param prefix - The semaphore prefix.
 * @param decisions - The decisions of this process's contenders of the prefix on the snapshot
 *   (each computed once per snapshot, by the prefix's coordinator), with their sessions;
 *   undefined for one that has none yet, which watches the prefix.
 * @returns What to long-poll next.
 */
export function watchTarget(
  snapshot: KVSnapshot,
  prefix: string,
  decisions: Iterable<MemberDecision | undefined>,
): WatchTarget {
  const holders: string[] = []
  let best: { rank: number; ahead: string } | undefined
  for (const member of decisions) {
    if (member === undefined) return WHOLE_PREFIX
    const { decision } = member
    if (decision.type === 'Held') {
      holders.push(member.session)
      continue
    }
    // A free slot it may not take yet is worth watching: the fairness grace counts on snapshots
    // of the prefix (the waiters ahead may be dead, and only their sessions' expiry moves them).
    if (
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
  if (holders.length > 0) {
    return best === undefined ? heldTarget(snapshot, prefix, holders) : WHOLE_PREFIX
  }
  if (best === undefined) return WHOLE_PREFIX
  const key = contenderKey(prefix, best.ahead)
  const entry = snapshot.entries.find((e) => e.key === key)
  if (entry?.flags !== CONTENDER_FLAGS || entry.session !== best.ahead) return WHOLE_PREFIX
  return { type: 'key', key, modifyIndex: entry.modifyIndex }
}

/** `.lock` and the holders' own keys, each as the snapshot shows it, or the prefix. */
function heldTarget(snapshot: KVSnapshot, prefix: string, sessions: string[]): WatchTarget {
  if (sessions.length > PARKED_HOLDERS_MAX) return WHOLE_PREFIX
  const byKey = new Map(snapshot.entries.map((entry) => [entry.key, entry]))
  const lock = byKey.get(lockKey(prefix))
  if (lock === undefined) return WHOLE_PREFIX
  const keys: WatchedKey[] = []
  for (const session of sessions) {
    const key = contenderKey(prefix, session)
    const entry = byKey.get(key)
    if (entry?.session !== session) return WHOLE_PREFIX
    keys.push({ key, modifyIndex: entry.modifyIndex })
  }
  return { type: 'held', lock: { key: lock.key, modifyIndex: lock.modifyIndex }, sessions, keys }
}

/**
 * Whether a `.lock` answer to a `held` target's long poll is news for the process: `.lock` is
 * gone, cannot be read (conflict, corrupt), or no longer lists every one of its holders. A
 * `.lock` that lists them all, whatever else changed in it (other holders, the limit), leaves
 * each of them `Held`, so the process need not list the prefix for it.
 *
 * @example
 * ```ts
 * if (heldLockNews(answer, target)) listThePrefixOnce()
 * ```
 * @param entry - `.lock` as the long poll answered it (undefined: gone).
 * @param target - The `held` target polled.
 * @returns True when the holders must decide on a listing of the prefix.
 */
export function heldLockNews(
  entry: KVEntry | undefined,
  target: Extract<WatchTarget, { type: 'held' }>,
): boolean {
  if (entry === undefined) return true
  const lock = readLock(entry, target.lock.key)
  if (E.isLeft(lock) || lock.right.record === undefined) return true
  const { holders } = lock.right.record
  return !target.sessions.every((session) => holders.includes(session))
}

/**
 * Whether two targets are the same long poll.
 *
 * @example
 * targets.pipe(distinctUntilChanged(sameWatchTarget))
 * @param a - A target.
 * @param b - Another.
 * @returns True when both watch the prefix, or the same keys at the same indexes.
 */
export function sameWatchTarget(a: WatchTarget, b: WatchTarget): boolean {
  switch (a.type) {
    case 'prefix':
      return b.type === 'prefix'
    case 'key':
      return b.type === 'key' && sameKey(a, b)
    case 'held':
      return (
        b.type === 'held' &&
        sameKey(a.lock, b.lock) &&
        a.keys.length === b.keys.length &&
        a.keys.every((key, i) => sameKey(key, b.keys[i] as WatchedKey))
      )
  }
}

const sameKey = (a: WatchedKey, b: WatchedKey): boolean =>
  a.key === b.key && a.modifyIndex === b.modifyIndex
