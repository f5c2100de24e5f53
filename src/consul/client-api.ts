/**
 * The capability interface of the Consul layer: what the rest of the library may ask of Consul.
 * The effects layer depends on this interface; `createConsulClient` (src/consul/client.ts)
 * implements it on HTTP/1.1 connections of its own against a real agent.
 *
 * Every call takes an optional AbortSignal and answers with a TaskEither: a typed ConsulError on
 * the left, never a thrown or rejected raw error.
 */
import type * as TE from 'fp-ts/lib/TaskEither.js'
import type { Observable } from 'rxjs'
import type { EntryCache } from './entry-cache.js'
import type { ConsulError } from '../base/consul-error.js'
import type { KVEntry, KVSnapshot, WatchEvent } from '../base/kv-snapshot.js'
import type { TxnOp, TxnResult } from '../base/txn.js'

export type { TxnOp, TxnResult } from '../base/txn.js'

/**
 * What every call accepts: an AbortSignal that cancels the request (it then fails with Aborted).
 *
 * @example
 * ```ts
 * const answer = await consul.session.destroy(session, { signal: AbortSignal.timeout(2000) })()
 * ```
 */
export interface CallOptions {
  /** Aborts the request when it fires; the call answers with an Aborted error. */
  readonly signal?: AbortSignal | undefined
}

/**
 * Options of reads: the consistency mode overrides the client's.
 *
 * @example
 * ```ts
 * const entry = await consul.kv.get('service/web/leader', { consistency: 'consistent' })()
 * ```
 */
export interface ReadOptions extends CallOptions {
  /** Consistency mode of this read (see Consistency); default the client's. */
  readonly consistency?: 'default' | 'consistent' | 'stale'
}

/**
 * Options of a prefix list; `index` (never 0) with `waitMs` makes it a blocking query.
 *
 * @example
 * ```ts
 * // Answers when something under the prefix changes after index 42, or after 30 s anyway.
 * const next = await consul.kv.list('service/db/lock', { index: 42n, waitMs: 30_000 })()
 * ```
 */
export interface ListOptions extends ReadOptions {
  /** Block until the prefix index exceeds this (sent as `index=`); must be at least 1. */
  readonly index?: bigint
  /** Longest block in ms (sent as `wait=<n>ms`); only with `index`. */
  readonly waitMs?: number
  /**
   * @internal The entries an earlier listing of the same keys decoded: an entry whose JSON did
   * not change is taken from there, not decoded again (see EntryCache). Default: every entry is
   * decoded.
   */
  readonly reuse?: EntryCache
}

/**
 * Options of `session.create`. Unset fields are not sent, so Consul's defaults apply (no TTL,
 * behavior 'release', lock-delay 15 s, the serfHealth node check).
 *
 * @example
 * ```ts
 * const created = await consul.session.create({ name: 'report', ttl: '15s', lockDelay: 0 })()
 * if (E.isRight(created)) console.log('session', created.right)
 * ```
 */
export interface SessionCreateOptions {
  /** Human-readable name, shown by Consul's UI and `rxsem status`. */
  readonly name?: string
  /** Go duration string ('15s') or milliseconds; Consul allows 10 s to 24 h, 0 means none. */
  readonly ttl?: string | number
  /** What invalidation does to the keys the session holds: unlock them, or delete them. */
  readonly behavior?: 'release' | 'delete'
  /** Go duration string or milliseconds; 0 disables lock-delay. */
  readonly lockDelay?: string | number
  /** Node check ids; `[]` means no node checks at all (not even serfHealth). */
  readonly nodeChecks?: readonly string[]
  /** Service checks the session depends on; a failing one invalidates it. */
  readonly serviceChecks?: readonly {
    /** The check's id. */
    readonly id: string
    /** The check's Enterprise namespace, if not the session's. */
    readonly namespace?: string
  }[]
  /** The node to tie the session to; default the agent's own node. */
  readonly node?: string
}

/**
 * A session as `session.info` and `session.renew` return it.
 *
 * @example
 * ```ts
 * const info = await consul.session.info(session)()
 * if (E.isRight(info) && info.right !== null) console.log(info.right.name, info.right.ttlMs)
 * ```
 */
