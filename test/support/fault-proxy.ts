// An HTTP proxy that sits between the client under test and a real Consul agent and misbehaves
// on demand. Tests never mock Consul: they provoke failures (errors, resets, silence, latency,
// malformed or oversized answers) here, while every request that does pass reaches the agent.
import {
  Agent,
  createServer,
  request as httpRequest,
  type ClientRequest,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http'
import type { Socket } from 'node:net'
import { gunzipSync } from 'node:zlib'

/**
 * How the proxy treats a request. It is read when a request arrives, except `blackhole`, which
 * also swallows answers that arrive from the agent while it is the current mode.
 */
export type FaultMode =
  /** Forward faithfully: method, path and query, headers, body; stream the answer back. */
  | 'pass'
  /** Answer 500 `fault proxy: injected error` without contacting the agent. */
  | 'error500'
  /** Destroy the client's socket at once, with no answer. */
  | 'close'
  /** Accept and never answer; answers from the agent to requests in flight are dropped too. */
  | 'blackhole'
  /** Wait this long, then forward. */
  | { readonly latencyMs: number }
  /** Forward faithfully, and add these headers to the agent's answer. */
  | { readonly addHeaders: Readonly<Record<string, string>> }
  /** Answer 200 application/json with this body without contacting the agent. */
  | { readonly garbage: string }
  /**
   * Forward faithfully, and answer with what `rewrite` makes of the agent's JSON answer (its
   * body parsed; the status and headers kept, the length set anew). An answer that is not JSON
   * passes unchanged. E.g. `{ rewrite: (path, json) => ... }` to make `/v1/agent/self` report
   * another version; combine with `when` to rewrite one path only.
   */
  | { readonly rewrite: (path: string, json: unknown) => unknown }
  /**
   * Answer 200 application/json with a valid JSON array of exactly this many bytes (min 2), with a
   * Content-Length, or, when `chunked`, without one (so the client only finds out by reading).
   * The bytes written before the client went away are in the request's `oversizedWritten`.
   */
  | { readonly oversized: number; readonly chunked?: boolean }
  /** Answer this status and body (text/plain), plus `headers`, without contacting the agent. */
  | {
      readonly status: number
      readonly body: string
      readonly headers?: Readonly<Record<string, string>>
    }
  /**
   * Apply `then` to the requests that match (`method`, a path starting with `pathPrefix`, and a
   * query string, without its `?`, that `query` matches: `/(^|&)index=/` picks blocking reads);
   * forward the others faithfully.
   */
  | {
      readonly when: {
        readonly method?: string
        readonly pathPrefix?: string
        readonly query?: RegExp
      }
      readonly then: FaultMode
    }
  /**
   * Wait `afterMs`, then answer as `then` says (a status, garbage, or forwarding), e.g. a blocking
   * read answered 500 a second after it was sent, as a Consul client agent whose RPC to the
   * servers hit its deadline answers it:
   * `{ afterMs: 1000, then: { status: 500, body: 'rpc error making call: i/o deadline reached' } }`.
   * Nothing reaches the agent meanwhile.
   */
  | {
      readonly afterMs: number
      readonly then:
        | 'pass'
        | { readonly latencyMs: number }
        | { readonly garbage: string }
        | {
            readonly status: number
            readonly body: string
            readonly headers?: Readonly<Record<string, string>>
          }
    }
  /**
   * Per request: with probability `error500` answer 500, else with probability `close` destroy
   * the socket, else with probability `latencyP` wait a random 0..`latencyMs`, else pass.
   */
  | {
      readonly random: {
        readonly error500?: number
        readonly close?: number
        readonly latencyMs?: number
        readonly latencyP?: number
      }
    }

/** One request as the proxy saw it, whatever the mode did with it. */
export interface SeenRequest {
  readonly method: string
  /** The path without the query string, as sent (not decoded). */
  readonly path: string
  /** The query string without its `?`; empty when there is none. */
  readonly query: string
  /** `Date.now()` when the request arrived. */
  readonly at: number
  /**
   * The agent's answer once it came, when the proxy forwarded it: its status, and its body when
   * it is short (up to 64 bytes, e.g. a CAS's `true`/`false`).
   */
  answer?: { readonly status: number; readonly body: string | undefined }
  /** The request's body as forwarded, when the proxy forwarded it and it is short (up to 4 kB). */
  sent?: string
  /**
   * For an `oversized` answer: the bytes handed to the socket so far, final once the answer
   * ended or the client went away (writes wait for the client to drain, so this is about what it
   * read plus the socket buffers).
   */
  oversizedWritten?: number
}

/**
 * Collects what passes through `stream` (beside whoever else reads it) and hands it over at its
 * end, or undefined when it was longer than `limit` bytes.
 */
function keepShort(
  stream: IncomingMessage,
  limit: number,
  done: (chunks: Buffer[] | undefined) => void,
): void {
  const chunks: Buffer[] = []
  let length = 0
  stream.on('data', (chunk: Buffer) => {
    length += chunk.length
    if (length <= limit) chunks.push(chunk)
  })
  stream.once('end', () => done(length <= limit ? chunks : undefined))
}

/** A short answer's body as text, gunzipped when the agent compressed it (Go's client asks it to). */
function shortBody(chunks: readonly Buffer[], answer: IncomingMessage): string | undefined {
  const bytes = Buffer.concat(chunks)
  if (answer.headers['content-encoding'] !== 'gzip') return bytes.toString('utf8')
  try {
    return gunzipSync(bytes).toString('utf8')
  } catch {
    return undefined
  }
}

/** A running fault proxy; see {@link startFaultProxy}. */
export interface FaultProxy {
  /** `127.0.0.1:<port>`, the form of CONSUL_HTTP_ADDR. */
  readonly addr: string
  /** `http://127.0.0.1:<port>` */
  readonly url: string
  /** Applies to the next request at once, and (for `blackhole`) to answers still in flight. */
  setMode(mode: FaultMode): void
  /** The current mode. */
  mode(): FaultMode
  /** Requests seen since start or {@link FaultProxy.resetCounts}, keyed `${METHOD} ${path}`. */
  counts(): ReadonlyMap<string, number>
  /** Every request seen since start or {@link FaultProxy.resetCounts}, oldest first. */
  requests(): readonly SeenRequest[]
  /** Forgets the counts and the request log; the connection peak restarts from those open now. */
  resetCounts(): void
  /** Client-side TCP connections open right now. */
  openConnections(): number
  /** The most client-side connections open at once since start or {@link FaultProxy.resetCounts}. */
  peakConnections(): number
  /** Client-side TCP connections accepted since start or {@link FaultProxy.resetCounts}. */
  acceptedConnections(): number
  /** Requests forwarded to the agent whose answer has not arrived yet. */
  inFlight(): number
  /** Those requests themselves, e.g. to count the long polls parked on one prefix. */
  inFlightRequests(): readonly SeenRequest[]
  /** Answers from the agent that `blackhole` swallowed, since start. */
  droppedAnswers(): number
  /**
   * Closes the listener and destroys every client and upstream socket and pending timer, so the
   * process can exit. Idempotent.
   */
  close(): Promise<void>
}

/** Options for {@link startFaultProxy}. */
export interface FaultProxyOptions {
  /** Source of randomness in [0, 1) for `random` mode; default `Math.random`. */
  readonly random?: () => number
}

// Headers that describe one connection, not the message: they must not cross the proxy.
// Transfer-Encoding stays: Node frames the body itself when it sees the header.
const hopByHop = new Set(['connection', 'keep-alive', 'proxy-connection', 'upgrade', 'te'])

function endToEnd(rawHeaders: readonly string[], host?: string): string[] {
  const out: string[] = []
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i] ?? ''
    const lower = name.toLowerCase()
    if (hopByHop.has(lower) || (host !== undefined && lower === 'host')) continue
    out.push(name, rawHeaders[i + 1] ?? '')
  }
  if (host !== undefined) out.push('Host', host)
  return out
}

