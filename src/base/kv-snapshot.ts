/**
 * The vocabulary the Consul layer hands to the rest of the library: KV entries, snapshots of a
 * prefix, and the events of a blocking-query watch. Everything uint64 in Consul's API (flags,
 * indexes) is a `bigint` here, exact.
 */
import type { ConsulError } from './consul-error.js'

/**
 * One KV entry as Consul returned it, decoded.
 *
 * @example
 * ```ts
 * const entry = await consul.kv.get('service/db/lock/.lock')()
 * if (E.isRight(entry) && entry.right !== null) {
 *   const { flags, session, modifyIndex } = entry.right
 *   console.log(flags === SEMAPHORE_FLAGS, session ?? 'unlocked', modifyIndex)
 * }
 * ```
 */
export interface KVEntry {
  /** The full key, without a leading `/` (e.g. `service/db/lock/.lock`). */
  readonly key: string
  /** The raw bytes of the value, or `null` when Consul stores an empty value. */
  readonly value: Uint8Array | null
  /** The key's flags, uint64 as an exact bigint (Consul's lock and semaphore flags exceed 2^53). */
  readonly flags: bigint
  /** The session holding the key's lock, if any. */
  readonly session?: string | undefined
  /** How many times the key's lock has been acquired (uint64 as bigint). */
  readonly lockIndex: bigint
  /** Raft index at which the key was created (uint64 as bigint); contenders are ranked by it. */
  readonly createIndex: bigint
  /** Raft index of the key's last write (uint64 as bigint): the `cas` index of the next write. */
  readonly modifyIndex: bigint
}

/**
 * Everything under a prefix at one index (`GET /v1/kv/<prefix>?recurse`).
 *
 * @example
 * ```ts
 * const listed = await consul.kv.list('service/db/lock')()
 * if (E.isRight(listed)) {
 *   const snapshot: KVSnapshot = listed.right
 *   console.log(`index ${snapshot.index}:`, snapshot.entries.map((entry) => entry.key))
 * }
 * ```
 */
export interface KVSnapshot {
  /** `X-Consul-Index` of the answer: at least 1. */
  readonly index: bigint
  /** Entries sorted by key, as Consul returns them; empty when the prefix has no keys (404). */
  readonly entries: readonly KVEntry[]
  /**
   * Present (true) when Consul 1.11+ said that its ACLs left keys out of this listing
   * (`X-Consul-Results-Filtered-By-ACLs: true`): the entries are not the whole prefix.
   */
  readonly filteredByAcls?: true
}

/**
 * What a prefix watch (`watchPrefix`) emits.
 *
 * @example
 * ```ts
 * consul.watchPrefix('service/db/lock').subscribe((event: WatchEvent) => {
 *   if (event.type === 'snapshot') render(event.snapshot)
 *   else console.warn(`watch attempt ${event.attempt} failed; retry in ${event.retryInMs} ms`)
 * })
 * ```
 */
export type WatchEvent =
  /** A new snapshot: the index changed (or this is the first read, or a re-read after a reset). */
  | {
      /** Discriminant: a snapshot arrived. */
      readonly type: 'snapshot'
      /** Everything under the prefix at the answer's index. */
      readonly snapshot: KVSnapshot
      /**
       * The index went below one this watch emitted before (agent restart, snapshot restore, or
       * Consul 1.8's late answer after a recursive delete): indexes seen before mean nothing now.
       */
      readonly reset?: true
    }
  /**
   * A blocking query failed transiently (unreachable, timeout, 5xx); the watch retries with
   * backoff. Emitted the moment the failure happens: a holder must treat it as a lost slot.
   */
  | {
      /** Discriminant: the last request failed transiently. */
      readonly type: 'disconnected'
      /** The transient failure (Unreachable, Timeout or ServerError). */
      readonly error: ConsulError
      /** 1 for the first failure in a row, 2 for the next, ... */
      readonly attempt: number
      /** How long the watch waits before its next attempt, in milliseconds. */
      readonly retryInMs: number
    }
