import { Observable, asyncScheduler, type SchedulerLike, type Subscription } from 'rxjs'
import type { KVEntry, KVSnapshot } from '../base/kv-snapshot.js'
import type { TxnOp, TxnResult } from '../base/txn.js'
import {
  afterListing,
  freshestPrefix,
  learnLock,
  learnTxn,
  listingOf,
  lockIndexIn,
  staleCas,
  type OwnWrites,
} from '../core/semaphore/own-writes.js'

/**
 * The longest a writer keeps the turn to write `.lock` (ms): a write whose answer is late (a
 * connection gone quiet) lets the next writer of the process go after it, and that one only risks
 * losing its CAS.
 */
export const WRITE_TURN_MS = 500

/** Where the answers to calls sent now are told (`FreshLock.sending`). */
export interface FreshLockFeed {
  /** A transaction on the prefix answered. */
  readonly txn: (ops: readonly TxnOp[], result: TxnResult) => void
  /** A read of `.lock` answered (null: missing). */
  readonly lock: (entry: KVEntry | null) => void
}

/**
 * The freshest `.lock` a process knows on one semaphore prefix (one per prefix coordinator, so
 * per client and prefix): the watch's last listing, and the answers of the process's own writes
 * since (`OwnWrites`: `.lock` as the last committed one left it, the keys they changed). Every
 * writer of `.lock` feeds it (the acquisitions and re-fences of `semaphorePerformer`, the
 * releases and hand-offs of `releaseSlot`), and every write is decided on what it answers
 * (`freshestPrefix`: the coordinator delivers each listing overlaid with it, and a release starts
 * from the last listing overlaid with it). It holds state only; the rules are the core's
 * (`own-writes.ts`).
 *
 * ```
 * watch listing ──► listed ──┐                 ┌──► deliver (members decide) ──► TryAcquire
 *                            ├─► OwnWrites ────┤
 * own answers ──► sending ───┘                 └──► hint (a release, a hand-off, its retry)
 * ```
 *
 * The writes of `.lock` also take turns (`turn`): one is out at a time, and the next is built (or
 * found stale, `stale`) once the answer of the one before is known, so that two writes of the
 * process never race each other to the same index. Only another process's write can make one
 * lose.
 *
 * An answer to a call sent before a reset (the watch saw the indexes go back) is not taken: its
 * index belongs to the agent's history before it.
 */
export class FreshLock {
  private known: OwnWrites | undefined = undefined
  /** Counts the resets, so that an answer from before one is told from one after. */
  private epoch = 0
  /** The watch's last listing, while it runs, and the ModifyIndex of `.lock` in it. */
  private latest: KVSnapshot | undefined = undefined
  private latestLockIndex: bigint | undefined = undefined
  /** The last overlay made, for the listing and the knowledge it was made from. */
  private memo:
    | { readonly listing: KVSnapshot; readonly known: OwnWrites; readonly fresh: KVSnapshot }
    | undefined = undefined

  /** The writer whose turn it is (undefined: nobody's), and those waiting for it, in order. */
  private holder: object | undefined = undefined
  private readonly queue = new Set<() => void>()

  constructor(
    private readonly prefix: string,
    private readonly scheduler: SchedulerLike = asyncScheduler,
  ) {}

  /**
   * Asks for the turn to write `.lock`: `granted` is called once it is the caller's (at once when
   * nobody has it), first come, first served. The caller keeps it until it calls the function
   * returned (once its write answered; called while it waits, that withdraws the request), or for
   * WRITE_TURN_MS.
   */
  request(granted: () => void): () => void {
    const token = {}
    let expiry: Subscription | undefined
    const grant = (): void => {
      this.holder = token
      expiry = this.scheduler.schedule(() => this.pass(token), WRITE_TURN_MS)
      granted()
    }
    if (this.holder === undefined) grant()
    else this.queue.add(grant)
    return () => {
      this.queue.delete(grant)
      expiry?.unsubscribe()
      this.pass(token)
    }
  }

  /** The turn (`request`) as an Observable: emits once it is granted, kept until unsubscribed. */
  turn(): Observable<void> {
    return new Observable<void>((subscriber) => this.request(() => subscriber.next()))
  }

  /**
   * Whether a transaction CASes `.lock` on an index older than one `.lock` is known to have had,
   * by the process's answers or the watch's last listing (`staleCas`).
   */
  stale(ops: readonly TxnOp[]): boolean {
    return staleCas(this.known, this.latestLockIndex, this.prefix, ops)
  }

  private pass(token: object): void {
    if (this.holder !== token) return
    this.holder = undefined
    const next = this.queue.values().next()
    if (next.done === true) return
    this.queue.delete(next.value)
    next.value()
  }

  /**
   * A listing the watch delivers (or a join's answer): what it shows is forgotten, and everything
   * after a reset.
   */
  listed(listing: KVSnapshot, reset: boolean): void {
    if (reset) this.epoch++
    this.known = afterListing(this.known, listing, reset)
    this.latest = listing
    this.latestLockIndex = lockIndexIn(listing, this.prefix)
  }

  /**
   * The watch stopped: its listing is let go, and so is what was known, since nobody will see the
   * listing that shows it (and the indexes may go back before the next one).
   */
  stopped(): void {
    this.epoch++
    this.known = undefined
    this.latest = undefined
    this.latestLockIndex = undefined
    this.memo = undefined
  }

  /** Where to tell the answer of a call sent now. */
  sending(): FreshLockFeed {
    const epoch = this.epoch
    return {
      txn: (ops, result) => {
        if (epoch === this.epoch) this.known = learnTxn(this.known, this.prefix, ops, result)
      },
      lock: (entry) => {
        if (epoch === this.epoch) this.known = learnLock(this.known, this.prefix, entry)
      },
    }
  }

  /**
   * The freshest prefix known from `snapshot`'s listing (`freshestPrefix`): the same object for
   * the same listing until an answer tells something new, so that the prefix's view cache computes
   * its view once.
   */
  freshest(snapshot: KVSnapshot): KVSnapshot {
    const listing = listingOf(snapshot)
    const known = this.known
    if (known === undefined) return listing
    const memo = this.memo
    if (memo?.listing === listing && memo.known === known) return memo.fresh
    const fresh = freshestPrefix(listing, this.prefix, known)
    this.memo = { listing, known, fresh }
    return fresh
  }

  /**
   * What a write that starts now builds on: the watch's last listing (or, once it stopped,
   * `lastSeen`, the contender's last snapshot), overlaid with what is known.
   */
  latestFrom(lastSeen: KVSnapshot): KVSnapshot
  latestFrom(lastSeen: KVSnapshot | undefined): KVSnapshot | undefined
  latestFrom(lastSeen: KVSnapshot | undefined): KVSnapshot | undefined {
    const listing = this.latest ?? lastSeen
    return listing === undefined ? undefined : this.freshest(listing)
  }
}
