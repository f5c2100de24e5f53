import * as E from 'fp-ts/lib/Either.js'
import {
  BehaviorSubject,
  EMPTY,
  asyncScheduler,
  concat,
  concatMap,
  defer,
  distinctUntilChanged,
  interval,
  merge,
  mergeMap,
  of,
  repeat,
  Subject,
  switchMap,
  take,
  takeWhile,
  tap,
  throwError,
  timer,
  type Observable,
  type SchedulerLike,
  type Subscription,
} from 'rxjs'
import type { ConsulClient, WatchOptions } from '../../consul/client-api.js'
import { EntryCache } from '../../consul/entry-cache.js'
import { filteredListingError } from '../../base/consul-error.js'
import type { KVEntry, KVSnapshot, WatchEvent } from '../../base/kv-snapshot.js'
import type { Decision, Handed } from '../../core/events.js'
import { lockKey } from '../../core/keys/lock-key.js'
import { readLockBody } from '../../core/lock-body/read-lock-body.js'
import { patchLock, sameLockKeys } from '../../core/leader-key/patch-lock.js'
import type { CountedGrace } from '../../core/contender/contender-state-model.js'
import { viewCache, type ViewCache } from '../../core/semaphore/view-cache.js'
import {
  NO_HAND_OVERS,
  resumeHandOvers,
  type HandOverLog,
} from '../../core/semaphore/hand-overs.js'
import {
  WHOLE_PREFIX,
  handedTo,
  sameWatchTarget,
  type WatchTarget,
} from '../../core/semaphore/watch-target.js'
import type { ContenderProtocol, ProtocolMember } from '../protocol/contender-protocol.js'
import { refCountedRegistry, type Borrowed } from '../registry.js'
import { fromCall } from '../call-policy.js'
import { FreshLock } from '../fresh-lock.js'

/** A registered contender, as the coordinator drives it (see `Member`). */
export interface CoordinatedMember {
  /**
   * This member's decision on a snapshot, computed once per snapshot (the coordinator asks it for
   * its watch target; the member steps on the same one). Undefined without a session.
   */
  readonly decisionOn: (snapshot: KVSnapshot) => Decision | undefined
  /**
   * The member's session when, as the process's only member on the prefix, it may long-poll its
   * own key alone (`watchTarget`'s `alone`): a contender that neither re-fences between jobs nor
   * holds several permits. Undefined for any other.
   */
  readonly alone?: string | undefined
  /**
   * A watch event of the prefix; or, for the member asleep on its own key, the slot handed to it
   * (`handedTo`), before the listing that follows.
   */
  readonly onWatch: (event: WatchEvent | Handed) => void
  /** The prefix's watch failed for good (a permanent error). */
  readonly onWatchError: (error: unknown) => void
}

/** The coordinator's watch options (the first member's; the watch is shared). */
export interface CoordinatorWatchOptions extends WatchOptions {
  readonly scheduler?: SchedulerLike | undefined
}

/**
 * How long a waiter stays parked on the key ahead before it lists the prefix once anyway: the
 * waiter ahead may be dead (killed, frozen, cut off), and then its key changes only when Consul
 * expires its session, TTL to 2 × TTL later, while slots may stand free. One listing per parked
 * process every 5 s finds that out; the fairness grace does the rest (`decidePatiently`).
 */
export const PARKED_RECHECK_MS = 5000

/**
 * How long the listing of a parked waiter whose key ahead changed may block on the index of that
 * change: 100 ms. The change is nearly always a hand-over to the waiter ahead, which leaves
 * nothing for this one to do but move up; and the holder that handed its slot over writes again
 * a few round trips later when it contends again (its join). A listing made at once would show
 * the prefix before that join and wake for it too; one that blocks on the change's index answers
 * with the join, or with the next hand-over, or after this time, whichever comes first: one
 * answer instead of two. What it may delay, by this time at most, is a waiter that the change
 * made first in line beside a free slot (the waiter ahead took one of two free slots by its own
 * CAS), which the front of the queue watching the prefix would have taken at once.
 */
