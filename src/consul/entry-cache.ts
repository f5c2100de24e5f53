/**
 * The entries a listing decoded, kept to be reused by the next listing of the same keys: a watch
 * lists its whole prefix on every change, and most entries of a busy prefix (a thousand waiters'
 * keys) are the same from one listing to the next. An entry is reused only when its JSON is the
 * same, member by member, as the one decoded before (key, value, flags, session and the three
 * indexes), so a reused entry is exactly what decoding would have made; it is only cheaper (no
 * base64, no bigints, no new object), and the unchanged entries of two snapshots are the same
 * objects.
 *
 * The cache holds what the last listing held and nothing else: the keys gone from it are dropped,
 * so it is never larger than one snapshot. An index that goes back (an agent restarted without its
 * state, a snapshot restored) empties it first.
 *
 * ```
 * listing i:    [a@5 b@7 c@9]   decode a, b, c
 * listing i+1:  [a@5 c@12 d@12] reuse a, decode c and d, drop b
 * ```
 */
import type { KVEntry } from './types.js'

/** An entry as it was decoded, and the JSON object it was decoded from. */
interface Decoded {
  readonly json: Readonly<Record<string, unknown>>
  readonly entry: KVEntry
}

/** Whether two JSON entries of one key have the members a KVEntry is made of in common. */
function sameMembers(a: Readonly<Record<string, unknown>>, b: Readonly<Record<string, unknown>>) {
  return (
    a['ModifyIndex'] === b['ModifyIndex'] &&
    a['Value'] === b['Value'] &&
    a['Session'] === b['Session'] &&
    a['Flags'] === b['Flags'] &&
    a['LockIndex'] === b['LockIndex'] &&
    a['CreateIndex'] === b['CreateIndex']
  )
}

/**
 * Decoded entries to reuse across the listings of one watch (see the module comment). Pass one to
 * `kv.list` (`reuse`) or to a watch (`WatchOptions.reuse`); a watch without one keeps its own.
 *
 * @example
 * ```ts
 * const reuse = new EntryCache()
 * const first = await consul.kv.list('service/db/lock/', { reuse })()
 * const next = await consul.kv.list('service/db/lock/', { reuse })()
 * // entries whose JSON did not change are the same objects in both
 * ```
 */
export class EntryCache {
  private byKey = new Map<string, Decoded>()
  private index: bigint | undefined
  private counts = { decoded: 0, reused: 0 }

  /**
   * Starts a listing at `index`: below the last one seen, the cache is emptied (the keys' indexes
   * no longer tell one write from another).
   * @returns The listing's reader: `reuse` an entry, `keep` a decoded one, `end` the listing.
   */
  listing(index: bigint): EntryListing {
    if (this.index !== undefined && index < this.index) this.byKey.clear()
    this.index = index
    const before = this.byKey
    const now = new Map<string, Decoded>()
    return {
      reuse: (json) => {
        const key = json['Key']
        if (typeof key !== 'string') return undefined
        const found = before.get(key)
        if (found === undefined || !sameMembers(found.json, json)) return undefined
        now.set(key, found)
        this.counts.reused++
        return found.entry
      },
      keep: (json, entry) => {
        now.set(entry.key, { json, entry })
        this.counts.decoded++
      },
      end: () => {
        this.byKey = now
      },
    }
  }

  /** Entries held now (those of the last listing). */
  get size(): number {
    return this.byKey.size
  }

  /** How many entries were decoded, and how many reused, since the cache was made. */
  stats(): { readonly decoded: number; readonly reused: number } {
    return { ...this.counts }
  }
}

/** One listing's use of an EntryCache (see `EntryCache.listing`). */
export interface EntryListing {
  /** The entry decoded before from the same JSON, or undefined. */
  readonly reuse: (json: Readonly<Record<string, unknown>>) => KVEntry | undefined
  /** An entry just decoded from `json`, to keep for the next listing. */
  readonly keep: (json: Readonly<Record<string, unknown>>, entry: KVEntry) => void
  /** The listing decoded without error: it replaces what the cache held. */
  readonly end: () => void
}
