/**
 * The HTTP transport of the Consul layer, on undici: one bounded connection pool per client,
 * a timeout and an AbortSignal on every request, bodies always read (up to the client's
 * `maxResponseBytes`, past which reading stops and the connection is dropped), and every failure
 * turned into a typed ConsulError with the ACL token redacted. Nothing here throws or rejects.
 */
import type { IncomingHttpHeaders } from 'node:http'
import * as E from 'fp-ts/lib/Either.js'
import type * as TE from 'fp-ts/lib/TaskEither.js'
import type { Dispatcher } from 'undici'
import type { NetworkHealth } from './client-api.js'
import type { Consistency, ResolvedConfig } from './config.js'
import { namesAclProblem, type ConsulError } from './errors.js'
import { isForeignStatus, isHtmlPage, notConsul } from './not-consul.js'
import { parseRetryAfter } from './retry-after.js'
import { requestFeed, type RequestFeed } from './request-feed.js'
import { undiciPool } from './undici-pool.cjs'

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
  /** `GET /v1/kv/p?recurse`: for messages (the query never carries the token). */
  readonly label: string
  /** Where the answer came from, for messages: `http://127.0.0.1:8500` or `unix:///path`. */
  readonly origin: string
  /** Wall-clock ms the answer's headers arrived (for an HTTP-date `Retry-After`); default now. */
  readonly receivedAt?: number
}

export interface Transport {
  readonly config: ResolvedConfig
  /** Sends `request` and interprets the answer; every failure is a redacted ConsulError. */
  call<A>(
    request: HttpRequest,
    interpret: (answer: HttpAnswer) => E.Either<ConsulError, A>,
  ): TE.TaskEither<ConsulError, A>
  /** Aborts in-flight requests (they fail with Aborted) and closes the connections. */
  close(): Promise<void>
  /** What this client has seen of its connection to the agent (see NetworkHealth). */
  readonly network: NetworkHealth
  /** Every request's kind and outcome, for the telemetry (see request-feed.ts). */
  readonly requests: RequestFeed
}

/**
 * The answer of a call that is never sent because its request could not be made (a key that is
 * no path, an empty session id, an empty transaction): `error`, at once. fp-ts's `TE.left`,
 * without loading its TaskEither module and the fourteen it loads besides Either (bench step
 * `import`).
 */
export function unsent<A = never>(error: ConsulError): TE.TaskEither<ConsulError, A> {
  return () => Promise.resolve(E.left(error))
}

/**
 * The ConsulError for a status the caller did not expect (403, 429/5xx, other 4xx; and 404 or
 * 501, which no Consul agent answers to this client's requests: NotConsul).
 */
export function statusError(answer: HttpAnswer): ConsulError {
  const { status, label } = answer
  const body = answer.body.trim().slice(0, 500)
  const request = label.replace(/\?.*$/, '')
  const said = `${status}${body === '' ? '' : `: ${body}`}`
  if (isForeignStatus(status)) {
    return notConsul(answer, `it answered ${status} to ${request}, which every Consul agent serves`)
  }
  if (status === 403) {
    return {
      _tag: 'PermissionDenied',
      status,
      body,
      request,
      message: /ACL not found/i.test(body)
        ? `${label}: permission denied (${said}); Consul does not know the ACL token: it was probably deleted, or never created. Give the client a token that exists (CONSUL_HTTP_TOKEN, CONSUL_HTTP_TOKEN_FILE or the token option)`
        : `${label}: permission denied (${said}); the ACL token (CONSUL_HTTP_TOKEN) has no policy that allows this`,
    }
  }
  if (status === 429 || status >= 500) {
    const retryAfterMs = parseRetryAfter(
      answer.headers['retry-after'],
      answer.receivedAt ?? Date.now(),
    )
    const throttled = status === 429 || status === 503
    const advice = throttled
      ? `Consul asks the client to slow down (its request rate limits)${retryAfterMs === undefined ? '' : `, retry after ${Math.round(retryAfterMs / 1000)} s`}; the library's retries wait for it. If it lasts, lower the request rate or raise the limits (limits.request_limits, limits.rpc_rate)`
      : namesAclProblem(body)
        ? 'Consul does not accept the ACL token; if this keeps coming back, the token (CONSUL_HTTP_TOKEN, CONSUL_HTTP_TOKEN_FILE or the token option) was probably deleted on the servers: give the client one that exists'
        : 'retry later'
    return {
      _tag: 'ServerError',
      status,
      body,
      request,
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      message: `${label}: the Consul server failed (${said}); ${advice}`,
    }
  }
  return {
    _tag: 'BadRequest',
    status,
    body,
    request,
    message: `${label}: Consul refused the request (${said})`,
  }
}

