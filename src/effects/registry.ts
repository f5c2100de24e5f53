import type { ConsulClient } from '../consul/client-api.js'

/** One user's borrowed reference to a registry value; `release()` gives it back, once. */
export interface Borrowed<V> {
  readonly value: V
  /** Gives the hold back; the last one evicts the value (and calls `dispose`). */
  readonly release: () => void
}

/** A refcounted registry of one value per (client, key). */
export interface Registry<V> {
  /** The value for (client, key), made by `create` when nobody holds one; counted until released. */
  readonly borrow: (client: ConsulClient, key: string, create: () => V) => Borrowed<V>
  /** How many values are held now (for tests and benchmarks). */
  readonly size: () => number
}

/**
 * What the contenders of a process share per (client, prefix): made by the first user, counted,
 * and evicted when the last one leaves, so a long-lived client that served a hundred thousand
 * task keys holds nothing for the ones that are done. Keyed weakly by the client.
 *
 * ```
 * borrow(c, 'a') ─► create ─► value (1 user)
 * borrow(c, 'a') ──────────► same value (2 users)
 * release × 2 ─────────────► dispose(value), entry gone
 * ```
 *
 * @example
 * const watches = refCountedRegistry<Watch>((watch) => watch.stop())
 * const borrowed = watches.borrow(client, prefix, () => startWatch(client, prefix))
 * // ... later
 * borrowed.release()
 * @param dispose - Called with a value when its last user leaves.
 * @returns The registry.
 */
export function refCountedRegistry<V>(dispose?: (value: V) => void): Registry<V> {
  const byClient = new WeakMap<ConsulClient, Map<string, { value: V; users: number }>>()
  let held = 0
  return {
    borrow: (client, key, create) => {
      let byKey = byClient.get(client)
      if (!byKey) byClient.set(client, (byKey = new Map<string, { value: V; users: number }>()))
      let entry = byKey.get(key)
      if (entry === undefined) {
        entry = { value: create(), users: 0 }
        byKey.set(key, entry)
        held++
      }
      entry.users++
      const owner = byKey
      const mine = entry
      let released = false
      return {
        value: mine.value,
        release: () => {
          if (released) return
          released = true
          if (--mine.users > 0 || owner.get(key) !== mine) return
          owner.delete(key)
          held--
          dispose?.(mine.value)
        },
      }
    },
    size: () => held,
  }
}