export interface SessionInfo {
  /** The session id (a UUID). */
  readonly id: string
  /** The session's name ('' when it was created without one). */
  readonly name: string
  /** The node the session is tied to. */
  readonly node: string
  /** What invalidation does to the keys the session holds. */
  readonly behavior: 'release' | 'delete'
  /** The TTL string as Consul stores it ('15s'), or '' for none. */
  readonly ttl: string
  /** The TTL in ms, or undefined when the session has none. */
  readonly ttlMs: number | undefined
  /** The lock-delay in ms (Consul stores nanoseconds). */
  readonly lockDelayMs: number
  /** Raft index at which the session was created (uint64 as bigint). */
  readonly createIndex: bigint
}

/**
 * Options of `kv.put`: flags to store and at most one write condition (`cas`, `acquire` or
 * `release`). With none, the write is unconditional.
 *
 * @example
 * ```ts
 * // Create-only: succeeds (true) only if the key does not exist yet.
 * const options = { cas: 0n, flags: SEMAPHORE_FLAGS }
 * const created = await consul.kv.put('service/db/lock/.lock', body, options)()
 * ```
 */
export interface PutOptions extends CallOptions {
  /** Flags to store with the value, uint64 as an exact bigint (sent as `flags=`). */
  readonly flags?: bigint
  /**
   * Write only if the key's ModifyIndex is this (0n: only if the key does not exist). At most
   * one of cas / acquire / release.
   */
  readonly cas?: bigint
  /** Write and lock the key with this session id, unless another session holds it (`?acquire=`). */
  readonly acquire?: string
  /** Write and unlock the key, if this session id holds it (`?release=`). */
  readonly release?: string
}

/**
 * Options of `kv.delete`: a check-and-set index, or a recursive delete of a prefix (not both).
 *
 * @example
 * ```ts
 * // Delete the key only if nobody wrote it since we read it.
 * const deleted = await consul.kv.delete(entry.key, { cas: entry.modifyIndex })()
 * ```
 */
export interface DeleteOptions extends CallOptions {
  /** Delete only if the key's ModifyIndex is this; the answer is false otherwise. */
  readonly cas?: bigint
  /** Delete every key under the given prefix (`?recurse`); an empty prefix is refused. */
  readonly recurse?: boolean
}

/**
 * Options of a prefix watch (`watchPrefix`); every field has a default.
 *
 * @example
 * ```ts
 * const events$ = consul.watchPrefix('service/db/lock', {
 *   waitMs: 60_000,
 *   consistency: 'stale',
 *   backoff: { initialMs: 500, maxMs: 5_000 },
 * })
 * ```
 */
export interface WatchOptions {
  /**
   * Blocking wait per request in ms (sent as `wait=<n>ms`); default 30000. A request still
   * unanswered a second past it and Consul's jitter (a sixteenth of it) is checked with a read
   * that does not block, which stands for it if it answers first.
   */
  readonly waitMs?: number
  /** Consistency mode of the watch's reads; default the client's. */
  readonly consistency?: 'default' | 'consistent' | 'stale'
  /** Capped exponential backoff with full jitter for transient failures. */
  readonly backoff?: {
    /** Ceiling of the first delay, in ms; doubles with each failure in a row. Default 250. */
    readonly initialMs?: number
    /** Largest ceiling of a delay, in ms. Default 10000. */
    readonly maxMs?: number
  }
  /** RxJS scheduler of the watch's timers and clock (tests pass a TestScheduler); default async. */
  readonly scheduler?: import('rxjs').SchedulerLike
  /**
   * Least time between the starts of two requests of one watch, in ms (default 10): a server
   * that answers at once with an unchanged index cannot make the loop spin.
   */
  readonly minIntervalMs?: number
  /**
   * How many polls that follow progress (the index moved) may start at once, saved up at one per
   * `minIntervalMs` while changes are fewer; default 5: a burst of changes is followed at once.
   * Each such poll takes one, and waits for it when none is left, so that sustained churn is
   * followed at one poll per `minIntervalMs`. 0: every poll keeps the interval.
   */
  readonly progressBurst?: number
  /** Source of the backoff jitter, in [0, 1); default Math.random. */
  readonly random?: () => number
  /**
   * The index of a snapshot the caller already has (at least 1): the first request blocks on it
   * instead of reading at once, and only a later index is emitted. Default: none, so the first
   * answer is read without blocking and emitted whatever its index.
   */
  readonly startIndex?: bigint
  /**
   * The keys of that snapshot, when the caller has them: an answer at the same index with other
   * keys is then emitted too, as a reset (Consul 1.8 answers so after a parent prefix was deleted).
   */
  readonly startEntries?: readonly KVEntry[]
  /**
   * @internal Where the watch keeps the entries it decoded, to reuse those that did not change
   * (see EntryCache): a prefix's coordinator shares one between its watch and its listings.
   * Default: a cache of the watch's own, per subscription.
   */
  readonly reuse?: EntryCache
}

