import * as E from 'fp-ts/lib/Either.js'
import {
  BehaviorSubject,
  EMPTY,
  asyncScheduler,
  interval,
  merge,
  concat,
  concatMap,
  defaultIfEmpty,
  defer,
  distinctUntilChanged,
  filter,
  finalize,
  map,
  mergeMap,
  of,
  switchMap,
  take,
  tap,
  type Observable,
} from 'rxjs'
import type { ConsulClient, WatchOptions } from '../consul/client-api.js'
import type { KVEntry, KVSnapshot, WatchEvent } from '../consul/types.js'
import { lockKey } from '../core/keys/lock-key.js'
import { readLock } from '../core/lock-body/read-lock.js'
import type { DecideStep } from '../core/contender/contender-state-model.js'
import {
  WHOLE_PREFIX,
  sameWatchTarget,
  watchTarget,
  type LocalContender,
  type WatchTarget,
} from '../core/semaphore/watch-target.js'
import { afterEach } from './after-each.js'
import { fromCall } from './from-call.js'
import { perClientPrefix } from './per-client-prefix.js'
import { shareWatchEvents } from './shared-watch.js'

interface QueueWatch {
  readonly events: Observable<WatchEvent>
  readonly locals: Set<LocalContender>
  readonly retarget: () => void
  /** Takes a snapshot got otherwise (a join's) as the last one, if it is newer. */
  readonly offer: (snapshot: KVSnapshot) => void
  /**
   * Whether a contender of `limit` may join without reading the prefix first: a snapshot of this
   * watch (the last, kept across its teardowns) showed a `.lock` that such a contender may write.
   */
  readonly mayJoin: (limit: number) => boolean
  /** Joins in flight (see `queueWatch`'s `join`). */
  joining: number
}

const queues = perClientPrefix<QueueWatch>()

/** What `queueWatch` needs besides the client and the prefix. */
export interface QueueWatchOptions extends WatchOptions {
  /** The semaphore's decide step for this prefix (shared by its contenders). */
  readonly decide: DecideStep
}

/**
 * The watch events of a semaphore prefix for one contender of this process, from the one watch
 * that all of the process's contenders of the prefix share (as `sharedWatch`), but herd-free:
 * while every one of them waits further back than the front of the queue, the watch long-polls
 * only the key of the waiter just ahead of the best-placed one (`watchTarget`), and lists the
 * prefix once when that key changes or goes. Otherwise it long-polls the prefix. The target is
 * chosen again after every snapshot, and when a contender joins or leaves.
 *
 * ```
 * target:  prefix------key(w3@812)----------------prefix-----
 * polls:   list?index  get w3?index=812 …(w3 handed)  list?index …
 * events:  s1----s2----------------------s3--------s4--------
 * ```
 *
 * The events are the same as the prefix watch's: snapshots of the whole prefix, and
 * `disconnected` when the long poll fails. A snapshot that moves a contender of this process
 * forward arrives one wake-up later than on a prefix watch; one that concerns nobody here does
 * not arrive at all, so a waiter far back sees its rank and the holders only when it moves.
 *
 * Given `join`, the process's only contender of a prefix whose `.lock` the watch has seen to be
 * writable by it runs `join` first (`joinQueue`: its key and the prefix in one transaction); the
 * snapshot it answers comes first, and the watch's next long poll blocks from it. Without an
 * answer, the contender starts as the others do.
 *
 * @example
 * queueWatch(client, 'svc/lock', { session, limit: 3 }, { decide }).subscribe(events)
 * @param client - The client (the watch is shared per client and prefix).
 * @param prefix - The semaphore prefix.
 * @param local - The contender that subscribes (counted while subscribed).
 * @param options - The decide step, and the watch's options.
 * @param join - Takes the contender key and reads the prefix; its snapshot, or undefined.
 * @returns The prefix's watch events.
 */
export function queueWatch(
  client: ConsulClient,
  prefix: string,
  local: LocalContender,
  options: QueueWatchOptions,
  join?: () => Observable<KVSnapshot | undefined>,
): Observable<WatchEvent> {
  const queue = queues(client, prefix, () => createQueueWatch(client, prefix, options))
  const follow = (seed: KVSnapshot | undefined): Observable<WatchEvent> => {
    if (seed !== undefined) queue.offer(seed)
    queue.locals.add(local)
    queue.retarget()
    const events = queue.events.pipe(
      finalize(() => {
        queue.locals.delete(local)
        queue.retarget()
      }),
    )
    if (seed === undefined) return events
    // The seed first; then nothing older than it (a long poll answered before the join).
    return concat(
      of<WatchEvent>({ type: 'snapshot', snapshot: seed }),
      events.pipe(
        filter((e) => e.type !== 'snapshot' || e.reset === true || e.snapshot.index >= seed.index),
      ),
    )
  }
  return defer(() => {
    // Only the process's first contender of the prefix joins this way (the others have the shared
    // watch's snapshots already, and a join reads the whole prefix), and only on a prefix that it
    // has seen to be a sound semaphore: a join writes its key before it reads `.lock`, and a
    // contender must write nothing under a prefix held by `consul lock`, or with a `.lock` it
    // cannot read or whose limit differs.
    if (
      join === undefined ||
      queue.locals.size > 0 ||
      queue.joining > 0 ||
      !queue.mayJoin(local.limit)
    ) {
      return follow(undefined)
    }
    queue.joining++
    let joining = true
    const done = (): void => {
      if (joining) queue.joining--
      joining = false
    }
    return join().pipe(
      defaultIfEmpty(undefined),
      take(1),
      tap(done),
      switchMap(follow),
      finalize(done),
    )
  })
}

