import * as E from 'fp-ts/lib/Either.js'
import {
  BehaviorSubject,
  EMPTY,
  concatMap,
  defer,
  distinctUntilChanged,
  finalize,
  mergeMap,
  of,
  switchMap,
  type Observable,
} from 'rxjs'
import type { ConsulClient, WatchOptions } from '../consul/client-api.js'
import type { KVSnapshot, WatchEvent } from '../consul/types.js'
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
 * @example
 * queueWatch(client, 'svc/lock', { session, limit: 3 }, { decide }).subscribe(events)
 * @param client - The client (the watch is shared per client and prefix).
 * @param prefix - The semaphore prefix.
 * @param local - The contender that subscribes (counted while subscribed).
 * @param options - The decide step, and the watch's options.
 * @returns The prefix's watch events.
 */
export function queueWatch(
  client: ConsulClient,
  prefix: string,
  local: LocalContender,
  options: QueueWatchOptions,
): Observable<WatchEvent> {
  const joined = queues(client, prefix, () => createQueueWatch(client, prefix, options))
  return defer(() => {
    joined.locals.add(local)
    joined.retarget()
    return joined.events.pipe(
      finalize(() => {
        joined.locals.delete(local)
        joined.retarget()
      }),
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
  const retarget = (): void => {
    target.next(last === undefined ? WHOLE_PREFIX : watchTarget(last, prefix, locals, decide))
  }
  const events = target.pipe(
    distinctUntilChanged(sameWatchTarget),
    // Each long poll starts from what the contenders have already seen: the last snapshot's index
    // for the prefix, the key's index in it for a key. No read at once on every switch.
    switchMap((to) =>
      to.type === 'prefix'
        ? client.watchPrefix(`${prefix}/`, { ...watchOptions, startIndex: last?.index })
        : waitForKey(client, prefix, to, watchOptions, () => target.next(WHOLE_PREFIX)),
    ),
    // Choose the next target once every contender has seen the snapshot.
    afterEach((event) => {
      if (event.type !== 'snapshot') return
      last = event.snapshot
      retarget()
    }),
    finalize(() => {
      last = undefined
      target.next(WHOLE_PREFIX)
    }),
    shareWatchEvents(),
  )
  return { events, locals, retarget }
}

/**
 * Long-polls one contender key; when it changes, goes, or the poll reconnects, lists the prefix
 * once and emits that snapshot. A failed list hands back to the prefix watch (`fallBack`), whose
 * loop reports and retries failures.
 */
function waitForKey(
  client: ConsulClient,
  prefix: string,
  to: Extract<WatchTarget, { type: 'key' }>,
  options: WatchOptions,
  fallBack: () => void,
): Observable<WatchEvent> {
  return defer(() => {
    let reconnected = false
    return client.watchPrefix(to.key, { ...options, startIndex: to.modifyIndex }).pipe(
      concatMap((event): Observable<WatchEvent> => {
        if (event.type === 'disconnected') {
          reconnected = true
          return of(event)
        }
        const entry = event.snapshot.entries.find((e) => e.key === to.key)
        if (!reconnected && entry?.modifyIndex === to.modifyIndex) return EMPTY
        reconnected = false
        return fromCall((signal) =>
          client.kv.list(`${prefix}/`, { signal, consistency: options.consistency }),
        ).pipe(
          mergeMap((listed) => {
            if (E.isRight(listed))
              return of<WatchEvent>({ type: 'snapshot', snapshot: listed.right })
            fallBack()
            return EMPTY
          }),
        )
      }),
    )
  })
}