export const WAKE_WAIT_MS = 100

/**
 * How often a holder that watches only its key and `.lock` (`watchTarget`) long-polls `.lock` on
 * a busy prefix: each poll 100 ms after the one before it started. Every hand-over between others
 * rewrites `.lock`, and an answer that still lists the holder is no news to it; so a holder costs
 * one request per 100 ms at most instead of one per hand-over. Its release builds on the `.lock`
 * it knows only while a poll has been out since the last answer (`knowsCurrentLock`), and lists
 * the prefix first otherwise: a `.lock` that changed during the pause would cost a lost CAS and a
 * listing, where the listing alone costs one request. A holder beside others (`othersHold`) sends
 * its first poll 100 ms into its hold too: their hand-overs would answer a poll sent at once, and
 * a tenure shorter than that would pay the poll and the listing both; it pays the listing
 * alone. A sole holder's first poll goes out at once: nobody else rewrites `.lock`, so
 * that poll stays out and its release needs no read. An edit of `.lock` by hand that takes it out
 * is seen within 100 ms and a round trip (the poll sent after the pause answers at once); the
 * loss of its session or key, at once, on its key's poll.
 */
export const HELD_LOCK_POLL_MS = 100

/**
 * How long the coordinator remembers a dead waiter's key it asked Consul to remove, so that the
 * listings that still show it meanwhile do not ask again: longer than a removal takes, short
 * enough that a removal lost on the way is asked again.
 */
export const SWEEP_FORGET_MS = 5000

/**
 * One per (client, prefix, protocol) in a process: the prefix's one watch, its last snapshot, the
 * views its contenders share (`viewCache`), and the members to step on each event. On every
 * snapshot it hands the event to each member (which decides once, in O(1), on the shared view, and
 * steps its pure state machine when the snapshot concerns it), then chooses once what the process
 * long-polls next (`watchTarget`: the whole prefix, or only the key of the waiter ahead).
 *
 * ```
 * watch ─► snapshot ─► member.onWatch × n  (decideInView on the one view, contenderStep)
 *                 └──► watchTarget(decisions) ─► next long poll: prefix | key ahead
 * ```
 *
 * The watch runs while at least one member has a session; a late member is given the last
 * snapshot at once (and the `disconnected` after it while the watch fails), so it never believes
 * in a snapshot the watch has lost.
 *
 * Each listing reaches the members overlaid with the `.lock` the process's own writes left since
 * (`fresh`, `freshestPrefix`): within a process, each committed write of one contender would
 * otherwise leave every other writer's view stale until the watch caught up.
 */
export class PrefixCoordinator {
  /** The views of this prefix's snapshots, shared by its members. */
  readonly cache: ViewCache
  /** The freshest `.lock` the process knows here: the last listing and its own writes since. */
  readonly fresh: FreshLock
  private readonly memory: PrefixMemory
  /** The entries of the last listing of the prefix, decoded: the next one decodes only changes. */
  private readonly entries = new EntryCache()
  private readonly watching = new Set<CoordinatedMember>()
  private readonly target = new BehaviorSubject<WatchTarget>(WHOLE_PREFIX)
  private subscription: Subscription | undefined
  /** The watch's last listing (what the next long poll starts from). */
  private last: KVSnapshot | undefined
  /** The last listing as the members were given it: overlaid with the process's own writes. */
  private delivered: KVSnapshot | undefined
  private failing: WatchEvent | undefined
  private joining = 0
  /**
   * The dead waiters' keys this process is removing (`sweep`), as `<key>@<ModifyIndex>`, each with
   * the timer that forgets it once its removal answered.
   */
  private readonly removing = new Map<string, Subscription | undefined>()
  /**
   * Scheduler ms of the last read of `.lock` that a lone holder knows and has no poll out since
   * (`knowsCurrentLock`): the start of a hold beside others, then each answer of its `.lock`
   * poll.
   */
  private lockReadAt: number | undefined
  /** The first member's scheduler, or `asyncScheduler`: the clock of the prefix's timers. */
  private readonly scheduler: SchedulerLike
  /** The members' acquisitions of a leader lock's `.lock` on their way (`acquiring`). */
  private acquisitions = 0
  /** Emits when the last acquisition on its way answered. */
  private readonly acquired = new Subject<void>()

