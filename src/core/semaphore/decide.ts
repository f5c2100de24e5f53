import type { KVSnapshot } from '../../base/kv-snapshot.js'
import type { Decision } from '../events.js'
import { decideInView, type ContenderDecideOptions } from './decide-in-view.js'
import { prefixView, type PrefixViewOptions } from './prefix-view.js'

/**
 * What `decide` needs besides the snapshot.
 *
 * @example
 * ```ts
 * const options: DecideOptions = { prefix: 'service/db/lock', session, limit: 3, fairness: true }
 * const decision = decide(snapshot, options)
 * ```
 */
export interface DecideOptions extends PrefixViewOptions, ContenderDecideOptions {}

/**
 * Decides what this contender does next from one snapshot of its prefix: the whole semaphore
 * algorithm of Consul's semaphore guide (read `.lock`, check flags and limit, prune dead holders,
 * rank waiters, CAS) as a pure function: `prefixView` (what the snapshot says, the same for every
 * contender) then `decideInView` (this contender's place in it). Linear in the number of entries
 * (plus the sort of the waiters); contenders that share a prefix share the first step (effects
 * layer).
 *
 * - `Held`: this session is among the live holders; nothing to write. A holder stays `Held`
 *   whatever limit `.lock` states: an operator's change of the limit never takes a slot away.
 * - `NotContending`: `<prefix>/<session>` is missing (or not locked by this session): create it.
 * - `TryAcquire`: PUT `body` to `.lock` with `?cas=<cas>` (0n creates) and SEMAPHORE_FLAGS. The
 *   body is the pruned holders plus this session, in the shape `.lock` was read in (Go's for a
 *   new one).
 * - `Wait`: no free slot, or a free slot that the waiter ranked first should take (one CAS at a
 *   time: the next in line tries once the first one's write shows in a snapshot).
 * - `Conflict` / `LimitConflict` / `CorruptLock`: never write; no retry fixes these. A limit
 *   that is not this contender's is a `LimitConflict` unless `followLimit`, which takes it; a
 *   limit under the holders' count (lowered by an operator) is a `Wait` with no free slot.
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
  return decideInView(prefixView(snapshot, options), options)
}
