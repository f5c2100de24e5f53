/**
 * The transport's HTTP/1.1 connections to one agent: requests written on kept-alive sockets
 * (`net`, or `tls` for an agent spoken to over TLS, or the agent's unix socket), answers read by
 * `http-response-parser.ts`. What a client of one Consul agent needs and no more: one request at
 * a time on a connection, the connection used last taken first, idle ones closed after a while
 * and never keeping the process alive.
 *
 * ```
 * send(request) ─► an idle connection (the last freed) or a new one ─► write the request
 *                      ▲                                                      │
 *                      └── freed: kept alive, whole answer read ◄── answer ◄──┘ (else destroyed)
 * ```
 *
 * Node's own client does the same with more: each request through it costs several times the CPU
 * of the write and the read (bench step `import`, and docs/design.md, "The HTTP transport").
 * The connection gate (`http-connection-gate.ts`) admits at most the client's `connections`
 * requests at once, so this pool never queues: a request finds an idle connection or opens one.
 */
import { channel } from 'node:diagnostics_channel'
import type { Socket } from 'node:net'
import { ResponseParser, type ResponseHead } from './http-response-parser.js'

/** What a request got back: its answer, or only the status of one larger than the cap. */
export type Received =
  | {
      readonly type: 'answer'
      readonly statusCode: number
      readonly headers: ResponseHead['headers']
      /** The body as the pieces it arrived in. */
      readonly chunks: readonly Buffer[]
      /** Wall-clock ms the head arrived. */
      readonly receivedAt: number
    }
  | { readonly type: 'too-large'; readonly statusCode: number }

/** How the caller stops a request: it calls the listener once the request must stop. */
export type OnStop = (listener: () => void) => void

/** One request, but its body. */
export interface WireRequest {
  readonly method: string
  /** Path and query, as they go on the request line. */
  readonly path: string
  /**
   * The header lines after Host, each ending in CRLF (`headerLines` makes them): the same few for
   * every request of a client, so they are checked and joined once.
   */
  readonly headerLines: string
  /**
   * A long poll (a blocking query): it holds its connection until the agent has news. When it
   * takes the last idle one, another is opened beside it, so that the write that the news calls
   * for (a release, a CAS) does not wait for a connection to be made.
   */
  readonly poll?: boolean
}

export interface WireOptions {
  /** Opens a new connection to the agent (it may still be connecting when written to). */
  readonly connect: () => Socket
  /** The Host header's value. */
  readonly host: string
  /** How long an idle connection is kept for the next request. */
  readonly idleMs: number
  /** The most connections a spare is opened within (the client's `connections`). */
  readonly connections: number
}

export interface Wire {
  /**
   * Sends `request` with `body` (null: none) and reads the answer, up to `limit` bytes of body:
   * declared larger in its Content-Length, or found so while reading, it is `too-large` and the
   * connection is dropped. `onStop` stops the request (stopped at once, it is not sent); the
   * promise then rejects, as it rejects with the socket's or the parser's error for a request
   * that came to no answer.
   */
  send(
    request: WireRequest,
    body: string | Uint8Array | null,
    onStop: OnStop,
    limit: number,
  ): Promise<Received>
  /** Closes every connection, idle or busy (a busy request then fails). */
  destroy(): void
}

/** Anything but the visible characters of US-ASCII, which a request line's path is made of. */
const UNSENDABLE_PATH = /[^\x21-\x7e]/

/** The reason a request is destroyed with once its admission stopped it. */
class Stopped extends Error {
  override readonly name = 'Stopped'
  constructor() {
    super('the request was stopped (its timeout, its caller or the client closing)')
  }
}

/**
 * Diagnostics channels of every request the library's clients sent (`node:diagnostics_channel`,
 * docs/observability.md): `rx-consul-semaphore:http.request.finish` with `{ request: { method,
 * path }, response: { statusCode } }` once its answer was read whole or found too large, and
 * `rx-consul-semaphore:http.request.error` with `{ request, error }` for one that came to none.
 * Published only while something subscribes.
 */
const finished = channel('rx-consul-semaphore:http.request.finish')
const failed = channel('rx-consul-semaphore:http.request.error')