  constructor(
    private readonly client: ConsulClient,
    private readonly prefix: string,
    private readonly protocol: ContenderProtocol,
    private readonly options: CoordinatorWatchOptions,
  ) {
    const memory = (this.memory = memoryOf(client, prefix))
    this.fresh = new FreshLock(prefix, options.scheduler ?? undefined)
    const scheduler = (this.scheduler = options.scheduler ?? asyncScheduler)
    // What changed while no coordinator of the prefix looked was not seen when it shows.
    memory.handOvers = resumeHandOvers(memory.handOvers)
    this.cache = viewCache(
      { recall: () => memory.grace, remember: (grace) => (memory.grace = grace) },
      {
        recall: () => memory.handOvers,
        remember: (log) => (memory.handOvers = log),
        now: () => scheduler.now(),
      },
    )
  }

  /**
   * Whether a member may join in one transaction (`ContenderProtocol.join`): it is the only member,
   * nobody else is joining, and a snapshot of this prefix showed a `.lock` such a contender may
   * write (`ContenderProtocol.joinsOn`). A join writes its key before it reads `.lock`, and a
   * contender must write nothing under a prefix whose `.lock` it may not write: for a semaphore, a
   * prefix held by `consul lock`, or with a `.lock` it cannot read or whose limit differs; for a
   * leader lock, a `.lock` that is not a lock.
   */
  mayJoin(member: ProtocolMember): boolean {
    const { join, joinsOn } = this.protocol
    if (join === undefined || joinsOn === undefined) return false
    if (this.watching.size > 0 || this.joining > 0) return false
    const lock = this.memory.lock
    return lock !== undefined && joinsOn(lock, member)
  }

  /** Counts a join in flight; returns its end (idempotent). */
  startJoin(): () => void {
    this.joining++
    let done = false
    return () => {
      if (!done) this.joining--
      done = true
    }
  }

  /**
   * Adds a member to the watch: it gets the last snapshot (or `seed`, a join's answer, which
   * becomes the last snapshot when it is newer) and a pending `disconnected` at once, then every
   * event. Starts the watch if it is the first.
   */
  follow(member: CoordinatedMember, seed?: KVSnapshot): void {
    if (seed !== undefined && (this.last === undefined || seed.index > this.last.index)) {
      this.keep(seed, false)
    }
    this.watching.add(member)
    // The last listing overlaid with every write the process knows of now, not only those known
    // when it came: a member that begins with a session given up meanwhile (taken from the shelf)
    // must not find it still holding in a listing from before its release.
    if (this.last !== undefined) {
      const delivered = (this.delivered = this.fresh.freshest(this.last))
      member.onWatch({ type: 'snapshot', snapshot: delivered })
    }
    if (this.failing !== undefined) member.onWatch(this.failing)
    this.retarget()
    this.subscription ??= this.watch().subscribe({
      next: (event) => (event.type === 'handed' ? this.hand(event) : this.deliver(event)),
      error: (error: unknown) => this.fail(error),
    })
  }

  /** Removes a member from the watch; the last one stops it. */
  unfollow(member: CoordinatedMember): void {
    if (!this.watching.delete(member)) return
    if (this.watching.size > 0) {
      this.retarget()
      return
    }
    this.stop()
  }

  private stop(): void {
    this.subscription?.unsubscribe()
    this.subscription = undefined
    for (const timer of this.removing.values()) timer?.unsubscribe()
    this.removing.clear()
    this.last = undefined
    this.delivered = undefined
    this.fresh.stopped()
    this.failing = undefined
    this.target.next(WHOLE_PREFIX)
  }