/** What one request gets: the random mode resolved to a plain one. */
type Action =
  | {
      readonly kind: 'pass'
      readonly delayMs: number
      readonly addHeaders?: Readonly<Record<string, string>>
    }
  | { readonly kind: 'rewrite'; readonly rewrite: (path: string, json: unknown) => unknown }
  | { readonly kind: 'close' }
  | { readonly kind: 'blackhole' }
  | {
      readonly kind: 'answer'
      /** Wait this long before answering (`afterMs`). */
      readonly delayMs?: number
      readonly status: number
      readonly type: string
      readonly body: string
      readonly headers?: Readonly<Record<string, string>>
    }
  | { readonly kind: 'oversized'; readonly bytes: number; readonly chunked: boolean }

function actionFor(
  mode: FaultMode,
  random: () => number,
  request: { readonly method: string; readonly path: string; readonly query: string },
): Action {
  if (mode === 'pass') return { kind: 'pass', delayMs: 0 }
  if (mode === 'error500') return injected500
  if (mode === 'close') return { kind: 'close' }
  if (mode === 'blackhole') return { kind: 'blackhole' }
  if ('latencyMs' in mode) return { kind: 'pass', delayMs: mode.latencyMs }
  if ('addHeaders' in mode) return { kind: 'pass', delayMs: 0, addHeaders: mode.addHeaders }
  if ('garbage' in mode)
    return { kind: 'answer', status: 200, type: 'application/json', body: mode.garbage }
  if ('rewrite' in mode) return { kind: 'rewrite', rewrite: mode.rewrite }
  if ('oversized' in mode)
    return { kind: 'oversized', bytes: mode.oversized, chunked: mode.chunked === true }
  if ('status' in mode)
    return {
      kind: 'answer',
      status: mode.status,
      type: 'text/plain',
      body: mode.body,
      ...(mode.headers === undefined ? {} : { headers: mode.headers }),
    }
  if ('when' in mode) {
    const { method, pathPrefix, query } = mode.when
    const matches =
      (method === undefined || method === request.method) &&
      (pathPrefix === undefined || request.path.startsWith(pathPrefix)) &&
      (query === undefined || query.test(request.query))
    return matches ? actionFor(mode.then, random, request) : { kind: 'pass', delayMs: 0 }
  }
  if ('afterMs' in mode) {
    const then = actionFor(mode.then, random, request)
    if (then.kind === 'pass') return { ...then, delayMs: then.delayMs + mode.afterMs }
    if (then.kind === 'answer') return { ...then, delayMs: (then.delayMs ?? 0) + mode.afterMs }
    return then
  }
  const { error500 = 0, close = 0, latencyMs = 0, latencyP = 0 } = mode.random
  if (random() < error500) return injected500
  if (random() < close) return { kind: 'close' }
  if (random() < latencyP) return { kind: 'pass', delayMs: random() * latencyMs }
  return { kind: 'pass', delayMs: 0 }
}