function createQueueWatch(
  client: ConsulClient,
  prefix: string,
  options: QueueWatchOptions,
): QueueWatch {
  const { decide, ...watchOptions } = options
  const locals = new Set<LocalContender>()
  const target = new BehaviorSubject<WatchTarget>(WHOLE_PREFIX)
  let last: KVSnapshot | undefined
  // `.lock` as the last snapshot showed it (null: none); unlike `last`, kept across teardowns.
  let knownLock: KVEntry | null | undefined
  const keep = (snapshot: KVSnapshot): void => {
    last = snapshot
    knownLock = snapshot.entries.find((e) => e.key === lockKey(prefix)) ?? null
  }
  const retarget = (): void => {
    target.next(last === undefined ? WHOLE_PREFIX : watchTarget(last, prefix, locals, decide))
  }
  const events = target.pipe(
    distinctUntilChanged(sameWatchTarget),
    // Each long poll starts from what the contenders have already seen: the last snapshot's index
    // for the prefix, the key's index in it for a key. No read at once on every switch.
    switchMap((to) =>
      to.type === 'prefix'
        ? client.watchPrefix(`${prefix}/`, {
            ...watchOptions,
            startIndex: last?.index,
            startEntries: last?.entries,
          })
        : waitForKey(client, prefix, to, watchOptions, () => target.next(WHOLE_PREFIX)),
    ),
    // A listing below what the contenders saw (the prefix watch marks its own) is a reset too.
    map((event): WatchEvent =>
      event.type === 'snapshot' &&
      event.reset !== true &&
      last !== undefined &&
      event.snapshot.index < last.index
        ? { ...event, reset: true }
        : event,
    ),
    // Choose the next target once every contender has seen the snapshot.
    afterEach((event) => {
      if (event.type !== 'snapshot') return
      keep(event.snapshot)
      retarget()
    }),
    finalize(() => {
      last = undefined
      target.next(WHOLE_PREFIX)
    }),
    shareWatchEvents(),
  )
  const offer = (snapshot: KVSnapshot): void => {
    if (last === undefined || snapshot.index > last.index) keep(snapshot)
  }
  const mayJoin = (limit: number): boolean =>
    knownLock !== undefined && E.isRight(readLock(knownLock ?? undefined, lockKey(prefix), limit))
  return { events, locals, retarget, offer, mayJoin, joining: 0 }
}

/**
 * How long a waiter stays parked on the key ahead before it lists the prefix once anyway: the
 * waiter ahead may be dead (killed, frozen, cut off), and then its key changes only when Consul
 * expires its session, TTL to 2 × TTL later, while slots may stand free. One listing per parked
 * process every 5 s finds that out; the fairness grace does the rest (`decidePatiently`).
 */
export const PARKED_RECHECK_MS = 5000

/**
 * Long-polls one contender key; when it changes, goes, or the poll reconnects, and every
 * `PARKED_RECHECK_MS` in any case, lists the prefix once and emits that snapshot. A failed list
 * hands back to the prefix watch (`fallBack`), whose loop reports and retries failures.
 */
function waitForKey(
  client: ConsulClient,
  prefix: string,
  to: Extract<WatchTarget, { type: 'key' }>,
  options: WatchOptions,
  fallBack: () => void,
): Observable<WatchEvent> {
  const listOnce = (): Observable<WatchEvent> =>
    fromCall((signal) =>
      client.kv.list(`${prefix}/`, { signal, consistency: options.consistency }),
    ).pipe(
      mergeMap((listed) => {
        if (E.isRight(listed)) return of<WatchEvent>({ type: 'snapshot', snapshot: listed.right })
        fallBack()
        return EMPTY
      }),
    )
  return defer(() => {
    let reconnected = false
    const keyEvents = client.watchPrefix(to.key, { ...options, startIndex: to.modifyIndex }).pipe(
      concatMap((event): Observable<WatchEvent> => {
        if (event.type === 'disconnected') {
          reconnected = true
          return of(event)
        }
        const entry = event.snapshot.entries.find((e) => e.key === to.key)
        if (!reconnected && entry?.modifyIndex === to.modifyIndex) return EMPTY
        reconnected = false
        return listOnce()
      }),
    )
    const rechecks = interval(PARKED_RECHECK_MS, options.scheduler ?? asyncScheduler).pipe(
      concatMap(listOnce),
    )
    return merge(keyEvents, rechecks)
  })
}
