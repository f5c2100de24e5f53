import type { KVEntry, KVSnapshot } from '../../base/kv-snapshot.js'

/**
 * A listing of the prefix with `.lock` as a long poll of that key alone later found it: the first
 * in line of a leader lock's queue polls `.lock` alone, and decides on the last listing it has
 * with the new key in it, instead of listing the prefix again. Nothing else in the listing
 * concerns a waiter first in line (waiters behind it, keys it does not read), and what it decides
 * there (to try the key) is checked by Consul: the acquisition is a `lock` of that very key. The
 * index is the poll's when it is newer, so that the listing that follows blocks from there.
 *
 * ```
 * listing:  { index 40, [.lock (b, 38), .queue/a (39)] }
 * poll:     { index 52, [.lock (-, 52)] }              b released at 52
 * patched:  { index 52, [.lock (-, 52), .queue/a (39)] }
 * ```
 *
 * @example
 * const patched = patchLock(last, lockKey(prefix), answer.entries.find((e) => e.key === key), answer.index)
 * @param listing - The last listing of the prefix.
 * @param key - The `.lock` key.
 * @param entry - `.lock` as the poll answered it; undefined: it is gone.
 * @param index - The poll's index.
 * @returns The listing with that `.lock`, entries still sorted by key.
 */
export function patchLock(
  listing: KVSnapshot,
  key: string,
  entry: KVEntry | undefined,
  index: bigint,
): KVSnapshot {
  const entries = listing.entries.filter((e) => e.key !== key)
  if (entry !== undefined) {
    const at = entries.findIndex((e) => e.key > key)
    entries.splice(at < 0 ? entries.length : at, 0, entry)
  }
  return { index: index > listing.index ? index : listing.index, entries }
}