  /** Keeps a listing, and what the members are given of it: returns that. */
  private keep(snapshot: KVSnapshot, reset: boolean): KVSnapshot {
    this.last = snapshot
    const lock = lockKey(this.prefix)
    this.memory.lock = snapshot.entries.find((e) => e.key === lock) ?? null
    this.fresh.listed(snapshot, reset)
    return (this.delivered = this.fresh.freshest(snapshot))
  }

  private deliver(event: WatchEvent): void {
    // A listing below what the members saw (the prefix watch marks its own) is a reset too.
    const marked: WatchEvent =
      event.type === 'snapshot' &&
      event.reset !== true &&
      this.last !== undefined &&
      event.snapshot.index < this.last.index
        ? { ...event, reset: true }
        : event
    let given = marked
    if (marked.type === 'snapshot') {
      const fresh = this.keep(marked.snapshot, marked.reset === true)
      if (fresh !== marked.snapshot) given = { ...marked, snapshot: fresh }
      this.failing = undefined
    } else {
      this.failing = marked
    }
    // A copy: a member may leave, or another join, while the event is handed out.
    const members = [...this.watching]
    for (let i = 0; i < members.length; i++) members[i]?.onWatch(given)
    if (marked.type === 'snapshot') this.retarget()
  }

  /** A slot handed to the member asleep on its key: it holds before the listing that follows. */
  private hand(handed: Handed): void {
    const members = [...this.watching]
    for (let i = 0; i < members.length; i++) members[i]?.onWatch(handed)
  }

  private fail(error: unknown): void {
    const members = [...this.watching]
    this.watching.clear()
    this.stop()
    for (const member of members) member.onWatchError(error)
  }

  /** Chooses what to long-poll from the members' decisions on the last snapshot. */
  private retarget(): void {
    // The members decided on the listing as delivered: the target is chosen on the same object.
    const last = this.delivered
    if (last === undefined) {
      this.target.next(WHOLE_PREFIX)
      return
    }
    let alone: string | undefined
    if (this.watching.size === 1) for (const member of this.watching) alone = member.alone
    this.target.next(this.protocol.watchTarget(last, this.prefix, this.decisionsOn(last), alone))
    this.sweep(last)
  }

  /**
   * Removes the dead waiters' keys this process is to remove (`ContenderProtocol.sweep`), each by
   * a delete on its ModifyIndex, once: a failed or lost delete is left to the next listing that
   * still shows the key at a new index, or to whoever removes it first.
   */
  private sweep(snapshot: KVSnapshot): void {
    const sweep = this.protocol.sweep
    if (sweep === undefined) return
    for (const entry of sweep(snapshot, this.prefix, this.decisionsOn(snapshot))) {
      const removal = `${entry.key}@${entry.modifyIndex}`
      if (this.removing.has(removal)) continue
      this.removing.set(removal, undefined)
      // Forgotten after a while, so that the map stays small whatever happens to the key; a
      // coordinator that stops forgets them all (`stop`), and leaves no timer behind.
      const forget = () => void this.removing.delete(removal)
      void this.client.kv
        .txn([{ verb: 'delete-cas', key: entry.key, index: entry.modifyIndex }])()
        .then(() => {
          if (this.removing.has(removal)) {
            this.removing.set(removal, this.scheduler.schedule(forget, SWEEP_FORGET_MS))
          }
        })
    }
  }

  /**
   * Whether the watch long-polls only the key of the process's one member (`watchTarget`): the
   * last snapshot it was given may then be seconds old, and its release lists the prefix wherever
   * it would read `.lock` (`ReleaseInput.listReads`).
   */
  watchesOwnKey(): boolean {
    return this.target.value.type === 'own'
  }

  /**
   * Whether the `.lock` the process knows is as fresh as a long poll makes it: the watch
   * long-polls its one member's key as a holder's, and the `.lock` poll beside it has been out
   * since the last read (`HELD_LOCK_POLL_MS` after it; at once when the hold began as the sole
   * holder), so that only a change still on its way is unknown. Before that poll goes out,
   * `.lock` may change unseen.
   */
  knowsCurrentLock(): boolean {
    const target = this.target.value
    if (target.type !== 'own' || target.held === undefined) return false
    const read = this.lockReadAt
    return read === undefined || this.scheduler.now() - read >= HELD_LOCK_POLL_MS
  }

