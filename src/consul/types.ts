/**
 * The vocabulary the Consul layer hands to the rest of the library: KV entries, snapshots of a
 * prefix, and the events of a blocking-query watch. Everything uint64 in Consul's API (flags,
 * indexes) is a `bigint` here, exact.
 */
import type { ConsulError } from './errors.js'

/** One KV entry as Consul returned it, decoded. */
export interface KVEntry {
  readonly key: string
  /** The raw bytes of the value, or `null` when Consul stores an empty value. */
  readonly value: Uint8Array | null
  readonly flags: bigint
  /** The session holding the key's lock, if any. */
  readonly session?: string | undefined
  readonly lockIndex: bigint
  readonly createIndex: bigint
  readonly modifyIndex: bigint
}

/** Everything under a prefix at one index (`GET /v1/kv/<prefix>?recurse`). */
export interface KVSnapshot {
  /** `X-Consul-Index` of the answer: at least 1. */
  readonly index: bigint
  /** Entries sorted by key, as Consul returns them; empty when the prefix has no keys (404). */
  readonly entries: readonly KVEntry[]
}

/** What a prefix watch (`watchPrefix`) emits. */
export type WatchEvent =
  /** A new snapshot: the index changed (or this is the first read, or a re-read after a reset). */
  | { readonly type: 'snapshot'; readonly snapshot: KVSnapshot }
  /**
   * A blocking query failed transiently (unreachable, timeout, 5xx); the watch retries with
   * backoff. Emitted the moment the failure happens: a holder must treat it as a lost slot.
   */
  | {
      readonly type: 'disconnected'
      readonly error: ConsulError
      /** 1 for the first failure in a row, 2 for the next, ... */
      readonly attempt: number
      /** How long the watch waits before its next attempt, in milliseconds. */
      readonly retryInMs: number
    }
