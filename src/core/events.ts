/**
 * The contract between the pure core and the side-effect layer.
 *
 * The effects layer feeds `ContenderEvent`s in (watch events, answers to the writes it made,
 * session lifecycle); the core answers with `Decision`s (what to write next) and `ContenderState`
 * (whether this contender holds a slot, and why). Times are RxJS scheduler times in ms
 * (`scheduler.now()`), never the wall clock.
 */
import type { ConsulError } from '../base/consul-error.js'
import type { WatchEvent } from '../base/kv-snapshot.js'
import type { PrefixProblem } from '../base/prefix-problem.js'
import type { RevokeRequest } from './revoke/revoke-request.js'

export type { PrefixProblem } from '../base/prefix-problem.js'

/**
 * Which of the `.lock` body shapes found in the wild was read (and is written back), so that a
 * semaphore started by another client keeps the body that client can read.
 *
 * @example
 * ```ts
 * const shape: LockBodyShape = 'guide-list'
 * const body = encodeLockBody({ limit: 2, holders: [session], shape }) // {"Limit":2,"Holders":[...]}
 * ```
 */
export type LockBodyShape =
  /** `{"Limit":3,"Holders":{"<session>":true}}`: Consul's Go client (`consul lock -n`). */
  | 'go-map'
  /** `{"Limit":2,"Holders":["<session>"]}`: the newer semaphore guide. */
  | 'guide-list'
  /** `{"limit":3,"holders":["<session>"]}`: the Java post. */
  | 'java-list'

/**
 * A waiting contender in its place in the queue: by turns across processes (the slots its process
 * holds plus its process's waiters ahead of it; a process is told by its contenders' value,
 * `host:pid` by default, and a contender without a value is a process of its own), then by arrival
 * (the CreateIndex of its key). With one contender per process, that is arrival order.
 *
 * @example
 * ```ts
 * const describe = (c: RankedContender) => `#${c.rank} ${c.value ?? c.session}`
 * sem.state$.subscribe((s) => console.log(s.waiting.map(describe).join(', ')))
 * ```
 */
export interface RankedContender {
  /** The contender's session id (also the last segment of its key). */
  readonly session: string
  /** Place in the queue, 0 for the next to be served. */
  readonly rank: number
  /** The contender key's value decoded as UTF-8 (name, host, pid...), or null. */
  readonly value: string | null
  /** CreateIndex of the contender key (uint64 as bigint): the arrival order. */
  readonly createIndex: bigint
  /** How many permits it asks for (1 for Go's contenders and ours of one permit). */
  readonly weight: number
}

/**
 * What the prefix looks like to this contender after decode and prune.
 *
 * @example
 * ```ts
 * const { view } = decide(snapshot, { prefix: 'service/db/lock', session, limit: 3 })
 * if (view) console.log(`${view.liveHolders.length} of ${view.limit} held`, view.waiting.length)
 * ```
 */
export interface SemaphoreView {
  /**
   * The slot limit in force: the one `.lock` states (this contender's own while there is no
   * `.lock` yet). A contender that does not follow the limit decides only when the two agree,
   * but keeps a slot it holds when an operator changes the limit (`LimitConflict` otherwise).
   */
  readonly limit: number
  /** The shape `.lock` was read in; undefined while it has no body (or for a single-key lock). */
  readonly shape: LockBodyShape | undefined
  /** ModifyIndex of `.lock` (0n when it does not exist yet): the `cas` index of the next write. */
  readonly lockIndex: bigint
  /** Holders listed in `.lock` whose session still holds its contender key, in listed order. */
  readonly liveHolders: readonly string[]
  /** Holders listed in `.lock` with no live contender key. */
  readonly deadHolders: readonly string[]
  /** Live contenders that are not holders, in rank order (rank 0 first). */
  readonly waiting: readonly RankedContender[]
  /**
   * The live holders whose process holds more than one slot (processes as `RankedContender` tells
   * them), in listed order, each with the number of slots its process holds.
   */
  readonly sharedHolders: readonly SharedHolder[]
  /**
   * The turn of the first in line: the slots its process holds plus its process's waiters ahead of
   * it (0: its process holds no slot); undefined when nobody waits.
   */
  readonly nextTurn: number | undefined
}

