import type { ConsulClient } from '../consul/client-api.js'

/**
 * A registry of one value per (client, prefix), made on first use: what the contenders of a
 * process share on a prefix (its watch, its decide step). Keyed weakly by the client, so a client
 * that is gone takes its values with it.
 *
 * @example
 * const watches = perClientPrefix<Observable<WatchEvent>>()
 * const watch = watches(client, prefix, () => client.watchPrefix(prefix).pipe(share()))
 * @returns The lookup: the value for (client, prefix), made by `create` the first time.
 */
export function perClientPrefix<T>(): (client: ConsulClient, prefix: string, create: () => T) => T {
  const byClient = new WeakMap<ConsulClient, Map<string, T>>()
  return (client, prefix, create) => {
    let byPrefix = byClient.get(client)
    if (!byPrefix) byClient.set(client, (byPrefix = new Map<string, T>()))
    let value = byPrefix.get(prefix)
    if (value === undefined) byPrefix.set(prefix, (value = create()))
    return value
  }
}
