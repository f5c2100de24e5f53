/**
 * What a client's requests came to, for whoever counts them (the library's telemetry): each
 * request's endpoint kind, and the kind of its failure. A side channel rather than a member of
 * ConsulClient: the capability interface stays as it is, and a client with no listener pays one
 * empty-set check per request.
 */
import type { ConsulClient } from './client-api.js'
import type { ConsulError } from '../base/consul-error.js'
import type { HttpRequest } from './http-request.js'

/**
 * The kind of a Consul request, by what it does: a few fixed names, never a key or a session id.
 * `kv.watch` is a blocking listing (`?recurse&index=`), which lasts up to its wait.
 */
export type ConsulEndpoint =
  | 'kv.get'
  | 'kv.list'
  | 'kv.watch'
  | 'kv.put'
  | 'kv.cas'
  | 'kv.acquire'
  | 'kv.release'
  | 'kv.delete'
  | 'txn'
  | 'session.create'
  | 'session.renew'
  | 'session.destroy'
  | 'session.info'
  | 'other'

/** One finished request: its kind, and its failure's kind (a ConsulError tag) if it failed. */
export interface RequestOutcome {
  readonly endpoint: ConsulEndpoint
  readonly error: ConsulError['_tag'] | undefined
}

/** Where a client's request outcomes go. */
export interface RequestFeed {
  /** Adds a listener; returns its removal. */
  readonly listen: (listener: (outcome: RequestOutcome) => void) => () => void
}

/** The kind of a request, from its method, path and query. */
export function endpointOf(
  request: Pick<HttpRequest, 'method' | 'path' | 'query'>,
): ConsulEndpoint {
  const { method, path } = request
  const query = request.query ?? {}
  if (path.startsWith('/v1/kv/')) {
    if (method === 'GET') {
      if (query['recurse'] === undefined) return 'kv.get'
      return query['index'] === undefined ? 'kv.list' : 'kv.watch'
    }
    if (method === 'DELETE') return 'kv.delete'
    if (query['cas'] !== undefined) return 'kv.cas'
    if (query['acquire'] !== undefined) return 'kv.acquire'
    if (query['release'] !== undefined) return 'kv.release'
    return 'kv.put'
  }
  if (path === '/v1/txn') return 'txn'
  if (path === '/v1/session/create') return 'session.create'
  if (path.startsWith('/v1/session/renew/')) return 'session.renew'
  if (path.startsWith('/v1/session/destroy/')) return 'session.destroy'
  if (path.startsWith('/v1/session/info/')) return 'session.info'
  return 'other'
}

/** The feed and the function that publishes to it, for a transport. */
export function requestFeed(): RequestFeed & {
  /** Tells the listeners how `request` ended; costs nothing while nobody listens. */
  readonly publish: (
    request: Pick<HttpRequest, 'method' | 'path' | 'query'>,
    error: ConsulError['_tag'] | undefined,
  ) => void
} {
  const listeners = new Set<(outcome: RequestOutcome) => void>()
  return {
    listen: (listener) => {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    publish: (request, error) => {
      if (listeners.size === 0) return
      const outcome: RequestOutcome = { endpoint: endpointOf(request), error }
      for (const listener of listeners) {
        try {
          listener(outcome)
        } catch {
          // A listener's bug must not reach the request (nor the other listeners).
        }
      }
    },
  }
}

const feeds = new WeakMap<ConsulClient, RequestFeed>()

/** Records `client`'s feed (for createConsulClient). */
export function attachRequestFeed(client: ConsulClient, feed: RequestFeed): void {
  feeds.set(client, feed)
}

/** The feed of a client made by createConsulClient; undefined for any other ConsulClient. */
export function requestFeedOf(client: ConsulClient): RequestFeed | undefined {
  return feeds.get(client)
}
