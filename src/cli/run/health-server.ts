/**
 * `rxsem run --health-addr HOST:PORT`: an HTTP endpoint an orchestrator probes while the command
 * runs (node:http, nothing else).
 *
 * ```
 * GET /ready   200 while the slot is held, 503 otherwise   (readiness: route traffic to the holder)
 * GET /live    200 while contending or holding, 503 once the contender failed   (liveness)
 *              (a permanent failure: rxsem is then on its way out, with exit status 1 or 75)
 * ```
 *
 * Each answers a small JSON body with the state. Holding is the library's own (`holding` of the
 * contender's state, and its lease deadline checked at each request, as `isHolding()` does), so
 * `/ready` turns 503 the moment the slot is no longer safely held. The server is started before
 * the contender and closed with the command; it is never on the path from the command's exit to
 * the release.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Observable, Subscription } from 'rxjs'
import type { SemaphoreState } from '../../recipes/semaphore.js'
import { badValue, UsageError } from '../args/parse-flags.js'
import { describeError } from '../report.js'
import { nodeHttp } from './node-http.cjs'

/** Where the endpoint listens: `--health-addr`'s host (all interfaces when empty) and port. */
export interface HealthAddress {
  readonly host: string
  readonly port: number
}

/**
 * Reads `--health-addr`: `HOST:PORT`, `[IPv6]:PORT`, or `:PORT` for every interface (what a
 * Kubernetes probe of the pod's IP needs). Port 0 asks the system for a free one.
 *
 * @example
 * parseHealthAddr('127.0.0.1:8080') // { host: '127.0.0.1', port: 8080 }
 * parseHealthAddr(':0') // { host: '', port: 0 }
 * @throws UsageError naming the flag.
 */
export function parseHealthAddr(text: string): HealthAddress {
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]\s]*)):(\d{1,5})$/.exec(text)
  const port = match === null ? Number.NaN : Number(match[3])
  if (match === null || !(port >= 0 && port <= 65535)) {
    throw new UsageError(badValue('health-addr', JSON.stringify(text)), 'run')
  }
  return { host: match[1] ?? match[2] ?? '', port }
}

/** An address as given, for messages: `host:port`, `[v6]:port`, or `:port` for every interface. */
export function describeAddress(address: HealthAddress): string {
  return address.host.includes(':')
    ? `[${address.host}]:${address.port}`
    : `${address.host}:${address.port}`
}

/** What the endpoint knows of the contender. */
type Health =
  | { readonly phase: 'starting' }
  | { readonly phase: 'contending'; readonly state: SemaphoreState }
  | { readonly phase: 'failed'; readonly error: string }
  | { readonly phase: 'ended' }

/** The endpoint, listening. */
export interface HealthServer {
  /** The address it is bound to, `host:port` (`[host]:port` for IPv6), the port resolved. */
  readonly address: string
  /** Answers from the contender's states from now on (the run's replayed `state$`). */
  follow(state$: Observable<SemaphoreState>): void
  /** Stops listening and closes every connection; resolves once the socket is closed. */
  close(): Promise<void>
}

/**
 * Starts the health endpoint. Until `follow` is called it answers 503 to `/ready` and 200 to
 * `/live` (starting).
 *
 * @example
 * const health = await startHealthServer({ host: '127.0.0.1', port: 0 })
 * health.follow(state$)
 * report.info(`health endpoint on http://${health.address}`)
 * @returns The server, once it listens.
 * @throws The listen error (address in use, not available).
 */
export async function startHealthServer(
  address: HealthAddress,
  now: () => number = Date.now,
): Promise<HealthServer> {
  let health: Health = { phase: 'starting' }
  let following: Subscription | undefined
  const server = nodeHttp().createServer((request, response) =>
    answer(request, response, health, now),
  )
  // A probe's keep-alive connection must not hold the close up.
  server.keepAliveTimeout = 1000
  await new Promise<void>((listening, failed) => {
    server.once('error', failed)
    server.listen(address.port, address.host === '' ? undefined : address.host, () => {
      server.off('error', failed)
      listening()
    })
  })
  const bound = server.address() as AddressInfo
  return {
    address:
      bound.family === 'IPv6'
        ? `[${bound.address}]:${bound.port}`
        : `${bound.address}:${bound.port}`,
    follow(state$) {
      following?.unsubscribe()
      following = state$.subscribe({
        next: (state) => (health = { phase: 'contending', state }),
        error: (error: unknown) => (health = { phase: 'failed', error: describeError(error) }),
        complete: () => (health = { phase: 'ended' }),
      })
    },
    close() {
      following?.unsubscribe()
      return new Promise<void>((closed) => {
        server.close(() => closed())
        server.closeAllConnections()
      })
    },
  }
}

function answer(
  request: IncomingMessage,
  response: ServerResponse,
  health: Health,
  now: () => number,
): void {
  const path = (request.url ?? '/').replace(/\?.*$/, '')
  if (request.method !== 'GET' && request.method !== 'HEAD') {
    return send(response, 405, { error: 'only GET and HEAD' }, request.method === 'HEAD')
  }
  const state = health.phase === 'contending' ? health.state : undefined
  // As isHolding(): held only until the lease deadline, even before the state says it dropped.
  const holding =
    state?.holding === true && (state.leaseDeadline === undefined || now() < state.leaseDeadline)
  const body = {
    status: health.phase === 'contending' ? (holding ? 'holding' : 'contending') : health.phase,
    holding,
    ...(state?.session !== undefined ? { session: state.session } : {}),
    ...(holding && state?.fencingToken !== undefined
      ? { fencingToken: state.fencingToken.toString() }
      : {}),
    ...(state?.reason !== undefined ? { reason: state.reason } : {}),
    ...(health.phase === 'failed' ? { error: health.error } : {}),
  }
  const head = request.method === 'HEAD'
  switch (path) {
    case '/ready':
      return send(response, holding ? 200 : 503, body, head)
    case '/live':
      return send(response, health.phase === 'failed' ? 503 : 200, body, head)
    default:
      return send(response, 404, { error: 'try /ready or /live' }, head)
  }
}

function send(response: ServerResponse, status: number, body: object, head: boolean): void {
  const text = `${JSON.stringify(body)}\n`
  response.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  })
  response.end(head ? undefined : text)
}
