/**
 * The contract between the pure core and the side-effect layer.
 *
 * The effects layer feeds `ContenderEvent`s in (watch events, answers to the writes it made,
 * session lifecycle); the core answers with `Decision`s (what to write next) and `ContenderState`
 * (whether this contender holds a slot, and why). Times are RxJS scheduler times in ms
 * (`scheduler.now()`), never `Date.now()`.
 */
import type { ConsulError } from '../consul/errors.js'
import type { WatchEvent } from '../consul/types.js'

/** Which of the `.lock` body shapes found in the wild was read (and is written back). */
export type LockShape =
  /** `{"Limit":3,"Holders":{"<session>":true}}`: Consul's Go client (`consul lock -n`). */
  | 'go-map'
  /** `{"Limit":2,"Holders":["<session>"]}`: the newer semaphore guide. */
  | 'guide-list'
  /** `{"limit":3,"holders":["<session>"]}`: the Java post. */
  | 'java-list'

/** A contender ranked by the CreateIndex of its contender key. */
export interface RankedContender {
  readonly session: string
  readonly rank: number
  /** The contender key's value decoded as UTF-8 (name, host, pid...), or null. */
  readonly value: string | null
  readonly createIndex: bigint
}

/** What the prefix looks like to this contender after decode and prune. */
export interface SemaphoreView {
  readonly limit: number
  readonly shape: LockShape | undefined
  /** ModifyIndex of `.lock` (0n when it does not exist yet): the `cas` index of the next write. */
  readonly lockIndex: bigint
  /** Holders listed in `.lock` whose session still holds its contender key, in listed order. */
  readonly liveHolders: readonly string[]
  /** Holders listed in `.lock` with no live contender key. */
  readonly deadHolders: readonly string[]
  /** Live contenders that are not holders, in rank order (rank 0 first). */
  readonly waiting: readonly RankedContender[]
}

/** Problems with the prefix that no retry fixes: the library never writes over them. */
export type PrefixProblem =
  | { readonly type: 'CorruptLock'; readonly key: string; readonly reason: string }
  | { readonly type: 'Conflict'; readonly key: string; readonly flags: bigint }
  | {
      readonly type: 'LimitConflict'
      readonly key: string
      readonly lockLimit: number
      readonly localLimit: number
    }

export type Decision =
  /** This session is among the live holders. */
  | { readonly type: 'Held'; readonly view: SemaphoreView }
  /** Write `body` to `.lock` with `?cas=<cas>` (0n: create) and the semaphore flags. */
  | {
      readonly type: 'TryAcquire'
      readonly view: SemaphoreView
      readonly body: Uint8Array
      readonly cas: bigint
    }
  /** Not a holder and not this contender's turn: wait for the next snapshot. */
  | {
      readonly type: 'Wait'
      readonly view: SemaphoreView
      readonly rank: number | undefined
      readonly freeSlots: number
    }
  /** This contender's key is not (or no longer) in the snapshot, locked by its session. */
  | { readonly type: 'NotContending'; readonly view: SemaphoreView }
  | (PrefixProblem & { readonly view?: undefined })

/** Everything the effects layer tells the core. */
export type ContenderEvent =
  | WatchEvent
  /** The session was created (sentAt: when the create request was sent). The lease starts then. */
  | {
      readonly type: 'session-created'
      readonly session: string
      readonly ttlMs: number
      readonly sentAt: number
    }
  /** A renewal succeeded; `sentAt` is when its request was sent, `ttlMs` what the server returned. */
  | { readonly type: 'session-renewed'; readonly ttlMs: number; readonly sentAt: number }
  /** A renewal failed transiently; the effects layer keeps retrying until the lease deadline. */
  | { readonly type: 'renewal-failed'; readonly error: ConsulError }
  /** Consul says the session is gone (renew 404, or invalidation seen). */
  | { readonly type: 'session-gone' }
  /** The CAS write of `.lock` answered. `modifyIndex` is the index it wrote (the fencing token). */
  | {
      readonly type: 'cas-result'
      readonly ok: boolean
      readonly holders: readonly string[]
      readonly modifyIndex?: bigint | undefined
    }
  /** The user asked to release. */
  | { readonly type: 'release-requested' }
  /**
   * The write was refused for a reason no snapshot will ever show, so waiting for the next
   * snapshot could wait forever: Consul's lock-delay after an invalidation refuses `acquire` and
   * txn `lock` on a key that looks free, and nothing in the KV store changes when it ends. Like a
   * refused `cas-result`, it answers the write (clears `next`); in addition the core decides again
   * on its last snapshot `inMs` later (scheduler time), which asks for the write again if the key
   * still looks free. The effects layer chooses `inMs` (its backoff); a new snapshot before then
   * decides at once and cancels the pending retry.
   */
  | { readonly type: 'retry'; readonly inMs: number }

/** Why `holding` last changed. */
export type TransitionReason =
  /** A CAS added this session to `.lock`, or a first snapshot listed it: a new tenure. */
  | 'acquired'
  /**
   * Holding came back with no new CAS, same tenure and fencing token: after a watch failure or a
   * lapsed lease, a snapshot (or a late renewal) shows this session still listed and live.
   */
  | 'restored'
  | 'removed'
  | 'session-invalidated'
  | 'watch-failed'
  | 'lease-expired'
  | 'released'
