import type { KVEntry } from '../../base/kv-snapshot.js'

/**
 * The sessions that hold some key in the listing: a holder is alive while its session still locks
 * a key under the prefix (Go's `pruneDeadHolders`; sessions of behavior `delete` lose their
 * contender key when they are invalidated).
 *
 * @example
 * liveSessions(snapshot.entries).has(holder)
 * @param entries - Every entry of the prefix listing.
 * @returns The set of non-empty `session` fields.
 */
export function liveSessions(entries: readonly KVEntry[]): ReadonlySet<string> {
  const live = new Set<string>()
  for (const entry of entries) {
    if (entry.session !== undefined && entry.session !== '') live.add(entry.session)
  }
  return live
}
