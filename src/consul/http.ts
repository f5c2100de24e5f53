/**
 * The HTTP transport of the Consul layer: kept-alive HTTP/1.1 connections to the agent, bounded,
 * a timeout on every request and its caller's AbortSignal, bodies always read (up to the client's
 * `maxResponseBytes`), and every failure turned into a typed ConsulError with the client's secrets
 * redacted. Nothing here throws or rejects.
 *
 * It composes its parts: the request and answer types (`http-request.ts`), the admission of
 * requests to the connections and their timeouts (`http-connection-gate.ts`), the connections,
 * the sending of a request and the capped reading of its answer (`http-wire.ts`, with
 * `http-response-parser.ts`), the body's text (`http-read-body.ts`), the meaning of error codes
 * (`http-causes.ts`), the errors with their advice (`http-errors.ts`) and the
 * redaction (`http-redact.ts`).
 */
import * as E from 'fp-ts/lib/Either.js'
import type * as TE from 'fp-ts/lib/TaskEither.js'
import type { NetworkHealth } from './client-api.js'
import type { ResolvedConfig } from './config.js'
import type { ConsulError } from '../base/consul-error.js'
import { connectionGate } from './http-connection-gate.js'
import {
  abortedError,
  interpreterError,
  requestError,
  tooLargeError,
  type RequestNames,
} from './http-errors.js'
import { bodyText } from './http-read-body.js'
import { createWire, headerLines, type Received } from './http-wire.js'
import { redact, secretsOf } from './http-redact.js'
import { isLongPoll, queryOf, type HttpAnswer, type HttpRequest } from './http-request.js'
import { isHtmlPage, notConsul } from './not-consul.js'
import { requestFeed, type RequestFeed } from './request-feed.js'
import { connector } from './http-connect.js'

export type { HttpAnswer, HttpRequest } from './http-request.js'
export { statusError } from './http-errors.js'

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

/** The headers of every request: the ACL token, the basic auth. */
function authHeaders(config: ResolvedConfig): Record<string, string> {
  const headers: Record<string, string> = {}
  if (config.token !== undefined) headers['X-Consul-Token'] = config.token
  if (config.basicAuth !== undefined) {
    const { user, password } = config.basicAuth
    headers['Authorization'] = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`
  }
  return headers
}

/**
 * How long an idle connection is kept for the next request: a blocking query holds its own for up
 * to its wait, and the agent would close one idle for longer than it keeps them anyway.
 */
const IDLE_CONNECTION_MS = 10_000

/** The transport for one client: its kept-alive connections, at most `connections` at once. */
export function createTransport(config: ResolvedConfig): Transport {
  // The gate lets at most `connections` requests out at once: the agent never queues one.
  const wire = createWire({
    ...connector(config),
    idleMs: IDLE_CONNECTION_MS,
    connections: config.connections,
  })
  const secrets = secretsOf(config)
  const headers = authHeaders(config)
  // The header lines of a request with a body, once per content type (not once per request).
  const bodyHeaders = new Map<string, string>()
  const headersWith = (contentType: string): string => {
    let known = bodyHeaders.get(contentType)
    if (known === undefined) {
      known = headerLines({ ...headers, 'Content-Type': contentType })
      bodyHeaders.set(contentType, known)
    }
    return known
  }
  const bareHeaders = headerLines(headers)
  const requests = requestFeed()
  const where = config.socketPath === undefined ? config.origin : `unix://${config.socketPath}`
  // The pool gets at most `connections` requests at once; the rest wait in the gate, untimed.
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
    const query = queryOf(request, config)
    const bare = `${request.method} ${request.path}`
    const names: RequestNames = { label: `${bare}${query}`, bare, where }
    const timeoutMs = request.timeoutMs ?? config.requestTimeoutMs
    const poll = isLongPoll(request)
    const entered = gate.enter({
      signal: request.signal,
      urgent: request.urgent === true,
      poll,
      timeoutMs,
    })
    // Admitted at once, it is sent in this turn: a release or an acquisition goes out before the
    // work its caller does next (a watch's teardown, a state's subscribers).
    const admission = entered instanceof Promise ? await entered : entered
    if (!admission.admitted) return E.left(abortedError(admission.stop, names))
    try {
      // Closed, or given up by its caller, between its admission and now: not sent.
      const stopped = admission.stop()
      if (stopped === 'caller' || stopped === 'closed') return E.left(abortedError(stopped, names))
      const received = await wire.send(
        {
          method: request.method,
          path: `${request.path}${query}`,
          poll,
          headerLines:
            request.body === undefined
              ? bareHeaders
              : headersWith(request.contentType ?? 'application/octet-stream'),
        },
        request.body ?? null,
        admission.onStop,
        config.maxResponseBytes,
      )
      if (received.type === 'too-large') {
        return E.left(tooLargeError(received.statusCode, config.maxResponseBytes, bare))
      }
      return E.right(new BufferedAnswer(received, names.label, where))
    } catch (error) {
      return E.left(
        requestError(error, admission.stop(), { ...names, timeoutMs, origin: config.origin }),
      )
    } finally {
      admission.leave()
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
        return E.left(redact(interpreterError(error, request), secrets))
      }
    },
    close: () => {
      if (closing === undefined) {
        gate.close()
        wire.destroy()
        closing = Promise.resolve()
      }
      return closing
    },
  }
}

/**
 * An answer whose `body` is made from its bytes when first read (a listing's never is). A class,
 * so that every answer shares the one getter on its prototype. An object literal with a getter of
 * its own does not die young in V8: it outlives every young collection until the next full one,
 * and with it the getter's closure and what that holds (the text and the bytes), so that each
 * answer of a busy client went to the old generation and the young one grew to its largest.
 */
class BufferedAnswer implements HttpAnswer {
  private text: string | undefined = undefined
  readonly status: number
  readonly headers: HttpAnswer['headers']
  readonly bytes: readonly Uint8Array[]
  readonly receivedAt: number

  constructor(
    received: Extract<Received, { readonly type: 'answer' }>,
    readonly label: string,
    readonly origin: string,
  ) {
    this.status = received.statusCode
    this.headers = received.headers
    this.bytes = received.chunks
    this.receivedAt = received.receivedAt
  }

  get body(): string {
    return (this.text ??= bodyText(this.bytes))
  }
}