  /**
   * Counts a member's acquisition of a leader lock's `.lock` on its way. The first in line's poll
   * of `.lock` waits for its answer after it showed the key free (`lockChanges`): that poll would
   * otherwise answer with the acquisition's own write. Returns the function that tells the answer
   * (once; later calls do nothing): the prefix as of the committed write, which the members are
   * given as a listing of the watch would be when it is newer than the last, or undefined (a
   * refusal, a failure, a write given up). So a committed acquisition moves the watch on from its
   * own index without a read; a refused one lets the poll of `.lock` go out, which answers at once
   * with whoever took the key.
   */
  acquiring(): (answered: KVSnapshot | undefined) => void {
    this.acquisitions++
    let told = false
    return (answered) => {
      if (told) return
      told = true
      if (
        answered !== undefined &&
        this.subscription !== undefined &&
        (this.last === undefined || answered.index > this.last.index)
      ) {
        this.deliver({ type: 'snapshot', snapshot: answered })
      }
      if (--this.acquisitions === 0) this.acquired.next()
    }
  }

  /** Emits once no acquisition of the members is on its way: at once when none is. */
  private acquisitionsAnswered(): Observable<unknown> {
    return defer(() => (this.acquisitions === 0 ? of(undefined) : this.acquired.pipe(take(1))))
  }

  private *decisionsOn(snapshot: KVSnapshot): Iterable<Decision | undefined> {
    for (const member of this.watching) yield member.decisionOn(snapshot)
  }

  private watch(): Observable<WatchEvent | Handed> {
    const options: WatchOptions = this.options
    return this.target.pipe(
      distinctUntilChanged(sameWatchTarget),
      // Each long poll starts from what the members have already seen: the last snapshot's index
      // for the prefix, the key's index in it for a key. No read at once on every switch, unless
      // the members' last event is a failure (a key poll that failed, then a listing that failed
      // too, falls back here): a poll blocking on the last index would leave them disconnected
      // until the prefix next changes, so the prefix is read at once.
      switchMap((to) => {
        this.lockReadAt =
          to.type === 'own' && to.held?.othersHold === true ? this.scheduler.now() : undefined
        return to.type === 'prefix'
          ? this.client.watchPrefix(`${this.prefix}/`, {
              ...options,
              reuse: this.entries,
              ...(this.failing === undefined
                ? { startIndex: this.last?.index, startEntries: this.last?.entries }
                : {}),
            })
          : waitForKey(
              this.client,
              this.prefix,
              to,
              { ...options, reuse: this.entries },
              {
                fallBack: () => this.target.next(WHOLE_PREFIX),
                onLock: (entry) => {
                  this.fresh.sending().lock(entry)
                  this.lockReadAt = this.scheduler.now()
                },
                lastListing: () => this.last,
                acquisitionsAnswered: () => this.acquisitionsAnswered(),
              },
            )
      }),
    )
  }
}

/** What the watch of a key tells its coordinator, and asks of it (`waitForKey`). */
export interface KeyWatchHooks {
  /** A listing failed: back to the prefix watch, whose loop reports and retries failures. */
  readonly fallBack: () => void
  /** A holder's poll of `.lock` answered with a `.lock` that still lists it. */
  readonly onLock: (entry: KVEntry) => void
  /** The watch's last listing, if any. */
  readonly lastListing: () => KVSnapshot | undefined
  /** Emits once no acquisition of the members is on its way (`PrefixCoordinator.acquiring`). */
  readonly acquisitionsAnswered: () => Observable<unknown>
}

