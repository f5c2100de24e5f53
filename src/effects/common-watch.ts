import {
  ReplaySubject,
  defer,
  finalize,
  share,
  type MonoTypeOperatorFunction,
  type Observable,
} from 'rxjs'
import type { ConsulClient, WatchOptions } from '../consul/client-api.js'
import type { WatchEvent } from '../base/kv-snapshot.js'
import { refCountedRegistry } from './registry.js'

// One entry per (client, prefix) watched now: each subscriber holds it, the last one evicts it,
// so a client that watched a hundred thousand task keys in turn keeps nothing for them.
const watches = refCountedRegistry<Observable<WatchEvent>>()

/**
 * The one blocking-query watch of `prefix` on `client` that every contender of this process shares,
 * so that a thousand contenders on a prefix hold one long poll, not a thousand.
 *
 * ```
 * watch:        --s1------d---s2--
 * first:        ^-s1------d---s2--
 * late joiner:           ^(s1d)s2--   (the last two events are replayed)
 * ```
 *
 * The long poll starts with the first subscriber and stops with the last. A late subscriber gets
 * the last two events at once: the latest snapshot and, when the watch is failing now, the
 * `disconnected` that followed it, so it never believes in a snapshot the watch has lost.
 * Each subscriber holds the (client, prefix) entry of a refcounted registry; the last one to leave
 * (unsubscribe, error, completion) evicts it, and the next subscriber starts afresh with `options`.
 *
 * @example
 * commonWatch(client, 'service/db/lock').subscribe((event) => console.log(event.type))
 * @param client - The client whose watch is shared.
 * @param prefix - The watched prefix (as `watchPrefix` takes it).
 * @param options - Options of the watch, used if this subscription starts it.
 * @returns The shared Observable of the prefix's watch events.
 */
export function commonWatch(
  client: ConsulClient,
  prefix: string,
  options: WatchOptions = {},
): Observable<WatchEvent> {
  return defer(() => {
    const borrowed = watches.borrow(client, prefix, () =>
      client.watchPrefix(prefix, options).pipe(shareWatchEvents()),
    )
    // finalize runs after the shared watch's own teardown: the long poll stops, then the entry goes.
    return borrowed.value.pipe(finalize(borrowed.release))
  })
}

/**
 * How many (client, prefix) watches the process shares now: one per prefix with a subscriber.
 * For tests and benchmarks that check nothing is kept for prefixes nobody watches any more.
 *
 * @example
 * const sub = commonWatch(client, 'jobs/task/7').subscribe()
 * commonWatchCount() // 1
 * sub.unsubscribe()
 * commonWatchCount() // 0
 * @returns The number of entries in the common-watch registry.
 */
export function commonWatchCount(): number {
  return watches.size()
}

/**
 * Shares watch events the way every shared watch does: the long poll runs while someone is
 * subscribed, and a late subscriber gets the last two events (the latest snapshot and, when the
 * watch is failing now, the `disconnected` after it).
 *
 * @example
 * client.watchPrefix(prefix).pipe(shareWatchEvents())
 * @returns The sharing operator.
 */
export function shareWatchEvents(): MonoTypeOperatorFunction<WatchEvent> {
  return share({
    connector: () => new ReplaySubject<WatchEvent>(2),
    resetOnRefCountZero: true,
    resetOnError: true,
    resetOnComplete: true,
  })
}
