/**
 * The client a contender uses when its options name none: one per configuration per process,
 * shared and reference-counted, so that a process with hundreds of contenders holds one long poll
 * per prefix and one bounded pool of connections (semantics §9 trap 15), and closes it when the
 * last user lets go.
 */
import { createHash } from 'node:crypto'
import type { ConsulClient } from './client-api.js'
import { clientForConfig } from './client.js'
import { resolveConfig, type ConsulClientConfig, type ResolvedConfig } from './config.js'

/** One reference to a shared default client. */
export interface DefaultClientLease {
  readonly client: ConsulClient
  /**
   * Gives the reference back; the last one closes the client (resolved once its connections are
   * closed) and forgets it, so the next user gets a new one. A second call does nothing.
   */
  readonly release: () => Promise<void>
}

interface Entry {
  readonly client: ConsulClient
  users: number
}

// The one piece of process-wide state: the open default clients, by configuration.
const openClients = new Map<string, Entry>()

/**
 * A reference to the process's client for the configuration `config` resolves to (by default the
 * CONSUL_* environment variables), created on first use. Users of the same address, scheme,
 * token, TLS material, ... share one client; a change of any of them gets another.
 *
 * @example
 * ```ts
 * const { client, release } = acquireDefaultClient()
 * try { await client.kv.get('service/web/leader')() } finally { await release() }
 * ```
 * @param config - Options resolved as `createConsulClient` resolves them; default none.
 * @returns The client and the function that gives this reference back. Throws a
 *   ConsulConfigError when the configuration is invalid.
 */
export function acquireDefaultClient(config: ConsulClientConfig = {}): DefaultClientLease {
  const resolved = resolveConfig(config)
  const key = configurationKey(resolved)
  let entry = openClients.get(key)
  if (!entry) openClients.set(key, (entry = { client: clientForConfig(resolved), users: 0 }))
  entry.users++
  const held = entry
  let released = false
  return {
    client: held.client,
    release: async () => {
      if (released) return
      released = true
      if (--held.users > 0) return
      openClients.delete(key)
      await held.client.close()
    },
  }
}

/**
 * The registry key of a resolved configuration: a digest, so that the token and the TLS key do
 * not sit in the map as text, while two configurations that differ in a secret still differ.
 */
function configurationKey(resolved: ResolvedConfig): string {
  // The field order is resolveConfig's.
  return createHash('sha256').update(JSON.stringify(resolved)).digest('hex')
}
