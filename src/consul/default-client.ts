/**
 * The client a contender uses when its options name none: one per configuration per process,
 * shared and reference-counted, so that a process with hundreds of contenders holds one long poll
 * per prefix and one bounded pool of connections (semantics §9 trap 15). When the last user lets
 * go the client stays open for an idle grace (`DEFAULT_CLIENT_IDLE_GRACE_MS`) and is closed after
 * it, unless a user comes back first: a replica that contends again and again (`withSlot` in a
 * loop, a new `semaphore(...)` per job) keeps its connections and what the client remembers of its
 * prefixes (the `.lock` that the one-transaction join needs) from one tenure to the next. Nothing
 * of an idle client keeps the process alive: the grace timer is unreferenced and Node's HTTP agent
 * unreferences its idle keep-alive sockets.
 */
import type { ConsulClient } from './client-api.js'
import { clientForConfig } from './client.js'
import { runCloseHooks } from './close-hooks.js'
import { resolveConfig, type ConsulClientConfig, type ResolvedConfig } from './config.js'

/**
 * How long the default client stays open after its last user let go: 5 s. A replica that contends
 * again at once, or every few seconds (a job per `semaphore(...)`), finds the same client, so its
 * next tenure reuses the client's warm connections (the transport keeps an idle one for 10 s, so a
 * grace shorter than that finds them still open) and joins in one transaction (the client
 * remembers the prefix's `.lock`). Longer would keep a pool open for nobody in a process that
 * contends once in a while, with nothing to gain on connections; it never delays a process's exit
 * either way.
 */
export const DEFAULT_CLIENT_IDLE_GRACE_MS = 5000

/** One borrowed reference to a shared default client. */
export interface BorrowedClient {
  readonly client: ConsulClient
  /**
   * Gives the reference back. When it was the last one, the client stays open for the idle grace
   * (a user that comes in meanwhile gets it), then is closed and forgotten, so a later user gets a
   * new one. Resolves at once (the close, if it comes, is in the background and never rejects); a
   * second call does nothing.
   */
  readonly release: () => Promise<void>
}

interface Entry {
  readonly client: ConsulClient
  users: number
  /** The pending close while the client is idle (no users), unreferenced. */
  idle: NodeJS.Timeout | undefined
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
 * const { client, release } = borrowDefaultClient()
 * try { await client.kv.get('service/web/leader')() } finally { await release() }
 * ```
 * @param config - Options resolved as `createConsulClient` resolves them; default none.
 * @param idleGraceMs - How long the client stays open once this reference was the last one given
 *   back; default `DEFAULT_CLIENT_IDLE_GRACE_MS` (tests shorten it; 0 closes at once).
 * @returns The client and the function that gives this reference back. Throws a
 *   ConsulConfigError when the configuration is invalid.
 */
export function borrowDefaultClient(
  config: ConsulClientConfig = {},
  idleGraceMs: number = DEFAULT_CLIENT_IDLE_GRACE_MS,
): BorrowedClient {
  const resolved = resolveConfig(config)
  const key = configurationKey(resolved)
  let entry = openClients.get(key)
  if (!entry) {
    openClients.set(key, (entry = { client: clientForConfig(resolved), users: 0, idle: undefined }))
  }
  // A user back within the grace: the client is not closed after all.
  if (entry.idle !== undefined) {
    clearTimeout(entry.idle)
    entry.idle = undefined
  }
  entry.users++
  const held = entry
  let released = false
  return {
    client: held.client,
    release: () => {
      if (released) return Promise.resolve()
      released = true
      if (--held.users > 0) return Promise.resolve()
      // Nobody need await the close: a failure must not become an unhandled rejection.
      const close = (): Promise<void> => {
        held.idle = undefined
        if (held.users > 0 || openClients.get(key) !== held) return Promise.resolve()
        openClients.delete(key)
        return closeQuietly(held.client)
      }
      // A grace of 0 closes at once, and resolves once the connections are closed.
      if (idleGraceMs <= 0) return close()
      // Unreferenced: an idle client never keeps the process alive.
      held.idle = setTimeout(() => void close(), idleGraceMs)
      held.idle.unref()
      return Promise.resolve()
    },
  }
}

/**
 * Closes now every default client that no one uses (those in their idle grace), and resolves once
 * their connections are closed. Clients in use are left alone. What a client keeps for its next
 * user is let go first, in every default client: the idle sessions kept for the process's next
 * contender are destroyed (that frees a client only they kept open). For tests, and for a process
 * that wants its connections closed before it does something else.
 *
 * @example
 * ```ts
 * await closeIdleDefaultClients()
 * ```
 */
export async function closeIdleDefaultClients(): Promise<void> {
  await Promise.all([...openClients.values()].map((entry) => runCloseHooks(entry.client)))
  const idle = [...openClients].filter(([, entry]) => entry.users === 0)
  for (const [key, entry] of idle) {
    if (entry.idle !== undefined) clearTimeout(entry.idle)
    entry.idle = undefined
    openClients.delete(key)
  }
  await Promise.all(idle.map(([, entry]) => closeQuietly(entry.client)))
}

/** Closes `client`; resolves once it is closed, and never rejects (nor throws) if that fails. */
function closeQuietly(client: ConsulClient): Promise<void> {
  return Promise.resolve()
    .then(() => client.close())
    .catch(() => undefined)
}

/**
 * The registry key of a resolved configuration: its JSON, field by field in resolveConfig's order,
 * so that two configurations that differ in anything, a secret included, differ. It holds the
 * token and the TLS key as text, as the client made from that configuration already does.
 */
function configurationKey(resolved: ResolvedConfig): string {
  return JSON.stringify(resolved)
}