/**
 * A client's view of its connection, for long polls: a request sent before the network failed
 * (a request timed out, or the agent could not be reached) may never be answered, even once the
 * network is back (an answer lost on the way, a connection a firewall forgot). A watch that sees
 * `failures()` move past the value it had when its long poll left, and then `onRecovered`, sends
 * a new long poll rather than sit out the old one's timeout.
 *
 * @example
 * ```ts
 * const seen = client.network.failures()
 * const stop = client.network.onRecovered(() => {
 *   if (client.network.failures() > seen) restartLongPoll()
 * })
 * ```
 */
export interface NetworkHealth {
  /** How many requests failed for the network's sake (timeout, unreachable) so far. */
  readonly failures: () => number
  /** Calls `listener` on the first answer after such failures; returns the unsubscribe. */
  readonly onRecovered: (listener: () => void) => () => void
  /**
   * How many answers the agent gave so far (any status). A contender whose session request still
   * waits for a connection when its `startupTimeout` passes does not call the agent unreachable
   * if this moved meanwhile. Optional for clients made by hand.
   */
  readonly answers?: () => number
}

/**
 * What the library may ask of Consul: KV reads and writes, transactions, sessions and prefix
 * watches. `createConsulClient` implements it on HTTP; a test can pass any object of this shape.
 * Every call answers with a TaskEither (run it with `()`), a ConsulError on the left.
 *
 * @example
 * ```ts
 * const consul: ConsulClient = createConsulClient()
 * const written = await consul.kv.put('service/web/config', JSON.stringify({ replicas: 3 }))()
 * if (E.isLeft(written)) console.error(written.left.message)
 * ```
 */
export interface ConsulClient {
  /** Key-value store calls (`/v1/kv`, `/v1/txn`). */
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
    /** Deletes a key (or a prefix with `recurse`); false when a `cas` did not match. */
    delete(key: string, options?: DeleteOptions): TE.TaskEither<ConsulError, boolean>
    /** Runs the operations atomically; a rollback is a `committed: false` answer, not an error. */
    txn(ops: readonly TxnOp[], options?: CallOptions): TE.TaskEither<ConsulError, TxnResult>
  }
  /** Session calls (`/v1/session`). */
  readonly session: {
    /** Creates a session and answers with its id. */
    create(options?: SessionCreateOptions & CallOptions): TE.TaskEither<ConsulError, string>
    /** The renewed session (with the TTL the server returns), or `null` when it is gone (404). */
    renew(id: string, options?: CallOptions): TE.TaskEither<ConsulError, SessionInfo | null>
    /** Destroys a session, which releases (or deletes) the keys it holds; Consul's true/false. */
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
  /**
   * What the client has seen of its connection (see NetworkHealth); watches use it to replace a
   * long poll that a network failure may have silenced. Optional: on a client without it, a
   * watch waits out each long poll until its answer or its timeout.
   */
  readonly network?: NetworkHealth
  /** Closes the client's connections; in-flight calls fail with Aborted. */
  close(): Promise<void>
}