/**
 * Milliseconds on the monotonic clock. Not `performance.now()`: Node's `performance` global loads
 * perf_hooks and its timing modules on first use, a fixed cost (about a millisecond) that a
 * short-lived `rxsem run` would pay for two idle-connection timestamps.
 */
const monotonicMs = (): number => Number(process.hrtime.bigint()) / 1e6

/** `headers` as request header lines, each ending in CRLF; throws on a name or value that cannot go. */
export function headerLines(headers: Readonly<Record<string, string>>): string {
  let lines = ''
  for (const [name, value] of Object.entries(headers)) {
    if (!/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(name)) {
      throw Object.assign(new TypeError(`Header name must be a valid HTTP token ["${name}"]`), {
        code: 'ERR_INVALID_HTTP_TOKEN',
      })
    }

    if (/[^\t\x20-\x7e\x80-\xff]/.test(value)) {
      throw Object.assign(new TypeError(`Invalid character in header content ["${name}"]`), {
        code: 'ERR_INVALID_CHAR',
      })
    }
    lines += `${name}: ${value}\r\n`
  }
  return lines
}

/** What the diagnostics channels tell of a request. */
const named = (request: WireRequest): { readonly method: string; readonly path: string } => ({
  method: request.method,
  path: request.path,
})

/** A connection and what it is doing. */
interface Connection {
  readonly socket: Socket
  /** The exchange on it, or undefined while it is idle. */
  exchange: Exchange | undefined
  /** When it went idle (ms, the monotonic clock: `monotonicMs`). */
  idleSince: number
}

/** One request's reading of its answer on a connection. */
interface Exchange {
  /** Bytes read from the connection. */
  feed(bytes: Buffer): void
  /** The connection ended (`error`: how it failed, if it did). */
  gone(error: Error | undefined): void
}

/**
 * The wire of one client.
 *
 * @example
 * const wire = createWire({
 *   connect: () => net.connect(8500, '127.0.0.1'),
 *   host: '127.0.0.1:8500',
 *   idleMs: 10_000,
 *   connections: 16,
 * })
 * const received = await wire.send({ method: 'GET', path: '/v1/status/leader', headerLines: '' }, null, () => {}, 2 ** 20)
 */
