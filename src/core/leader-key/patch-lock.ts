import type { KVEntry, KVSnapshot } from '../../base/kv-snapshot.js'

/**
 * A listing of the prefix with `.lock` and the keys named after it (a revoke request,
 * `<prefix>/.lock.revoke/<session>`) as a long poll of `.lock` as a prefix later found them: the
 * first in line of a leader lock's queue, and the leader, poll those keys alone, and decide on the
 * last listing they have with the new ones in it, instead of listing the prefix again. Nothing
 * else in the listing concerns them (waiters joining or leaving behind, keys they do not read),
 * and what the first in line decides there (to try the key) is checked by Consul: the acquisition
 * is a `lock` of that very key. The index is the poll's when it is newer, so that the listing
 * that follows blocks from there.
 *
 * ```
 * listing:  { index 40, [.lock (b, 38), .queue/a (39)] }
 * poll:     { index 52, [.lock (-, 52)] }              b released at 52
 * patched:  { index 52, [.lock (-, 52), .queue/a (39)] }
 * ```
 *
 * @example
 * const patched = patchLock(last, lockKey(prefix), answer.entries, answer.index)
 * @param listing - The last listing of the prefix.
 * @param key - The `.lock` key.
 * @param polled - What the poll of `key` as a prefix answered: every key that starts with it.
 * @param index - The poll's index.
 * @returns The listing with those keys in place of the ones it had, entries still sorted by key.
 */
export function patchLock(
  listing: KVSnapshot,
  key: string,
  polled: readonly KVEntry[],
  index: bigint,
): KVSnapshot {
  const entries = listing.entries.filter((e) => !e.key.startsWith(key))
  const at = entries.findIndex((e) => e.key > key)
  entries.splice(at < 0 ? entries.length : at, 0, ...polled)
  return { index: index > listing.index ? index : listing.index, entries }
}

/**
 * Whether a poll of `key` as a prefix (`polled`) found the keys that start with it as `listing`
 * has them: the same keys at the same ModifyIndex.
 *
 * @example
 * if (sameLockKeys(last, lockKey(prefix), answer.entries)) return EMPTY // no news
 * @param listing - The last listing of the prefix.
 * @param key - The `.lock` key.
 * @param polled - What the poll answered.
 * @returns True when nothing that starts with `key` changed.
 */
export function sameLockKeys(
  listing: KVSnapshot,
  key: string,
  polled: readonly KVEntry[],
): boolean {
  let i = 0
  for (const entry of listing.entries) {
    if (!entry.key.startsWith(key)) continue
    const other = polled[i++]
    if (other?.key !== entry.key || other.modifyIndex !== entry.modifyIndex) return false
  }
  return i === polled.length
}
