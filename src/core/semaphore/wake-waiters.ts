import * as E from 'fp-ts/lib/Either.js'
import type { KVEntry, KVSnapshot } from '../../base/kv-snapshot.js'
import { ownWaiterKey } from './waiting-contenders.js'
import { prefixView } from './prefix-view.js'

/**
 * The waiters of this library that a raise of the limit to `limit` admits: the first
 * `limit − live holders` in line (`view.waiting`, the order they take slots in), less those that
 * are not this library's contenders of one permit (a Go waiter watches the
 * prefix itself). An operator's write that frees slots writes their keys again as they are
 * (`rewriteKeyOps`), which wakes a waiter that long-polls only its own key; it lists the prefix
 * and takes its slot by its own CAS, instead of at its next recheck.
 *
 * ```
 * .lock: limit 2 → 4, holders h1 h2   line: w0 (ours)  g1 (Go)  w2 (ours)  w3 (ours)
 * admitted: w0 g1   woken: w0
 * ```
 *
 * @example
 * const keys = waitersToWake(listing, 'svc/jobs', 5)
 * @param snapshot - The prefix, as listed before the write.
 * @param prefix - The semaphore prefix.
 * @param limit - The limit the write sets.
 * @returns Their entries as listed (the write checks each is unchanged), in line order.
 */
export function waitersToWake(snapshot: KVSnapshot, prefix: string, limit: number): KVEntry[] {
  const shared = prefixView(snapshot, { prefix, limit, followLimit: true })
  if (E.isLeft(shared)) return []
  const { view } = shared.right
  const admitted = view.waiting.slice(0, Math.max(0, limit - view.liveHolders.length))
  return admitted.flatMap(({ session }) => ownWaiterKey(snapshot, prefix, session) ?? [])
}
