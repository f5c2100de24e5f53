/**
 * `createConsulClient`: the ConsulClient on HTTP/1.1 connections of its own, against a real agent.
 */
import type { ConsulClient, WatchOptions } from './client-api.js'
import { runCloseHooks } from './close-hooks.js'
import { resolveConfig, type ConsulClientConfig, type ResolvedConfig } from './config.js'
import { createTransport } from './http.js'
import { createKv } from './kv.js'
import { attachRequestFeed } from './request-feed.js'
import { createSessions } from './sessions.js'
import { createTxn } from './txn.js'
import { attachTxnLimit } from './txn-limit.js'
import { watchPrefix } from './watch-prefix.js'

/**
 * The ConsulClient `createConsulClient` returns, with the configuration it resolved (the token, the
 * basic auth and the TLS material are left out, so logging it leaks no secret).
 *
 * @example
 * ```ts
 * const consul: ConsulHttpClient = createConsulClient()
 * console.log(`Consul at ${consul.config.origin}, reads ${consul.config.consistency}`)
 * ```
 */
export interface ConsulHttpClient extends ConsulClient {
  /** The checked configuration in use, without `token`, `basicAuth` and `tls`. */
  readonly config: Omit<ResolvedConfig, 'token' | 'basicAuth' | 'tls'>
}

/**
 * Creates a client for one Consul agent. Unset options fall back to Consul's environment
 * variables (CONSUL_HTTP_ADDR, CONSUL_HTTP_TOKEN, CONSUL_HTTP_TOKEN_FILE, ...), then to
 * 127.0.0.1:8500. Throws a ConsulConfigError when the configuration is invalid; never after.
 *
 * @example
 * ```ts
 * const consul = createConsulClient({ address: '127.0.0.1:8500' })
 * const entry = await consul.kv.get('service/web/leader')()
 * if (E.isRight(entry) && entry.right !== null) console.log(entry.right.modifyIndex)
 * await consul.close()
 * ```
 */
export function createConsulClient(config: ConsulClientConfig = {}): ConsulHttpClient {
  return clientForConfig(resolveConfig(config))
}

/**
 * @internal The client of an already resolved configuration (for the shared default client, which
 * keys its registry on the same resolution the client then runs on).
 */
export function clientForConfig(resolved: ResolvedConfig): ConsulHttpClient {
  const transport = createTransport(resolved)
  const kv = { ...createKv(transport), txn: createTxn(transport) }
  const { token: _token, basicAuth: _basicAuth, tls: _tls, ...visible } = resolved
  const client: ConsulHttpClient = {
    config: visible,
    kv,
    session: createSessions(transport),
    watchPrefix: (prefix: string, options?: WatchOptions) => watchPrefix(client, prefix, options),
    network: transport.network,
    // What still needs the client (idle sessions kept for its next contender) is done first.
    close: () => runCloseHooks(client).then(() => transport.close()),
  }
  attachRequestFeed(client, transport.requests)
  attachTxnLimit(client, transport)
  return client
}