const injected500: Action = {
  kind: 'answer',
  status: 500,
  type: 'text/plain',
  body: 'fault proxy: injected error',
}

/** Headers that describe a body's bytes, which a rewritten body no longer has. */
const bodyFraming = new Set(['content-length', 'content-encoding', 'transfer-encoding'])

/**
 * Answers `res` with the agent's `answer`, its JSON body passed through `rewrite` (gunzipped
 * first when the agent compressed it); a body that is not JSON is sent as it came.
 */
function rewritten(
  answer: IncomingMessage,
  res: ServerResponse,
  seenAs: SeenRequest,
  rewrite: (path: string, json: unknown) => unknown,
): void {
  const chunks: Buffer[] = []
  answer.on('data', (chunk: Buffer) => chunks.push(chunk))
  answer.once('end', () => {
    const raw = Buffer.concat(chunks)
    let body = raw
    let framing = endToEnd(answer.rawHeaders)
    try {
      const text =
        answer.headers['content-encoding'] === 'gzip'
          ? gunzipSync(raw).toString('utf8')
          : raw.toString('utf8')
      body = Buffer.from(JSON.stringify(rewrite(seenAs.path, JSON.parse(text) as unknown)), 'utf8')
      framing = framing.filter((_, i, all) => {
        const name = i % 2 === 0 ? all[i] : all[i - 1]
        return !bodyFraming.has((name ?? '').toLowerCase())
      })
    } catch {
      // Not JSON: sent as it came, with its own framing.
    }
    const status = answer.statusCode ?? 502
    seenAs.answer = { status, body: body.length <= 64 ? body.toString('utf8') : undefined }
    const changed = body !== raw
    res.writeHead(status, answer.statusMessage, [
      ...framing,
      ...(changed ? ['Content-Length', String(body.length)] : []),
    ])
    res.end(body)
  })
}

const oversizedItem = `"${'x'.repeat(1000)}"`

/**
 * Writes a JSON array of exactly `bytes` bytes (at least `[]`) in pieces, waiting for the client
 * to drain, so a multi-megabyte answer never sits in memory whole.
 */
