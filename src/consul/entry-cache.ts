/**
 * The entries a listing decoded, kept to be reused by the next listing of the same keys: a watch
 * lists its whole prefix on every change, and most entries of a busy prefix (a thousand waiters'
 * keys) are the same from one listing to the next. An entry is reused only when its JSON text is
 * the same, byte for byte, as the one decoded before (its key, value, flags, session and three
 * indexes), so a reused entry is exactly what decoding would have made; it is only cheaper (no
 * JSON parse, no base64, no bigints, no new object), and the unchanged entries of two snapshots
 * are the same objects.
 *
 * The listing is read as the bytes it arrived in, never as one string: Consul writes the entries
 * in key order, so each entry's bytes are compared with those of the entry at the same place in
 * the last listing (or the next few places: keys deleted since), and only an entry that differs is
 * cut out, turned into text and decoded. The cache keeps the last listing's bytes in a buffer of
 * its own, and writes the next one into a second buffer that it reuses from listing to listing:
 * a listing of a thousand entries (about 200 KB) costs no allocation of its size, which a process
 * pays dearly for (memory of that size is mapped afresh and faulted in page by page).
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
import type { KVEntry } from '../base/kv-snapshot.js'

/** How many places ahead of the expected one an unchanged entry is looked for (keys deleted). */
const LOOKAHEAD = 4

/** The bytes of the last listing, and where each of its entries lies in them. */
interface Listed {
  /** The bytes, from the start of a buffer that may be longer. */
  readonly buffer: Buffer
  readonly starts: readonly number[]
  readonly ends: readonly number[]
  readonly entries: readonly KVEntry[]
}

const NOTHING_LISTED: Listed = { buffer: Buffer.alloc(0), starts: [], ends: [], entries: [] }

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
  private last: Listed = NOTHING_LISTED
  /** The buffer the next listing is copied into (the one before the last listing's). */
  private spare: Buffer = Buffer.alloc(0)
  private index: bigint | undefined
  private counts = { decoded: 0, reused: 0 }

  /**
   * Starts a listing at `index` whose body is `chunks` (the bytes as they arrived): below the
   * last index seen, the cache is emptied (the keys' indexes no longer tell one write from
   * another).
   * @returns The listing's reader (see EntryListing).
   */
  listing(index: bigint, chunks: readonly Uint8Array[]): EntryListing {
    if (this.index !== undefined && index < this.index) this.last = NOTHING_LISTED
    this.index = index
    let size = 0
    for (const chunk of chunks) size += chunk.length
    // The spare buffer, unless the last listing's bytes are in it (a listing that failed) or it
    // is too small; a new one leaves room to grow.
    let buffer = this.spare
    if (buffer.length < size || buffer === this.last.buffer) {
      buffer = Buffer.allocUnsafe(Math.ceil(size * 1.25))
    }
    let at = 0
    for (const chunk of chunks) {
      buffer.set(chunk, at)
      at += chunk.length
    }
    const bytes = buffer.subarray(0, size)
    const before = this.last
    const starts: number[] = []
    const ends: number[] = []
    const entries: KVEntry[] = []
    /** The place in the last listing where the next unchanged entry is expected. */
    let next = 0
    const counts = this.counts
    return {
      bytes,
      reuse: (start) => {
        const stop = Math.min(next + LOOKAHEAD, before.entries.length)
        for (let k = next; k < stop; k++) {
          const from = before.starts[k] as number
          const to = before.ends[k] as number
          const end = start + (to - from)
          if (end > size || before.buffer.compare(bytes, start, end, from, to) !== 0) continue
          next = k + 1
          starts.push(start)
          ends.push(end)
          const entry = before.entries[k] as KVEntry
          entries.push(entry)
          counts.reused++
          return end
        }
        return undefined
      },
      keep: (start, end, entry) => {
        starts.push(start)
        ends.push(end)
        entries.push(entry)
        counts.decoded++
        // The keys up to this one in the last listing are gone or changed: the next unchanged
        // entry is expected after them (both listings are in key order).
        while (next < before.entries.length && (before.entries[next] as KVEntry).key <= entry.key) {
          next++
        }
      },
      end: () => {
        this.spare = before.buffer
        this.last = { buffer, starts, ends, entries }
        return entries
      },
    }
  }

  /** Entries held now (those of the last listing). */
  get size(): number {
    return this.last.entries.length
  }

  /** How many entries were decoded, and how many reused, since the cache was made. */
  stats(): { readonly decoded: number; readonly reused: number } {
    return { ...this.counts }
  }
}

/** One listing's use of an EntryCache (see `EntryCache.listing`). */
export interface EntryListing {
  /** The listing's body, copied into a buffer of the cache. */
  readonly bytes: Buffer
  /**
   * The entry whose JSON text starts at byte `start` of `bytes`, when the last listing decoded
   * the same text: taken, and the end of its text returned; undefined otherwise.
   */
  readonly reuse: (start: number) => number | undefined
  /** An entry just decoded from bytes `start` to `end`, to keep for the next listing. */
  readonly keep: (start: number, end: number, entry: KVEntry) => void
  /** The listing decoded without error: it replaces what the cache held. Its entries. */
  readonly end: () => readonly KVEntry[]
}

const SPACE = 0x20
const TAB = 0x09
const LF = 0x0a
const CR = 0x0d
const COMMA = 0x2c
const QUOTE = 0x22
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d

const isSpace = (byte: number | undefined): boolean =>
  byte === SPACE || byte === LF || byte === CR || byte === TAB

/** The first byte at or after `at` that is not JSON whitespace (the length if none). */
export function skipSpace(bytes: Uint8Array, at: number): number {
  while (at < bytes.length && isSpace(bytes[at])) at++
  return at
}

const isLetter = (byte: number | undefined): boolean =>
  byte !== undefined && ((byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a))

/**
 * The end (after its `}`) of the JSON object of a listing that starts at byte `start`, or
 * undefined when it is not followed by another object of the listing (the last one). Consul
 * writes a KV listing as an array of flat objects (`[{"LockIndex":0,"Key":...},{...}]`, indented
 * or not); an object ends at a `}`, a `,` and a `{` followed by a `"` and a letter (whitespace
 * between them): inside a string a `"` is written `\"`, so a `{` in a string followed by a bare
 * `"` ends that string, and a letter cannot follow the end of a string in valid JSON; that `{`,
 * and so the `,` and `}` before it, are outside any string. An object holding an array of
 * objects is cut inside it, and its pieces then fail to parse: the caller decodes the whole array
 * instead.
 */
export function objectEnd(bytes: Buffer, start: number): number | undefined {
  for (let brace = bytes.indexOf(CLOSE_BRACE, start); brace >= 0;) {
    let at = skipSpace(bytes, brace + 1)
    if (bytes[at] === COMMA) {
      at = skipSpace(bytes, at + 1)
      if (bytes[at] === OPEN_BRACE) {
        at = skipSpace(bytes, at + 1)
        if (bytes[at] === QUOTE && isLetter(bytes[at + 1])) return brace + 1
      }
    }
    brace = bytes.indexOf(CLOSE_BRACE, brace + 1)
  }
  return undefined
}

/** The end (after its `}`) of the last object of a listing: before the closing `]`. */
export function lastObjectEnd(bytes: Uint8Array): number | undefined {
  let at = bytes.length - 1
  while (at >= 0 && isSpace(bytes[at])) at--
  if (bytes[at] !== 0x5d) return undefined
  at--
  while (at >= 0 && isSpace(bytes[at])) at--
  return bytes[at] === CLOSE_BRACE ? at + 1 : undefined
}
