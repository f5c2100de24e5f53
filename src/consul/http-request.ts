/**
 * What the transport is asked and what it answers: the request a Consul call makes (method, path,
 * query, body, signal, timeout, consistency, urgency), the answer it gets back, and the query
 * string the transport sends for it.
 */
import type { IncomingHttpHeaders } from 'node:http'
import type { Consistency, ResolvedConfig } from './config.js'

export interface HttpRequest {
  readonly method: 'GET' | 'PUT' | 'DELETE'
  /** Already-encoded path, starting with `/v1/`. */
  readonly path: string
  /** `true` sends a bare flag (`?recurse`); undefined members are left out. */
  readonly query?: Readonly<Record<string, string | true | undefined>>
  readonly body?: Uint8Array | string
  readonly contentType?: string
  readonly signal?: AbortSignal | undefined
  /** Overrides the client's request timeout (blocking queries need more). */
  readonly timeoutMs?: number
  /** Read consistency; applied to GETs only. */
  readonly consistency?: Consistency | undefined
  /**
   * Sent ahead of the requests waiting for a connection (a session renewal: a holder's lease
   * hangs on it, and a burst of thousands of other requests must not make it late).
   */
  readonly urgent?: boolean
}

export interface HttpAnswer {
  readonly status: number
  readonly headers: IncomingHttpHeaders
  readonly body: string
  /**
   * The body's bytes as they arrived, when the answer came over HTTP: a reader of a large body
   * (a listing) may take them instead of `body`, which is then never made.
   */
  readonly bytes?: readonly Uint8Array[]
  /** `GET /v1/kv/p?recurse`: for messages (the query never carries the token). */
  readonly label: string
  /** Where the answer came from, for messages: `http://127.0.0.1:8500` or `unix:///path`. */
  readonly origin: string
  /** Wall-clock ms the answer's headers arrived (for an HTTP-date `Retry-After`); default now. */
  readonly receivedAt?: number
}

/** Whether `request` is a blocking query (a long poll: it may hold its connection for its wait). */
export function isLongPoll(request: HttpRequest): boolean {
  return request.query?.['index'] !== undefined
}

/**
 * The query string `request` is sent with: its own members, then the client's datacenter,
 * namespace and admin partition (on every request, as Consul's Go client sends them), then the read consistency of a GET (`?consistent`, `?stale`). Empty, or starting
 * with `?`.
 */
export function queryOf(request: HttpRequest, config: ResolvedConfig): string {
  // Built as it goes (every request has one): no merged object, no array of entries.
  let query = ''
  const add = (name: string, value: string | true | undefined): void => {
    if (value === undefined) return
    const part = value === true ? name : `${name}=${encodeURIComponent(value)}`
    query = query === '' ? `?${part}` : `${query}&${part}`
  }
  const own = request.query
  if (own !== undefined) for (const name in own) add(name, own[name])
  add('dc', config.datacenter)
  add('ns', config.namespace)
  add('partition', config.partition)
  if (request.method === 'GET' && request.consistency === 'consistent') add('consistent', true)
  if (request.method === 'GET' && request.consistency === 'stale') add('stale', true)
  return query
}
