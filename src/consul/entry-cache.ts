/**
 * The entries a listing decoded, kept to be reused by the next listing of the same keys: a watch
 * lists its whole prefix on every change, and most entries of a busy prefix (a thousand waiters'
 * keys) are the same from one listing to the next. An entry is reused only when its JSON text is
 * the same, character for character, as the one decoded before (its key, value, flags, session
 * and three indexes), so a reused entry is exactly what decoding would have made; it is only
 * cheaper (no JSON parse, no base64, no bigints, no new object), and the unchanged entries of two
 * snapshots are the same objects.
 *
 * The cache holds what the last listing held and nothing else: the entries gone from it (a key
 * deleted, or rewritten at a new ModifyIndex) are dropped, so it is never larger than one
 * snapshot. An index that goes back (an agent restarted without its state, a snapshot restored)
 * empties it first.
 *
 * ```
 * listing i:    [a@5 b@7 c@9]   decode a, b, c
 * listing i+1:  [a@5 c@12 d@12] reuse a, decode c and d, drop b
 * ```
 */
import type { KVEntry } from './types.js'

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
  private byText = new Map<string, KVEntry>()
  private index: bigint | undefined
  private counts = { decoded: 0, reused: 0 }

  /**
   * Starts a listing at `index`: below the last one seen, the cache is emptied (the keys' indexes
   * no longer tell one write from another).
   * @returns The listing's reader: `reuse` an entry, `keep` a decoded one, `end` the listing.
   */
  listing(index: bigint): EntryListing {
    if (this.index !== undefined && index < this.index) this.byText.clear()
    this.index = index
    const before = this.byText
    const now = new Map<string, KVEntry>()
    return {
      reuse: (text) => {
        const found = before.get(text)
        if (found === undefined) return undefined
        now.set(text, found)
        this.counts.reused++
        return found
      },
      keep: (text, entry) => {
        now.set(copyOf(text), entry)
        this.counts.decoded++
      },
      end: () => {
        this.byText = now
      },
    }
  }

  /** Entries held now (those of the last listing). */
  get size(): number {
    return this.byText.size
  }

  /** How many entries were decoded, and how many reused, since the cache was made. */
  stats(): { readonly decoded: number; readonly reused: number } {
    return { ...this.counts }
  }
}

/**
 * A string of its own: a piece cut out of an answer's body may share the body's memory (V8 keeps
 * long substrings as slices of their parent), and a piece kept for many listings would keep every
 * body it came from alive.
 */
function copyOf(text: string): string {
  return Buffer.from(text, 'utf8').toString('utf8')
}

/** One listing's use of an EntryCache (see `EntryCache.listing`). */
export interface EntryListing {
  /** The entry decoded before from the same JSON text, or undefined. */
  readonly reuse: (text: string) => KVEntry | undefined
  /** An entry just decoded from `text`, to keep for the next listing. */
  readonly keep: (text: string, entry: KVEntry) => void
  /** The listing decoded without error: it replaces what the cache held. */
  readonly end: () => void
}

/**
 * The JSON texts of the objects of a JSON array of flat objects, as Consul writes a KV listing
 * (`[{"LockIndex":0,"Key":...},{...}]`, indented or not), or undefined for any other layout. The
 * array is `[` + the texts joined by `,` + `]` (whitespace aside), so it is valid JSON when each
 * text is a valid JSON object.
 *
 * The texts are cut at a `}`, a `,` and a `{` followed by a `"` and a letter (whitespace between
 * them): inside a string a `"` is written `\"`, so a `{` in a string followed by a bare `"` ends
 * that string, and a letter cannot follow the end of a string in valid JSON; that `{`, and so the
 * `,` and `}` before it, are outside any string. An object holding an array of objects is cut
 * inside it, and its pieces then fail to parse: the caller decodes the whole array instead.
 */
export function splitListing(body: string): string[] | undefined {
  const text = body.trim()
  if (!text.startsWith('[') || !text.endsWith(']')) return undefined
  const inner = text.slice(1, -1).trim()
  if (inner === '') return []
  if (!inner.startsWith('{') || !inner.endsWith('}')) return undefined
  const between = new RegExp(BETWEEN_ENTRIES.source, 'g')
  const pieces: string[] = []
  let start = 0
  for (let cut = between.exec(inner); cut !== null; cut = between.exec(inner)) {
    pieces.push(inner.slice(start, cut.index + 1))
    start = cut.index + cut[0].length
  }
  pieces.push(inner.slice(start))
  return pieces
}

/** The `}`, `,` between two objects of an array, before a `{"` and a letter (see splitListing). */
const BETWEEN_ENTRIES = /\}\s*,\s*(?=\{\s*"[A-Za-z])/g