function writeOversized(
  res: ServerResponse,
  bytes: number,
  chunked: boolean,
  seenAs: SeenRequest,
): void {
  const total = Math.max(2, Math.floor(bytes))
  res.writeHead(
    200,
    chunked
      ? { 'Content-Type': 'application/json', 'X-Consul-Index': '7' }
      : {
          'Content-Type': 'application/json',
          'Content-Length': String(total),
          'X-Consul-Index': '7',
        },
  )
  let left = total - 2 // inside the brackets
  let first = true
  seenAs.oversizedWritten = 1
  res.write('[')
  const more = (): void => {
    while (!res.destroyed) {
      const pieces: string[] = []
      let size = 0
      while (size < 64 * 1024) {
        const item = first ? oversizedItem : `,${oversizedItem}`
        if (item.length > left) break
        pieces.push(item)
        size += item.length
        left -= item.length
        first = false
      }
      if (size === 0) {
        // Whitespace is valid JSON and makes the length exact.
        res.end(`${' '.repeat(left)}]`)
        seenAs.oversizedWritten = (seenAs.oversizedWritten ?? 0) + left + 1
        return
      }
      seenAs.oversizedWritten = (seenAs.oversizedWritten ?? 0) + size
      if (!res.write(pieces.join(''))) {
        res.once('drain', more)
        return
      }
    }
  }
  more()
}

/**
 * Starts a fault proxy on 127.0.0.1 (a free port) in front of the agent at `target`
 * (`host:port`), in `pass` mode.
 *
 * Long polls pass through with no proxy-side timeout; client keep-alive works; every request is
 * counted, also those a fault answers. An agent that cannot be reached in `pass` mode gets the
 * client a 502 whose body says so.
 *
 * @example
 * ```ts
 * const proxy = await startFaultProxy(consul.addr)
 * proxy.setMode('blackhole')
 * // ... the client under test, pointed at proxy.addr, now sees silence
 * await proxy.close()
 * ```
 * @param target - `host:port` of the Consul agent's HTTP API.
 * @param options - Randomness for `random` mode.
 * @returns The running proxy.
 */
