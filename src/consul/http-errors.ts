/**
 * The ConsulError of every way a request can fail, each with what to do about it: an answer whose
 * status the caller did not expect, a request the agent never answered (no connection, a timeout,
 * a refused certificate, an agent without TLS), one stopped by its caller or the client's close,
 * an answer too large to read, and an answer an interpreter could not take.
 */
import type { Aborted, ConsulError, DecodeError, TooLarge } from '../base/consul-error.js'
import { namesAclProblem } from '../base/failure-kinds.js'
import { certificateRefused, summarise, timedOut } from './http-causes.js'
import type { StopReason } from './http-connection-gate.js'
import type { HttpAnswer, HttpRequest } from './http-request.js'
import { isForeignStatus, notConsul } from './not-consul.js'
import { parseRetryAfter } from './retry-after.js'
import { answeredOnlyTls, plainHttpAgent, speaksNoTls, tlsOnlyAgent } from './tls-mismatch.js'

/** A request as its failures' messages name it. */
export interface RequestNames {
  /** With its query (which never carries the token): `GET /v1/kv/p?recurse`. */
  readonly label: string
  /** Without its query: `GET /v1/kv/p`, the errors' `request`. */
  readonly bare: string
  /** Where it was sent: `http://127.0.0.1:8500` or `unix:///path`. */
  readonly where: string
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
        : /i\/o deadline reached/i.test(body)
          ? "the agent's call to the Consul servers ran out of time; retry later. Consul 1.11.9 to 1.14.x client agents answer blocking queries so (the library's watch re-reads at once then); if it comes back on other requests, look at the network between the agent and the servers, or upgrade the agents"
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
  // A plain-HTTP request to an agent's HTTPS port: a 400 from its TLS listener.
  if (answeredOnlyTls(answer)) return tlsOnlyAgent(answer)
  const enterpriseOnly = status === 400 ? enterpriseFeatureRefused(body) : undefined
  if (enterpriseOnly !== undefined) {
    const [variable, option, what] =
      enterpriseOnly === 'namespace'
        ? ['CONSUL_NAMESPACE', 'namespace', 'namespaces']
        : ['CONSUL_PARTITION', 'partition', 'admin partitions']
    return {
      _tag: 'BadRequest',
      status,
      body,
      request,
      enterpriseOnly,
      message: `${label}: the Consul agent is Community Edition, which has no ${what} (${said}); unset ${variable} (or the ${option} option) to use this agent, or point the client at a Consul Enterprise agent`,
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

/**
 * Which Enterprise parameter a Community Edition agent's 400 body refuses: `Invalid query
 * parameter: "ns" - Namespaces are a Consul Enterprise feature` (behind `Bad request: ` on Consul
 * 1.8), or the same of `"partition"` and `Partitions` (1.11+). Such an agent checks `ns` first.
 */
function enterpriseFeatureRefused(body: string): 'namespace' | 'partition' | undefined {
  if (/Namespaces are a Consul Enterprise feature/i.test(body)) return 'namespace'
  if (/Partitions are a Consul Enterprise feature/i.test(body)) return 'partition'
  return undefined
}

/** The Aborted of a request its caller gave up, or that the client's close ended. */
export function abortedError(why: 'caller' | 'closed', names: RequestNames): Aborted {
  return {
    _tag: 'Aborted',
    request: names.bare,
    message: `${names.label}: ${why === 'caller' ? 'aborted by the caller' : 'the client is closed'}`,
  }
}

/**
 * The ConsulError of a request sent that came to no answer: `error` is what the request failed
 * with, `stop` what aborted the request if something did, `timeoutMs` its request timeout and
 * `origin` the client's configured address.
 */
export function requestError(
  error: unknown,
  stop: StopReason | undefined,
  request: RequestNames & { readonly timeoutMs: number; readonly origin: string },
): ConsulError {
  const { label, bare, where, timeoutMs, origin } = request
  const cause = summarise(error)
  if (stop === 'timeout' || timedOut(cause)) {
    return {
      _tag: 'Timeout',
      timeoutMs,
      request: bare,
      message: `${label}: no answer from ${where} within ${timeoutMs} ms`,
    }
  }
  // Aborted by close() or by the caller.
  if (stop !== undefined) {
    return abortedError(stop === 'caller' ? 'caller' : 'closed', request)
  }
  if (certificateRefused(cause)) {
    return {
      _tag: 'TlsRejected',
      request: bare,
      cause,
      message: `${label}: the TLS certificate of the Consul agent at ${where} was refused (${cause.code}: ${cause.message}); check CONSUL_CACERT (the CA that signed the agent's certificate) or CONSUL_CAPATH (a directory of CA certificates), and CONSUL_TLS_SERVER_NAME, or set CONSUL_HTTP_SSL_VERIFY=false to skip verification (unsafe)`,
    }
  }
  if (origin.startsWith('https:') && speaksNoTls(cause))
    return plainHttpAgent(request, origin, cause)
  return {
    _tag: 'Unreachable',
    request: bare,
    cause,
    message: `${label}: cannot reach the Consul agent at ${where} (${cause.code ?? cause.name}: ${cause.message}); check CONSUL_HTTP_ADDR and that the agent runs`,
  }
}

/** The TooLarge of an answer (with `status`) past `limitBytes`, the client's maxResponseBytes. */
export function tooLargeError(status: number, limitBytes: number, bare: string): TooLarge {
  return {
    _tag: 'TooLarge',
    limitBytes,
    request: bare,
    message:
      `${bare}: the answer (status ${status}) is larger than ${limitBytes} bytes ` +
      `(${mebibytes(limitBytes)}, the client option maxResponseBytes); the client stopped ` +
      `reading it. If the data under that path really is this large, raise ` +
      `maxResponseBytes; otherwise look at what wrote so much there ` +
      `(consul kv get -recurse -keys <prefix>)`,
  }
}

/** The DecodeError of an interpreter that threw on `request`'s answer (a bug, kept a value). */
export function interpreterError(error: unknown, request: HttpRequest): DecodeError {
  const cause = summarise(error)
  return {
    _tag: 'DecodeError',
    request: `${request.method} ${request.path}`,
    errors: [cause.message],
    message: `${request.method} ${request.path}: could not interpret the answer (${cause.message})`,
  }
}

function mebibytes(bytes: number): string {
  const mib = bytes / (1024 * 1024)
  return mib >= 1 ? `${Number.isInteger(mib) ? mib : mib.toFixed(1)} MiB` : `${bytes} bytes`
}
