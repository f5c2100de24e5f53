/**
 * The capability interface of the Consul layer: what the rest of the library may ask of Consul.
 * The effects layer depends on this interface; `createConsulClient` (src/consul/client.ts)
 * implements it on undici against a real agent.
 *
 * Every call takes an optional AbortSignal and answers with a TaskEither: a typed ConsulError on
 * the left, never a thrown or rejected raw error.
 */
import type * as TE from 'fp-ts/lib/TaskEither.js'
import type { Observable } from 'rxjs'
import type { ConsulError } from './errors.js'
import type { KVEntry, KVSnapshot, WatchEvent } from './types.js'

export interface CallOptions {
  readonly signal?: AbortSignal | undefined
}

/** Options of reads: the consistency mode overrides the client's. */
export interface ReadOptions extends CallOptions {
  readonly consistency?: 'default' | 'consistent' | 'stale'
}

/** Options of a prefix list; `index` (never 0) with `waitMs` makes it a blocking query. */
export interface ListOptions extends ReadOptions {
  /** Block until the prefix index exceeds this (sent as `index=`); must be at least 1. */
  readonly index?: bigint
  /** Longest block in ms (sent as `wait=<n>ms`); only with `index`. */
  readonly waitMs?: number
}

export interface SessionCreateOptions {
  readonly name?: string
  /** Go duration string ('15s') or milliseconds; Consul allows 10 s to 24 h. */
  readonly ttl?: string | number
  readonly behavior?: 'release' | 'delete'
  /** Go duration string or milliseconds; 0 disables lock-delay. */
  readonly lockDelay?: string | number
  /** Node check ids; `[]` means no node checks at all (not even serfHealth). */
  readonly nodeChecks?: readonly string[]
  readonly serviceChecks?: readonly { readonly id: string; readonly namespace?: string }[]
  readonly node?: string
}

export interface SessionInfo {
  readonly id: string
  readonly name: string
  readonly node: string
  readonly behavior: 'release' | 'delete'
  /** The TTL string as Consul stores it ('15s'), or '' for none. */
  readonly ttl: string
  readonly ttlMs: number | undefined
  readonly lockDelayMs: number
  readonly createIndex: bigint
}

export interface PutOptions extends CallOptions {
  readonly flags?: bigint
  /** At most one of cas / acquire / release. */
  readonly cas?: bigint
  readonly acquire?: string
  readonly release?: string
}

export interface DeleteOptions extends CallOptions {
  readonly cas?: bigint
  readonly recurse?: boolean
}

/** One KV operation of a transaction (`PUT /v1/txn`). */
export type TxnOp =
  | {
      readonly verb: 'set'
      readonly key: string
      readonly value: Uint8Array | null
      readonly flags?: bigint
    }
  | {
      readonly verb: 'cas'
      readonly key: string
      readonly value: Uint8Array | null
      readonly flags?: bigint
      readonly index: bigint
    }
  | {
      readonly verb: 'lock' | 'unlock'
      readonly key: string
      readonly value: Uint8Array | null
      readonly flags?: bigint
      readonly session: string
    }
  | { readonly verb: 'get' | 'delete'; readonly key: string }
  | { readonly verb: 'delete-cas' | 'check-index'; readonly key: string; readonly index: bigint }
  | { readonly verb: 'check-session'; readonly key: string; readonly session: string }

export type TxnResult =
  /** Committed: the KV results in Consul's order (write verbs have value null). */
  | { readonly committed: true; readonly results: readonly KVEntry[] }
  /** Rolled back (409): every failed op with its index and Consul's reason. */
  | {
      readonly committed: false
      readonly errors: readonly { readonly opIndex: number; readonly what: string }[]
    }

export interface WatchOptions {
  /** Blocking wait per request in ms (sent as `wait=<n>ms`). */
  readonly waitMs?: number
  readonly consistency?: 'default' | 'consistent' | 'stale'
  /** Capped exponential backoff with jitter for transient failures. */
  readonly backoff?: { readonly initialMs?: number; readonly maxMs?: number }
  readonly scheduler?: import('rxjs').SchedulerLike
  /**
   * Least time between the starts of two requests of one watch, in ms (default 50): a server
   * that answers at once with an unchanged index cannot make the loop spin.
   */
  readonly minIntervalMs?: number
  /** Source of the backoff jitter, in [0, 1); default Math.random. */
  readonly random?: () => number
}

export interface ConsulClient {
  readonly kv: {
    /** One key; `null` when it does not exist (404 is data). */
    get(key: string, options?: ReadOptions): TE.TaskEither<ConsulError, KVEntry | null>
    /** Everything under a prefix (`?recurse`), with the answer's index; empty entries on 404. */
    list(prefix: string, options?: ListOptions): TE.TaskEither<ConsulError, KVSnapshot>
    /** Consul's `true`/`false` answer as a boolean (false is not an error). */
    put(
      key: string,
      value: Uint8Array | string | null,
      options?: PutOptions,
    ): TE.TaskEither<ConsulError, boolean>
    delete(key: string, options?: DeleteOptions): TE.TaskEither<ConsulError, boolean>
    txn(ops: readonly TxnOp[], options?: CallOptions): TE.TaskEither<ConsulError, TxnResult>
  }
  readonly session: {
    create(options?: SessionCreateOptions & CallOptions): TE.TaskEither<ConsulError, string>
    /** The renewed session (with the TTL the server returns), or `null` when it is gone (404). */
    renew(id: string, options?: CallOptions): TE.TaskEither<ConsulError, SessionInfo | null>
    destroy(id: string, options?: CallOptions): TE.TaskEither<ConsulError, boolean>
    /** `null` when the session does not exist. */
    info(id: string, options?: ReadOptions): TE.TaskEither<ConsulError, SessionInfo | null>
  }
  /**
   * The blocking-query watch of a prefix: cold, one long-poll loop per subscription, emitting a
   * snapshot whenever the index changes and `disconnected` on each transient failure; permanent
   * failures end it with the ConsulError.
   */
  watchPrefix(prefix: string, options?: WatchOptions): Observable<WatchEvent>
  /** Closes the client's connections; in-flight calls fail with Aborted. */
  close(): Promise<void>
}