interface CauseSummary {
  readonly name: string
  readonly code: string | undefined
  readonly message: string
}

function summarise(error: unknown): CauseSummary {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code
    return {
      name: error.name,
      code: typeof code === 'string' ? code : undefined,
      message: error.message,
    }
  }
  return { name: typeof error, code: undefined, message: String(error) }
}

/** Node's codes for a server certificate that failed verification: configuration, not weather. */
const TLS_VERIFY_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'CERT_SIGNATURE_FAILURE',
  'CERT_UNTRUSTED',
  'CERT_REJECTED',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'ERR_TLS_CERT_ALTNAME_INVALID',
])

/**
 * Whether a TLS handshake failed because the other end does not speak TLS: OpenSSL's "wrong
 * version number" is what a plain-HTTP answer to a ClientHello looks like.
 */
function speaksNoTls(cause: CauseSummary): boolean {
  return (
    cause.code === 'ERR_SSL_WRONG_VERSION_NUMBER' ||
    ((cause.code === 'EPROTO' || cause.code === undefined) &&
      /wrong version number/i.test(cause.message))
  )
}

const TIMEOUT_CODES = new Set([
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'ETIMEDOUT',
])

function replaceAll(text: string, secrets: readonly string[]): string {
  return secrets.reduce((acc, secret) => acc.split(secret).join('<redacted>'), text)
}

/** A copy of `error` with every occurrence of a secret replaced, in every string it carries. */
function redact(error: ConsulError, secrets: readonly string[]): ConsulError {
  if (secrets.length === 0) return error
  const clean = (value: unknown): unknown =>
    typeof value === 'string'
      ? replaceAll(value, secrets)
      : Array.isArray(value)
        ? value.map(clean)
        : value !== null && typeof value === 'object'
          ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, clean(v)]))
          : value
  return clean(error) as ConsulError
}

/** The body as UTF-8, or undefined once it passed `limit` bytes (then it is destroyed unread). */
async function readCapped(
  body: Dispatcher.ResponseData['body'],
  limit: number,
): Promise<string | undefined> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > limit) {
      // Stop here: undici closes the connection rather than read the rest into nowhere.
      body.destroy()
      return undefined
    }
    chunks.push(chunk)
  }
  return Buffer.concat(chunks, size).toString('utf8')
}

function mebibytes(bytes: number): string {
  const mib = bytes / (1024 * 1024)
  return mib >= 1 ? `${Number.isInteger(mib) ? mib : mib.toFixed(1)} MiB` : `${bytes} bytes`
}

function queryString(query: HttpRequest['query']): string {
  const parts = Object.entries(query ?? {}).flatMap(([name, value]) =>
    value === undefined ? [] : [value === true ? name : `${name}=${encodeURIComponent(value)}`],
  )
  return parts.length === 0 ? '' : `?${parts.join('&')}`
}