/**
 * Long-polls one contender key; when it changes, goes, or the poll reconnects, and every
 * `PARKED_RECHECK_MS` in any case, lists the prefix once and emits that snapshot. A failed list
 * hands back to the prefix watch (`fallBack`), whose loop reports and retries failures. The key
 * ahead's change is listed after `WAKE_WAIT_MS` at most (see there); the own key's, at once, and
 * when that change is a slot handed to the waiter (`handedTo`), that is emitted before the
 * listing, so that it holds a round trip sooner.
 *
 * A holder's own key (`held`) is watched with `.lock` instead of the rechecks: a `.lock` that
 * still lists the holder is no news to it (another slot changed hands), only what the process
 * knows of `.lock` (`onLock`, for its release); one that does not, or cannot be read, or is gone,
 * is listed at once.
 */
function waitForKey(
  client: ConsulClient,
  prefix: string,
  to: Exclude<WatchTarget, { type: 'prefix' }>,
  options: WatchOptions,
  hooks: KeyWatchHooks,
): Observable<WatchEvent | Handed> {
  const { fallBack, onLock } = hooks
  /** One listing of the prefix; `after`: blocking on that index for `WAKE_WAIT_MS` at most. */
  const listOnce = (after?: bigint): Observable<WatchEvent> =>
    fromCall((signal) =>
      client.kv.list(`${prefix}/`, {
        signal,
        consistency: options.consistency,
        reuse: options.reuse,
        ...(after !== undefined && after >= 1n ? { index: after, waitMs: WAKE_WAIT_MS } : {}),
      }),
    ).pipe(
      mergeMap((listed) => {
        if (E.isLeft(listed)) {
          fallBack()
          return EMPTY
        }
        // As the prefix watch does: part of the prefix is no picture of it.
        if (listed.right.filteredByAcls === true) {
          return throwError(() => filteredListingError(`${prefix}/`))
        }
        return of<WatchEvent>({ type: 'snapshot', snapshot: listed.right })
      }),
    )
  // One round: a key's polls up to an answer that is news (or a reconnection), then one listing.
  // The key's watch ends with the news, before it sends its next poll: the listing makes the
  // coordinator choose the target again, which is another key, or the prefix, nearly every time.
  // Should the target stay the same, the next round watches the key again. The listing after a
  // change of the key ahead blocks on the index of that change, for `WAKE_WAIT_MS` at most; after
  // any other news, or a reconnection, it reads at once. A key's own watch decodes one entry: the
  // prefix's cache is for listings of the prefix.
  const round = (
    key: string,
    startIndex: bigint,
    quiet: (entry: KVEntry | undefined) => boolean,
    pace: Pick<WatchOptions, 'minIntervalMs' | 'progressBurst'> = {},
  ): Observable<WatchEvent | Handed> =>
    defer(() => {
      let reconnected = false
      const watch = { ...options, ...pace, reuse: undefined, startIndex }
      return client.watchPrefix(key, watch).pipe(
        concatMap((event): Observable<WatchEvent | News> => {
          if (event.type === 'disconnected') {
            reconnected = true
            return of(event)
          }
          if (reconnected) return of({ changedAt: undefined, handed: undefined })
          const entry = event.snapshot.entries.find((e) => e.key === key)
          if (quiet(entry)) return EMPTY
          return of({ changedAt: event.snapshot.index, handed: handedTo(to, entry) })
        }),
        takeWhile((event) => !('changedAt' in event), true),
        concatMap((event): Observable<WatchEvent | Handed> => {
          if (!('changedAt' in event)) return of(event)
          const listing = listOnce(to.type === 'key' ? event.changedAt : undefined)
          return event.handed === undefined ? listing : concat(of(event.handed), listing)
        }),
      )
    })
  if (to.type === 'lock') return lockChanges(client, to, options, hooks, listOnce)
  const keyRound = round(to.key, to.modifyIndex, (entry) => entry?.modifyIndex === to.modifyIndex)
  if (to.type === 'own' && to.held !== undefined) {
    const { held, session } = to
    const lock = lockKey(prefix)
    // `.lock` that still lists the holder is no news, only the newest `.lock` for its release.
    const stillListed = (entry: KVEntry | undefined): boolean => {
      if (!listsHolder(entry, lock, session)) return false
      onLock(entry)
      return true
    }
    const pace = { minIntervalMs: HELD_LOCK_POLL_MS, progressBurst: 0 }
    const lockRound = round(lock, held.lockIndex, stillListed, pace)
    const lockPolls = lockRound.pipe(repeat())
    // Beside others, the first poll of `.lock` waits as the next ones do: a short tenure sends none.
    const scheduler = options.scheduler ?? asyncScheduler
    const firstPolls = held.othersHold
      ? timer(HELD_LOCK_POLL_MS, scheduler).pipe(concatMap(() => lockPolls))
      : lockPolls
    return merge(keyRound.pipe(repeat()), firstPolls)
  }
  return defer(() => {
    const keyEvents = keyRound.pipe(repeat())
    const rechecks = interval(PARKED_RECHECK_MS, options.scheduler ?? asyncScheduler).pipe(
      concatMap(() => listOnce()),
    )
    return merge(keyEvents, rechecks)
  })
}