/** A holder whose process holds several slots (`SemaphoreView.sharedHolders`). */
export interface SharedHolder {
  /** The holder's session. */
  readonly session: string
  /** How many slots its process holds, this one included (2 or more). */
  readonly slots: number
}

/**
 * What a contender does next after one snapshot, as `decide` and `decideLeaderKey` answer it. The
 * variants other than the prefix problems carry the view they were decided on.
 *
 * @example
 * ```ts
 * const decision: Decision = decide(snapshot, { prefix: 'service/db/lock', session, limit: 3 })
 * if (decision.type === 'TryAcquire') {
 *   const options = { cas: decision.cas, flags: SEMAPHORE_FLAGS }
 *   await consul.kv.put(lockKey('service/db/lock'), decision.body, options)()
 * } else if (decision.type === 'Wait') {
 *   console.log(`rank ${decision.rank}, ${decision.freeSlots} free`)
 * }
 * ```
 */
export type Decision =
  /** This session is among the live holders. */
  | {
      /** Discriminant. */
      readonly type: 'Held'
      /** The prefix as decided on. */
      readonly view: SemaphoreView
      /**
       * The index of the write that made this contender a holder, read from its own contender
       * key (HOLDER_FLAGS): its CAS, or the release that handed it the slot. The fencing token of
       * the tenure, however many later writes the snapshot also shows.
       */
      readonly acquiredAt?: bigint | undefined
      /**
       * Someone asked this holder to give its slot back (`<prefix>/.lock.revoke/<session>`,
       * written by `evict` with a grace); absent when nobody did.
       */
      readonly revokeRequested?: RevokeRequest | undefined
    }
  /** Write `body` to `.lock` with `?cas=<cas>` (0n: create) and the semaphore flags. */
  | {
      /** Discriminant. */
      readonly type: 'TryAcquire'
      /** The prefix as decided on. */
      readonly view: SemaphoreView
      /** The new `.lock` body: the live holders plus this session. */
      readonly body: Uint8Array
      /** ModifyIndex `.lock` must still have (uint64 as bigint); 0n: create it. */
      readonly cas: bigint
      /** This contender's place among the waiters, when it is ranked (semaphore only). */
      readonly rank?: number | undefined
    }
  /** Not a holder and not this contender's turn: wait for the next snapshot. */
  | {
      /** Discriminant. */
      readonly type: 'Wait'
      /** The prefix as decided on. */
      readonly view: SemaphoreView
      /** This contender's place among the waiters (0: next), or undefined when it is not ranked. */
      readonly rank: number | undefined
      /** Slots not taken by a live holder (0 when all are taken). */
      readonly freeSlots: number
      /**
       * How long this waiter may still wait (ms): rank + 1 times the interval between the recent
       * hand-overs its process saw on the prefix (`hand-overs.ts`); undefined while unranked or
       * before an interval was timed.
       */
      readonly estimatedWaitMs?: number | undefined
    }
  /** This contender's key is not (or no longer) in the snapshot, locked by its session. */
  | {
      /** Discriminant. */
      readonly type: 'NotContending'
      /** The prefix as decided on. */
      readonly view: SemaphoreView
    }
  /** A prefix problem: nothing may be written. */
  | (PrefixProblem & {
      /** Never set: a prefix problem is decided before any view. */
      readonly view?: undefined
    })

/**
 * Everything the effects layer tells the core (`contenderStep`, through the machine of a
 * contender's life, `lifeStep`, which the interpreter feeds).
 *
 * @example
 * ```ts
 * const event: ContenderEvent = { type: 'session-created', session, ttlMs: 15_000, sentAt: now }
 * const { state } = contenderStep(initialContenderState, event, now, { prefix, limit: 3 })
 * ```
 */