/** The transport for one client: one undici Pool, bounded, kept alive. */
export function createTransport(config: ResolvedConfig): Transport {
  const { Pool, request: poolRequest } = undiciPool()
  const pool = new Pool(config.origin, {
    connections: config.connections,
    // Reuse connections between polls; a blocking query holds its own for up to its wait.
    keepAliveTimeout: 10_000,
    keepAliveMaxTimeout: 60_000,
    ...(config.socketPath === undefined ? {} : { socketPath: config.socketPath }),
    ...(config.tls === undefined ? {} : { connect: config.tls }),
  })
  const secrets = [
    config.token,
    config.basicAuth && config.basicAuth.password !== '' ? config.basicAuth.password : undefined,
  ].filter((s): s is string => s !== undefined && s !== '')
  const headers: Record<string, string> = {}
  if (config.token !== undefined) headers['X-Consul-Token'] = config.token
  if (config.basicAuth !== undefined) {
    const { user, password } = config.basicAuth
    headers['Authorization'] = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`
  }
  const requests = requestFeed()
  const where = config.socketPath === undefined ? config.origin : `unix://${config.socketPath}`
  const inFlight = new Set<AbortController>()
  const gate = connectionGate(config.connections)
  let closing: Promise<void> | undefined
  let failures = 0
  let answers = 0
  let recoveredFrom = 0
  const recoveryListeners = new Set<() => void>()
  const network: NetworkHealth = {
    failures: () => failures,
    answers: () => answers,
    onRecovered: (listener) => {
      recoveryListeners.add(listener)
      return () => recoveryListeners.delete(listener)
    },
  }
  /** Counts network failures, and tells the listeners when an answer follows some. */
  const noteOutcome = (answer: E.Either<ConsulError, HttpAnswer>): void => {
    if (E.isLeft(answer)) {
      if (answer.left._tag === 'Timeout' || answer.left._tag === 'Unreachable') failures++
      return
    }
    answers++
    if (failures > recoveredFrom) {
      recoveredFrom = failures
      for (const listener of [...recoveryListeners]) listener()
    }
  }

  const send = async (request: HttpRequest): Promise<E.Either<ConsulError, HttpAnswer>> => {
    const query = queryString({
      ...request.query,
      dc: config.datacenter,
      ns: config.namespace,
      ...(request.method === 'GET' && request.consistency === 'consistent'
        ? { consistent: true as const }
        : {}),
      ...(request.method === 'GET' && request.consistency === 'stale'
        ? { stale: true as const }
        : {}),
    })
    const label = `${request.method} ${request.path}${query}`
    const bare = `${request.method} ${request.path}`
    const timeoutMs = request.timeoutMs ?? config.requestTimeoutMs
    /** Why a call ends unsent, if it does: the client closed, or the caller gave up. */
    const unsentBecause = (): string | undefined =>
      closing !== undefined
        ? 'the client is closed'
        : request.signal?.aborted === true
          ? 'aborted by the caller'
          : undefined
    const stopped = unsentBecause()
    if (stopped !== undefined) {
      return E.left({ _tag: 'Aborted', request: bare, message: `${label}: ${stopped}` })
    }
    // The request timeout measures the agent's answer, not this client's own queue: a request
    // waits here, without a timer, while every connection is busy (a burst of thousands of
    // contenders' writes, long polls), and is given to undici only when one is free. Timed from
    // the call instead, the last of a burst would time out unsent and be sent again, which makes
    // the queue longer still: 10,000 contenders on one prefix would never all get their keys in.
    // Long polls never hold the last connection: a client watching as many prefixes as it has
    // connections would otherwise hold its renewals back until a poll returns, past a lease.
    const poll = request.query?.['index'] !== undefined
    const admitted = await gate.admit(request.signal, request.urgent === true, poll)
    const stoppedWhileWaiting = unsentBecause()
    if (stoppedWhileWaiting !== undefined) {
      if (admitted) gate.leave(poll)
      return E.left({ _tag: 'Aborted', request: bare, message: `${label}: ${stoppedWhileWaiting}` })
    }
    const controller = new AbortController()
    let why: 'caller' | 'timeout' | 'closed' | undefined
    const onCallerAbort = (): void => {
      why ??= 'caller'
      controller.abort()
    }
    request.signal?.addEventListener('abort', onCallerAbort, { once: true })
    const timer = setTimeout(() => {
      why ??= 'timeout'
      controller.abort()
    }, timeoutMs)
    inFlight.add(controller)
    try {
      const response = await poolRequest.call(pool, {
        method: request.method,
        path: `${request.path}${query}`,
        headers:
          request.body === undefined
            ? headers
            : { ...headers, 'Content-Type': request.contentType ?? 'application/octet-stream' },
        body: request.body,
        signal: controller.signal,
        // Backstops only: the timer above fires first and is reported as Timeout.
        headersTimeout: timeoutMs + 1000,
        bodyTimeout: timeoutMs + 1000,
      })
      const receivedAt = Date.now()
      // Always read the body, also for errors: an unread body keeps its connection busy. But
      // never more than the cap: a declared length past it is refused before reading anything.
      const limit = config.maxResponseBytes
      const declared = Number(response.headers['content-length'] ?? Number.NaN)
      const body = declared > limit ? undefined : await readCapped(response.body, limit)
      if (body === undefined) {
        if (!response.body.destroyed) response.body.destroy()
        return E.left({
          _tag: 'TooLarge',
          limitBytes: limit,
          request: bare,
          message:
            `${bare}: the answer (status ${response.statusCode}) is larger than ${limit} bytes ` +
            `(${mebibytes(limit)}, the client option maxResponseBytes); the client stopped ` +
            `reading it. If the data under that path really is this large, raise ` +
            `maxResponseBytes; otherwise look at what wrote so much there ` +
            `(consul kv get -recurse -keys <prefix>)`,
        })
      }
      return E.right({
        status: response.statusCode,
        headers: response.headers,
        body,
        label,
        origin: where,
        receivedAt,
      })
    } catch (error) {
      const cause = summarise(error)
      if (why === 'timeout' || (cause.code !== undefined && TIMEOUT_CODES.has(cause.code))) {
        return E.left({
          _tag: 'Timeout',
          timeoutMs,
          request: bare,
          message: `${label}: no answer from ${where} within ${timeoutMs} ms`,
        })
      }
      if (
        // Aborted by close() (which sets no reason of its own), by the caller, or by undici.
        controller.signal.aborted ||
        cause.code === 'UND_ERR_ABORTED' ||
        cause.code === 'UND_ERR_DESTROYED' ||
        cause.code === 'UND_ERR_CLOSED'
      ) {
        return E.left({
          _tag: 'Aborted',
          request: bare,
          message: `${label}: ${why === 'caller' ? 'aborted by the caller' : 'the client is closed'}`,
        })
      }
      if (cause.code !== undefined && TLS_VERIFY_CODES.has(cause.code)) {
        return E.left({
          _tag: 'TlsRejected',
          request: bare,
          cause,
          message: `${label}: the TLS certificate of the Consul agent at ${where} was refused (${cause.code}: ${cause.message}); check CONSUL_CACERT (the CA that signed the agent's certificate) and CONSUL_TLS_SERVER_NAME, or set CONSUL_HTTP_SSL_VERIFY=false to skip verification (unsafe)`,
        })
      }
      if (config.origin.startsWith('https:') && speaksNoTls(cause)) {
        const plain = config.origin.replace(/^https:/, 'http:')
        return E.left({
          _tag: 'Unreachable',
          request: bare,
          cause,
          message: `${label}: the agent at ${where} answered without TLS (plain HTTP, most likely), but the client asked for https (an https:// address, or CONSUL_HTTP_SSL=true); use ${plain} (or CONSUL_HTTP_SSL=false), or enable TLS on the agent (its ports.https and tls settings)`,
        })
      }
      return E.left({
        _tag: 'Unreachable',
        request: bare,
        cause,
        message: `${label}: cannot reach the Consul agent at ${where} (${cause.code ?? cause.name}: ${cause.message}); check CONSUL_HTTP_ADDR and that the agent runs`,
      })
    } finally {
      clearTimeout(timer)
      inFlight.delete(controller)
      request.signal?.removeEventListener('abort', onCallerAbort)
      gate.leave(poll)
    }
  }

  return {
    config,
    network,
    requests,
    call: (request, interpret) => async () => {
      try {
        const answer = await send(request)
        noteOutcome(answer)
        const result = E.isLeft(answer)
          ? answer
          : isHtmlPage(answer.right)
            ? E.left(notConsul(answer.right, 'it answered with an HTML page'))
            : interpret(answer.right)
        requests.publish(request, E.isLeft(result) ? result.left._tag : undefined)
        return E.isLeft(result) ? E.left(redact(result.left, secrets)) : result
      } catch (error) {
        // Only a bug in an interpreter gets here; it is still a value, never a rejection.
        const cause = summarise(error)
        return E.left(
          redact(
            {
              _tag: 'DecodeError',
              request: `${request.method} ${request.path}`,
              errors: [cause.message],
              message: `${request.method} ${request.path}: could not interpret the answer (${cause.message})`,
            },
            secrets,
          ),
        )
      }
    },
    close: () => {
      closing ??= (async () => {
        for (const controller of inFlight) controller.abort()
        gate.admitAll()
        await pool.destroy()
      })()
      return closing
    },
  }
}

/** Admission of requests to a pool of `size` connections (see `createTransport`'s `send`). */
interface ConnectionGate {
  /**
   * Resolves true once the request may be sent, or false if `signal` aborted it first. A long
   * poll (`poll`) waits while long polls hold all but one of the connections, so that a renewal,
   * a write or a read always has one; an urgent request goes ahead of the others waiting.
   */
  admit(signal: AbortSignal | undefined, urgent: boolean, poll: boolean): Promise<boolean>
  /** A request admitted is done: the ones waiting that now fit go, in order. */
  leave(poll: boolean): void
  /** Lets every request waiting go (the client is closing: they see it and end). */
  admitAll(): void
}

function connectionGate(size: number): ConnectionGate {
  // With one connection there is none to keep: a long poll may take it.
  const mostPolls = Math.max(1, size - 1)
  let out = 0
  let polls = 0
  /** Waiting calls in the order they go: urgent ones first (`urgent` of them), each in turn. */
  const waiting: { readonly poll: boolean; readonly go: () => void }[] = []
  let urgent = 0
  const fits = (poll: boolean): boolean => out < size && (!poll || polls < mostPolls)
  const take = (poll: boolean): void => {
    out++
    if (poll) polls++
  }
  const remove = (at: number): void => {
    waiting.splice(at, 1)
    if (at < urgent) urgent--
  }
  const admitted = Promise.resolve(true)
  return {
    admit: (signal, isUrgent, poll) => {
      // Whoever waits cannot use a free connection (every leave lets in all that fit), so a
      // call that fits may take it.
      if (fits(poll)) {
        take(poll)
        return admitted
      }
      return new Promise<boolean>((resolve) => {
        const waiter = {
          poll,
          go: (): void => {
            signal?.removeEventListener('abort', onAbort)
            resolve(true)
          },
        }
        const onAbort = (): void => {
          const at = waiting.indexOf(waiter)
          if (at < 0) return
          remove(at)
          resolve(false)
        }
        signal?.addEventListener('abort', onAbort, { once: true })
        if (isUrgent) waiting.splice(urgent++, 0, waiter)
        else waiting.push(waiter)
      })
    },
    leave: (poll) => {
      out--
      if (poll) polls--
      for (let at = 0; at < waiting.length && out < size;) {
        const waiter = waiting[at] as (typeof waiting)[number]
        if (!fits(waiter.poll)) {
          at++
          continue
        }
        remove(at)
        take(waiter.poll)
        waiter.go()
      }
    },
    admitAll: () => {
      for (const waiter of waiting.splice(0)) {
        take(waiter.poll)
        waiter.go()
      }
      urgent = 0
    },
  }
}