export function createWire(options: WireOptions): Wire {
  const { connect, host, idleMs, connections } = options
  /** Idle connections, the one freed last at the end. */
  const idle: Connection[] = []
  const all = new Set<Connection>()
  let sweep: NodeJS.Timeout | undefined
  let destroyed = false

  /** Closes the connections idle for `idleMs`; runs while some are idle. */
  const sweepIdle = (): void => {
    sweep = undefined
    const now = monotonicMs()
    while (idle.length > 0 && now - (idle[0] as Connection).idleSince >= idleMs) {
      ;(idle.shift() as Connection).socket.destroy()
    }
    armSweep()
  }
  const armSweep = (): void => {
    if (sweep !== undefined || idle.length === 0) return
    const oldest = idle[0] as Connection
    sweep = setTimeout(sweepIdle, Math.max(1, oldest.idleSince + idleMs - monotonicMs()))
    sweep.unref()
  }

  const open = (): Connection => {
    const socket = connect()
    socket.setNoDelay(true)
    socket.setKeepAlive(true, 1000)
    const connection: Connection = { socket, exchange: undefined, idleSince: 0 }
    all.add(connection)
    const gone = (error: Error | undefined): void => {
      all.delete(connection)
      const at = idle.indexOf(connection)
      if (at >= 0) idle.splice(at, 1)
      const exchange = connection.exchange
      connection.exchange = undefined
      exchange?.gone(error)
    }
    socket.on('data', (bytes: Buffer) => {
      const exchange = connection.exchange
      // Bytes on an idle connection answer nothing that was asked: it cannot be trusted.
      if (exchange === undefined) socket.destroy()
      else exchange.feed(bytes)
    })
    socket.on('end', () => gone(undefined))
    socket.on('close', () => gone(undefined))
    socket.on('error', (error) => gone(error))
    return connection
  }

  const free = (connection: Connection): void => {
    connection.exchange = undefined
    if (destroyed) {
      connection.socket.destroy()
      return
    }
    connection.idleSince = monotonicMs()
    // An idle connection keeps no process alive (Node's client does the same).
    connection.socket.unref()
    idle.push(connection)
    armSweep()
  }

  /** An idle connection, the one freed last; else a new one. */
  const take = (): Connection => {
    let connection = idle.pop()
    // One the agent closed, whose end is not read yet, goes the way of the others.
    while (connection !== undefined && connection.socket.destroyed) connection = idle.pop()
    return connection ?? open()
  }

  const send: Wire['send'] = (request, body, onStop, limit) =>
    new Promise((resolve, reject) => {
      let stopped = false
      let whenStopped = (): void => {
        stopped = true
      }
      onStop(() => whenStopped())
      if (stopped || destroyed) {
        reject(new Stopped())
        return
      }
      // The request line ends at the first space or line break: a path must have neither.
      if (UNSENDABLE_PATH.test(request.path)) {
        reject(
          Object.assign(new TypeError('Request path contains unescaped characters'), {
            code: 'ERR_UNESCAPED_CHARACTERS',
          }),
        )
        return
      }
      const connection = take()
      const { socket } = connection
      socket.ref()
      // A spare for the write a long poll's answer calls for (see WireRequest.poll).
      if (request.poll === true && idle.length === 0 && all.size < connections) free(open())
      let settled = false
      const settle = (outcome: Received | Error): void => {
        if (settled) return
        settled = true
        // The request as method and path only: its header lines carry the ACL token.
        if (outcome instanceof Error) {
          if (failed.hasSubscribers) failed.publish({ request: named(request), error: outcome })
          reject(outcome)
        } else {
          if (finished.hasSubscribers) {
            finished.publish({
              request: named(request),
              response: { statusCode: outcome.statusCode },
            })
          }
          resolve(outcome)
        }
      }
      /** Ends the exchange with `outcome`, and the connection with it, if it is still on it. */
      const drop = (outcome: Received | Error): void => {
        if (connection.exchange === exchange) {
          connection.exchange = undefined
          socket.destroy()
        }
        settle(outcome)
      }
      const chunks: Buffer[] = []
      let size = 0
      let statusCode = 0
      let headers: ResponseHead['headers'] = {}
      let receivedAt = 0
      const parser = new ResponseParser(request.method, {
        head: (head) => {
          statusCode = head.statusCode
          headers = head.headers
          receivedAt = Date.now()
          if (head.length !== undefined && head.length > limit) {
            drop({ type: 'too-large', statusCode })
          }
        },
        body: (piece) => {
          if (settled) return
          size += piece.length
          if (size > limit) drop({ type: 'too-large', statusCode })
          else chunks.push(piece)
        },
        end: () => settle({ type: 'answer', statusCode, headers, chunks, receivedAt }),
      })
      const exchange: Exchange = {
        feed: (bytes) => {
          try {
            parser.feed(bytes)
          } catch (error) {
            drop(error as Error)
            return
          }
          if (!parser.done || connection.exchange !== exchange) return
          // Read whole: the connection goes back for the next request, if it can carry one.
          if (parser.reusable) free(connection)
          else drop(new Error('the answer was read whole'))
        },
        gone: (error) => {
          if (settled) return
          // A connection that failed cuts the answer, even one read until the connection's end.
          if (error !== undefined) {
            settle(error)
            return
          }
          try {
            parser.close()
          } catch (closed) {
            settle(closed as Error)
          }
        },
      }
      connection.exchange = exchange
      whenStopped = () => {
        if (!settled) drop(new Stopped())
      }
      const length =
        body === null ? 0 : typeof body === 'string' ? Buffer.byteLength(body) : body.length
      // A request with a body, or of a method that may have one, says its length (0: none).
      const framing =
        body !== null || request.method !== 'GET' ? `Content-Length: ${length}\r\n` : ''
      const head = `${request.method} ${request.path} HTTP/1.1\r\nHost: ${host}\r\n${request.headerLines}${framing}\r\n`
      if (body === null || length === 0) {
        socket.write(head, 'latin1')
      } else {
        // One write of both (writev), not two packets.
        socket.cork()
        socket.write(head, 'latin1')
        socket.write(body)
        socket.uncork()
      }
    })

  return {
    send,
    destroy: () => {
      destroyed = true
      if (sweep !== undefined) clearTimeout(sweep)
      sweep = undefined
      idle.length = 0
      for (const connection of [...all]) connection.socket.destroy()
    },
  }
}
