/**
 * What must run before a client closes: work that still needs the client (the session shelf
 * destroys the idle sessions it keeps for the client). Keyed by the client, held weakly; a client's
 * `close()` (`createConsulClient`) and `closeIdleDefaultClients()` run its hooks first.
 */
import type { ConsulClient } from './client-api.js'

type CloseHook = () => Promise<void>

const hooks = new WeakMap<ConsulClient, Set<CloseHook>>()

/**
 * @internal Runs `hook` before `client` closes, until the returned function is called.
 *
 * @example
 * ```ts
 * const forget = beforeClientClose(client, () => shelf.flush(client))
 * ```
 * @param client - The client.
 * @param hook - Resolves when its work is done; it must not reject.
 * @returns What removes the hook.
 */
export function beforeClientClose(client: ConsulClient, hook: CloseHook): () => void {
  let set = hooks.get(client)
  if (set === undefined) hooks.set(client, (set = new Set()))
  set.add(hook)
  const held = set
  return () => {
    held.delete(hook)
    if (held.size === 0 && hooks.get(client) === held) hooks.delete(client)
  }
}

/**
 * @internal Runs every hook registered for `client`, and resolves when all are done (never rejects).
 *
 * @example
 * ```ts
 * await runCloseHooks(client)
 * ```
 * @param client - The client about to close.
 * @returns When every hook is done.
 */
export async function runCloseHooks(client: ConsulClient): Promise<void> {
  const set = hooks.get(client)
  if (set === undefined) return
  await Promise.all([...set].map((hook) => hook().catch(() => undefined)))
}