export type ContenderEvent =
  | WatchEvent
  /** The session was created (sentAt: when the create request was sent). The lease starts then. */
  | {
      /** Discriminant. */
      readonly type: 'session-created'
      /** The new session's id. */
      readonly session: string
      /** The session's TTL in ms. */
      readonly ttlMs: number
      /** Scheduler time (ms) the create request was sent. */
      readonly sentAt: number
    }
  /** A renewal succeeded; the lease now runs from when its request was sent. */
  | {
      /** Discriminant. */
      readonly type: 'session-renewed'
      /** The TTL in ms that the renewal answered with (Consul may raise it). */
      readonly ttlMs: number
      /** Scheduler time (ms) the renew request was sent. */
      readonly sentAt: number
    }
  /** A renewal failed transiently; the effects layer keeps retrying until the lease deadline. */
  | {
      /** Discriminant. */
      readonly type: 'renewal-failed'
      /** The transient failure. */
      readonly error: ConsulError
    }
  /** Consul says the session is gone (renew 404, or invalidation seen). */
  | {
      /** Discriminant. */
      readonly type: 'session-gone'
    }
  /** The CAS write of `.lock` answered. `modifyIndex` is the index it wrote (the fencing token). */
  | {
      /** Discriminant. */
      readonly type: 'cas-result'
      /** True if the write took effect (Consul answered true). */
      readonly ok: boolean
      /** The holders the write put (or would have put) in `.lock`. */
      readonly holders: readonly string[]
      /** ModifyIndex of `.lock` after the write (uint64 as bigint), when known. */
      readonly modifyIndex?: bigint | undefined
    }
  /**
   * A renewal between two jobs answered (`Refencing`). Committed: a `Refence` gave this holder a new
   * fencing token (`modifyIndex`, its key's new ModifyIndex), a `Rotate` put it at the tail of
   * the queue (`modifyIndex`, the index of that write).
   */
  | {
      /** Discriminant. */
      readonly type: 'refenced'
      /** True if the transaction committed. */
      readonly ok: boolean
      /** Which renewal it was. */
      readonly refencing: 'Refence' | 'Rotate'
      /** The index the transaction wrote, when known. */
      readonly modifyIndex?: bigint | undefined
    }
  /**
   * The contender's own key, long-polled alone while it waits, shows that a release handed it a
   * slot (`handedTo`): the transaction that marked the key `HOLDER_FLAGS` listed the session in
   * `.lock` at the same index. It holds from that index; the listing that follows confirms it.
   */
  | {
      /** Discriminant. */
      readonly type: 'handed'
      /** The session the key is locked by. */
      readonly session: string
      /** The key's new ModifyIndex: the hand-off's, `.lock`'s then, and the fencing token. */
      readonly index: bigint
    }
  /** The user asked to release. */
  | {
      /** Discriminant. */
      readonly type: 'release-requested'
    }
  /**
   * The write was refused for a reason no snapshot will ever show, so waiting for the next
   * snapshot could wait forever: Consul's lock-delay after an invalidation refuses `acquire` and
   * txn `lock` on a key that looks free, and nothing in the KV store changes when it ends. Like a
   * refused `cas-result`, it answers the write (clears `write`); in addition the core decides again
   * on its last snapshot `inMs` later (scheduler time), which asks for the write again if the key
   * still looks free. The effects layer chooses `inMs` (its backoff); a new snapshot before then
   * decides at once and cancels the pending retry.
   */
  | {
      /** Discriminant. */
      readonly type: 'retry'
      /** Delay in scheduler ms before deciding again on the last snapshot. */
      readonly inMs: number
    }

/** A contender's own key shows a slot handed to it (see `ContenderEvent`). */
export type Handed = Extract<ContenderEvent, { readonly type: 'handed' }>

/**
 * Why `holding` last changed.
 *
 * @example
 * ```ts
 * function onState(holding: boolean, reason: TransitionReason | undefined): void {
 *   if (!holding && reason === 'lease-expired') console.warn('renewals failed: slot given up')
 * }
 * sem.state$.subscribe((s) => onState(s.holding, s.reason))
 * ```
 */
export type TransitionReason =
  /** A CAS added this session to `.lock`, or a first snapshot listed it: a new tenure. */
  | 'acquired'
  /**
   * Holding came back with no new CAS, same tenure and fencing token: after a watch failure or a
   * lapsed lease, a snapshot (or a late renewal) shows this session still listed and live.
   */
  | 'restored'
  /** A snapshot no longer lists this session as a live holder (another writer took it out). */
  | 'removed'
  /** Consul invalidated the session (renewal 404, a failed health check, or it was destroyed). */
  | 'session-invalidated'
  /** The prefix watch failed: nothing vouches for the slot until it reconnects. */
  | 'watch-failed'
  /** No renewal got through before the lease deadline (TTL minus the margin). */
  | 'lease-expired'
  /** This contender released: `close()`, the last unsubscribe, or `release-requested`. */
  | 'released'
