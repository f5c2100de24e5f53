import { distinctUntilChanged, filter, map, type Observable } from 'rxjs'
import type { ConsulClient, WatchOptions } from '../../consul/client-api.js'
import type { WatchEvent } from '../../base/kv-snapshot.js'
import { readLeaderKey, type Leader } from '../../core/leader-key/decide-leader-key.js'
import { commonWatch } from '../common-watch.js'

/**
 * Whether two leader readings name the same leader with the same value.
 *
 * @example
 * sameLeader({ session: 'a', value: 'x' }, { session: 'a', value: 'x' }) // true
 * @returns True when both are null, or both name the same session and value.
 */
export function sameLeader(a: Leader | null, b: Leader | null): boolean {
  return a === b || (a !== null && b !== null && a.session === b.session && a.value === b.value)
}

/**
 * Who holds the single-key lock of `prefix`, read from the process's shared watch of the prefix:
 * a pure read view, it creates no session and writes nothing, so anyone may follow an election
 * without taking part. Emits on each change of leader or value (null while nobody leads); a
 * failing watch emits nothing (the last leader seen stays the last emitted) until it reads again.
 *
 * ```
 * watch:   -s(free)---s(a)---d---s(a)---s(b)--
 * leader:  -n---------a-------------------b---
 * ```
 *
 * @example
 * watchLeaderKey(client, 'service/scheduler/leader').subscribe((leader) => console.log(leader?.value))
 * @param client - The Consul client.
 * @param prefix - The lock's prefix (the key is `<prefix>/.lock`).
 * @param options - Options of the watch, used if this call starts it.
 * @returns The leader, distinct; errors with the watch's permanent ConsulError.
 */
export function watchLeaderKey(
  client: ConsulClient,
  prefix: string,
  options: WatchOptions = {},
): Observable<Leader | null> {
  return commonWatch(client, `${prefix}/`, options).pipe(
    filter(
      (event): event is Extract<WatchEvent, { type: 'snapshot' }> => event.type === 'snapshot',
    ),
    map((event) => readLeaderKey(event.snapshot, prefix)),
    distinctUntilChanged(sameLeader),
  )
}