export async function startFaultProxy(
  target: string,
  options: FaultProxyOptions = {},
): Promise<FaultProxy> {
  const random = options.random ?? Math.random
  const [targetHost, targetPort] = splitHostPort(target)
  // No socket limit: a long poll holding a connection must not queue the requests behind it.
  const upstreamAgent = new Agent({ keepAlive: true, maxSockets: Infinity })
  let mode: FaultMode = 'pass'
  let counts = new Map<string, number>()
  let seen: SeenRequest[] = []
  let dropped = 0
  const clientSockets = new Set<Socket>()
  /** The client-side connections the client has not closed (see the 'connection' handler). */
  const clientOpen = new Set<Socket>()
  let peak = 0
  let accepted = 0
  const upstreamRequests = new Map<ClientRequest, SeenRequest>()
  const timers = new Set<NodeJS.Timeout>()
  let closing: Promise<void> | undefined

  const forward = (
    req: IncomingMessage,
    res: ServerResponse,
    seenAs: SeenRequest,
    addHeaders: Readonly<Record<string, string>> = {},
    rewrite?: (path: string, json: unknown) => unknown,
  ): void => {
    const upstream = httpRequest({
      agent: upstreamAgent,
      host: targetHost,
      port: targetPort,
      method: req.method,
      path: req.url,
      headers: endToEnd(req.rawHeaders, target),
    })
    upstreamRequests.set(upstream, seenAs)
    const settled = (): boolean => upstreamRequests.delete(upstream)
    // The client left (or the proxy closed): stop the agent's work for it, e.g. a long poll.
    res.once('close', () => {
      if (settled()) upstream.destroy()
    })
    upstream.once('response', (answer: IncomingMessage) => {
      settled()
      answer.on('error', () => res.destroy())
      // A client gone mid-answer: free the upstream socket rather than leave it paused.
      res.once('close', () => {
        if (!answer.complete) answer.destroy()
      })
      if (mode === 'blackhole') {
        dropped++
        answer.resume()
        return
      }
      if (rewrite !== undefined) {
        rewritten(answer, res, seenAs, rewrite)
        return
      }
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, [
        ...endToEnd(answer.rawHeaders),
        ...Object.entries(addHeaders).flat(),
      ])
      const status = answer.statusCode ?? 502
      keepShort(answer, 64, (chunks) => {
        seenAs.answer = { status, body: chunks && shortBody(chunks, answer) }
      })
      answer.pipe(res)
    })
    upstream.on('error', (error: Error) => {
      if (!settled() || closing || res.destroyed) return
      if (mode === 'blackhole') {
        dropped++
        return
      }
      if (res.headersSent) {
        res.destroy()
        return
      }
      respond(res, {
        kind: 'answer',
        status: 502,
        type: 'text/plain',
        body: `fault proxy: upstream ${target} failed: ${error.message}`,
      })
    })
    keepShort(req, 4096, (chunks) => {
      if (chunks) seenAs.sent = Buffer.concat(chunks).toString('utf8')
    })
    req.pipe(upstream)
  }

  const respond = (res: ServerResponse, action: Action & { kind: 'answer' }): void => {
    res.writeHead(action.status, {
      ...action.headers,
      'Content-Type': action.type,
      'Content-Length': String(Buffer.byteLength(action.body)),
    })
    res.end(action.body)
  }

  const server = createServer(
    // Long polls and blackholed requests may legitimately last minutes.
    { requestTimeout: 0, keepAlive: true },
    (req, res) => {
      req.on('error', () => {})
      res.on('error', () => {})
      const url = req.url ?? '/'
      const q = url.indexOf('?')
      const path = q < 0 ? url : url.slice(0, q)
      const method = req.method ?? 'GET'
      const key = `${method} ${path}`
      counts.set(key, (counts.get(key) ?? 0) + 1)
      const seenAs: SeenRequest = {
        method,
        path,
        query: q < 0 ? '' : url.slice(q + 1),
        at: Date.now(),
      }
      seen.push(seenAs)

      const action = actionFor(mode, random, { method, path, query: seenAs.query })
      switch (action.kind) {
        case 'close':
          req.socket.destroy()
          return
        case 'blackhole':
          // Read the body so the client is not stuck sending it; then say nothing.
          req.resume()
          return
        case 'answer':
          req.resume()
          if (action.delayMs === undefined || action.delayMs <= 0) {
            respond(res, action)
            return
          }
          {
            const timer = setTimeout(() => {
              timers.delete(timer)
              if (!res.destroyed) respond(res, action)
            }, action.delayMs)
            timers.add(timer)
            res.once('close', () => {
              clearTimeout(timer)
              timers.delete(timer)
            })
          }
          return
        case 'rewrite':
          forward(req, res, seenAs, {}, action.rewrite)
          return
        case 'oversized':
          req.resume()
          writeOversized(res, action.bytes, action.chunked, seenAs)
          return
        case 'pass':
          if (action.delayMs <= 0) {
            forward(req, res, seenAs, action.addHeaders)
            return
          }
          {
            const timer = setTimeout(() => {
              timers.delete(timer)
              if (!res.destroyed) forward(req, res, seenAs)
            }, action.delayMs)
            timers.add(timer)
            res.once('close', () => {
              clearTimeout(timer)
              timers.delete(timer)
            })
          }
      }
    },
  )
  server.on('connection', (socket: Socket) => {
    clientSockets.add(socket)
    accepted++
    // The peak counts the connections the client has not closed: one whose end (the client's
    // FIN) was read is the client's no longer, though the proxy's side closes a moment later.
    clientOpen.add(socket)
    peak = Math.max(peak, clientOpen.size)
    const closedByClient = (): void => void clientOpen.delete(socket)
    socket.on('error', closedByClient)
    socket.once('end', closedByClient)
    socket.once('close', () => {
      closedByClient()
      clientSockets.delete(socket)
    })
  })
  server.on('error', () => {})

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject)
      resolve()
    })
  })
  const address = server.address()
  if (address === null || typeof address === 'string') throw new Error('fault proxy: no port')
  const addr = `127.0.0.1:${address.port}`

  return {
    addr,
    url: `http://${addr}`,
    setMode(next) {
      mode = next
    },
    mode: () => mode,
    counts: () => new Map(counts),
    requests: () => [...seen],
    resetCounts() {
      counts = new Map()
      seen = []
      peak = clientOpen.size
      accepted = 0
    },
    openConnections: () => clientSockets.size,
    peakConnections: () => peak,
    acceptedConnections: () => accepted,
    inFlight: () => upstreamRequests.size,
    inFlightRequests: () => [...upstreamRequests.values()],
    droppedAnswers: () => dropped,
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve())
        for (const timer of timers) clearTimeout(timer)
        timers.clear()
        for (const upstream of upstreamRequests.keys()) upstream.destroy()
        upstreamRequests.clear()
        for (const socket of clientSockets) socket.destroy()
        upstreamAgent.destroy()
      })
      return closing
    },
  }
}

function splitHostPort(target: string): [host: string, port: number] {
  const colon = target.lastIndexOf(':')
  if (colon < 0) return [target, 80]
  // '[::1]:8500' names an IPv6 host; http.request wants it without brackets.
  return [target.slice(0, colon).replace(/^\[(.*)\]$/, '$1'), Number(target.slice(colon + 1))]
}
