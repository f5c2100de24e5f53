import { ReplaySubject, share, type MonoTypeOperatorFunction, type Observable } from 'rxjs'
import type { ConsulClient, WatchOptions } from '../consul/client-api.js'
import type { WatchEvent } from '../consul/types.js'
import { perClientPrefix } from './per-client-prefix.js'

const watches = perClientPrefix<Observable<WatchEvent>>()

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
 *
 * @example
 * sharedWatch(client, 'service/db/lock').subscribe((event) => console.log(event.type))
 * @returns The shared Observable of the prefix's watch events.
 */
export function sharedWatch(
  client: ConsulClient,
  prefix: string,
  options: WatchOptions = {},
): Observable<WatchEvent> {
  return watches(client, prefix, () => client.watchPrefix(prefix, options).pipe(shareWatchEvents()))
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