/**
 * The first in line of a leader lock's queue, and the leader (`lock` target): long-polls `.lock`
 * as a prefix (the key, and a revoke request `.lock.revoke/<session>`), from the last listing the
 * members were given, and emits each change of those keys as that listing with them patched in
 * (`patchLock`), so that the members decide on it at once, without a listing. The first answer
 * after a reconnection or a reset, or one that comes before any listing, lists the prefix instead.
 * The poll goes on from its own answers, except after an answer that shows the key free: the first
 * in line tries it then. No poll goes out while an acquisition of the process is on its way
 * (`acquisitionsAnswered`): a committed one gives the members the prefix as of that write, and the
 * leader's poll goes out from its index, so no poll answers with it; after a refusal the poll goes
 * out from the index of the free key, and answers at once with whoever took it. An answer no newer
 * than the last listing is passed over: a poll already out when an acquisition began can answer
 * after it, from before its write, and would undo it in the listing.
 */
export function lockChanges(
  client: Pick<ConsulClient, 'watchPrefix'>,
  to: Extract<WatchTarget, { type: 'lock' }>,
  options: WatchOptions,
  hooks: Pick<KeyWatchHooks, 'lastListing' | 'acquisitionsAnswered'>,
  listOnce: () => Observable<WatchEvent>,
): Observable<WatchEvent> {
  return defer(() => {
    let reconnected = false
    let from = 0n
    const listed = (event: WatchEvent): void => {
      if (event.type === 'snapshot') from = event.snapshot.index
    }
    // One round: once no acquisition of the process is on its way, the polls up to an answer
    // that shows the key free, emitted with its end.
    const round = hooks.acquisitionsAnswered().pipe(
      concatMap(() => {
        // A listing the members were given since (an acquisition's, say) shows the keys as of
        // its index: the poll goes on from there.
        const last = hooks.lastListing()
        if (last !== undefined && last.index > from) from = last.index
        return client.watchPrefix(to.key, { ...options, reuse: undefined, startIndex: from })
      }),
      concatMap((event): Observable<WatchEvent | typeof KEY_FREE> => {
        if (event.type === 'disconnected') {
          reconnected = true
          return of(event)
        }
        const last = hooks.lastListing()
        if (reconnected || event.reset === true || last === undefined) {
          reconnected = false
          return listOnce().pipe(tap(listed))
        }
        // An answer no newer than the members' last listing tells nothing it does not (a poll
        // sent before an acquisition, answered after it at an index below that write's).
        if (event.snapshot.index <= last.index) return EMPTY
        from = event.snapshot.index
        const polled = event.snapshot.entries
        if (sameLockKeys(last, to.key, polled)) return EMPTY
        const snapshot = patchLock(last, to.key, polled, from)
        const entry = polled.find((e) => e.key === to.key)
        const change = of<WatchEvent>({ type: 'snapshot', snapshot })
        return entry?.session === undefined ? concat(change, of(KEY_FREE)) : change
      }),
      takeWhile((event): event is WatchEvent => event !== KEY_FREE),
    )
    return round.pipe(repeat())
  })
}

/** The end of a round of `lockChanges`: the key showed free. */
const KEY_FREE = Symbol('key free')

/**
 * A key's answer that is news: the index of its change (none after a reconnection), and the
 * hand-off it shows, if any.
 */
interface News {
  readonly changedAt: bigint | undefined
  readonly handed: Handed | undefined
}

/** Whether `.lock` (as a long poll answered it) is readable and lists `session` as a holder. */
function listsHolder(entry: KVEntry | undefined, key: string, session: string): entry is KVEntry {
  const read = readLockBody(entry, key)
  return E.isRight(read) && read.right.record?.holders.includes(session) === true
}

/**
 * How many prefixes a client remembers after their coordinators are gone: enough for every prefix
 * a service contends on, bounded for one that contends on ever new prefixes.
 */
export const REMEMBERED_PREFIXES = 256

/** What a client remembers of a prefix between its coordinators (a replica's tenures). */
interface PrefixMemory {
  /** `.lock` as last seen (null: none; undefined: never seen): the one-transaction join needs it. */
  lock: KVEntry | null | undefined
  /**
   * The fairness grace counted last (`decidePatiently`): a process that contends again and again
   * does not grant a stalled front waiter a new grace per tenure.
   */
  grace: CountedGrace | undefined
  /** The hand-overs seen (`noteHandOvers`): a new tenure estimates from its first snapshot. */
  handOvers: HandOverLog
}

/**
 * Tells what `client` remembers of `prefix` the `.lock` a read outside its contenders showed
 * (`entry`; null: there is none), as a listing by its watch would: a first contender of the
 * prefix on that client may then join in one transaction (`mayJoin`) instead of listing the
 * prefix, taking its key, and waking for its own write. `rxsem run` reads `.lock` to check the
 * agent before it contends.
 *
 * @example
 * const read = await client.kv.get(lockKey(prefix))()
 * if (E.isRight(read)) rememberLock(client, prefix, read.right)
 */
export function rememberLock(client: ConsulClient, prefix: string, entry: KVEntry | null): void {
  memoryOf(client, prefix).lock = entry
}

/** A bounded cache (least recently used first out) per client, keyed weakly by the client. */
const memories = new WeakMap<ConsulClient, Map<string, PrefixMemory>>()

function memoryOf(client: ConsulClient, prefix: string): PrefixMemory {
  let byPrefix = memories.get(client)
  if (!byPrefix) memories.set(client, (byPrefix = new Map<string, PrefixMemory>()))
  const memory = byPrefix.get(prefix) ?? {
    lock: undefined,
    grace: undefined,
    handOvers: NO_HAND_OVERS,
  }
  byPrefix.delete(prefix)
  byPrefix.set(prefix, memory)
  if (byPrefix.size > REMEMBERED_PREFIXES) byPrefix.delete(byPrefix.keys().next().value as string)
  return memory
}

const coordinators = refCountedRegistry<PrefixCoordinator>()

/**
 * The coordinator of (client, prefix, protocol), made by its first member and forgotten when its
 * last member leaves.
 *
 * @example
 * const lease = coordinatorFor(client, 'svc/lock', semaphoreProtocol, { waitMs: 30_000 })
 * lease.value.follow(member)
 * // ... when the member is done
 * lease.value.unfollow(member)
 * lease.release()
 * @returns A lease on the coordinator; release it when the member is done.
 */
export function coordinatorFor(
  client: ConsulClient,
  prefix: string,
  protocol: ContenderProtocol,
  options: CoordinatorWatchOptions,
): Borrowed<PrefixCoordinator> {
  return coordinators.borrow(
    client,
    `${protocol.kind}:${prefix}`,
    () => new PrefixCoordinator(client, prefix, protocol, options),
  )
}

/** How many coordinators the process holds now (for tests and benchmarks). */
export const coordinatorCount = (): number => coordinators.size()
