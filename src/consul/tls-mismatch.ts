/**
 * An agent that answered, but over the other protocol: the client asked for TLS (an https://
 * address, or CONSUL_HTTP_SSL=true) and the agent speaks plain HTTP there, or the client sent
 * plain HTTP to an agent's HTTPS port. Either shows at the first answer, and a retry would only
 * answer the same: the client's transport, `doctor` and `rxsem` all tell it here, and report it
 * as the permanent TlsRejected, whose message says which way round and what to change.
 */
import type { CauseSummary } from './http-causes.js'
import type { HttpAnswer } from './http-request.js'
import type { TlsRejected } from '../base/consul-error.js'

/**
 * Whether a TLS handshake failed because the other end answered in plain HTTP: OpenSSL reads the
 * first bytes of an HTTP answer (`HTTP/1.1 400 …`) as a TLS record, and says "wrong version
 * number" (or "packet length too long", depending on those bytes).
 */
export function speaksNoTls(cause: CauseSummary): boolean {
  if (cause.code === 'ERR_SSL_WRONG_VERSION_NUMBER') return true
  if (cause.code === 'ERR_SSL_PACKET_LENGTH_TOO_LONG') return true
  return (
    (cause.code === 'EPROTO' || cause.code === undefined) &&
    /wrong version number|packet length too long/i.test(cause.message)
  )
}

/**
 * Whether `answer` is an HTTPS server's refusal of a plain-HTTP request: Go's TLS listener (and so
 * a Consul agent's HTTPS port) answers it with a 400 that says "Client sent an HTTP request to an
 * HTTPS server.", as nginx says "The plain HTTP request was sent to HTTPS port".
 */
export function answeredOnlyTls(answer: Pick<HttpAnswer, 'status' | 'body'>): boolean {
  return (
    answer.status === 400 &&
    /HTTP request to an HTTPS server|plain HTTP request was sent to HTTPS port/i.test(answer.body)
  )
}

/**
 * The TlsRejected of an https request that an agent answered in plain HTTP.
 *
 * @param request - `label` (with the query) and `bare` (without) of the request, `where` it went
 *   and the client's `origin` (`https://host:port`).
 */
export function plainHttpAgent(
  request: { readonly label: string; readonly bare: string; readonly where: string },
  origin: string,
  cause: CauseSummary,
): TlsRejected {
  return {
    _tag: 'TlsRejected',
    mismatch: 'agent-speaks-http',
    request: request.bare,
    cause,
    message:
      `${request.label}: the agent at ${request.where} answered in plain HTTP, but the client ` +
      'speaks TLS to it (an https:// address, or CONSUL_HTTP_SSL=true); ' +
      `${mismatchRemedy('agent-speaks-http', origin)}`,
  }
}

/** The TlsRejected of a plain-HTTP request that an HTTPS port refused (`answeredOnlyTls`). */
export function tlsOnlyAgent(answer: HttpAnswer): TlsRejected {
  const request = answer.label.replace(/\?.*$/, '')
  const said = answer.body.trim().slice(0, 200)
  return {
    _tag: 'TlsRejected',
    mismatch: 'agent-speaks-https',
    request,
    cause: { status: answer.status, body: said },
    message:
      `${answer.label}: the agent at ${answer.origin} answered that it speaks only TLS ` +
      `(${answer.status}: ${said}), but the client sends plain HTTP to it; ` +
      `${mismatchRemedy('agent-speaks-https', answer.origin)}`,
  }
}

/**
 * What to change when the client and the agent at `origin` speak different protocols: the scheme
 * of the address (with CONSUL_HTTP_SSL), or the agent's TLS.
 *
 * @example
 * mismatchRemedy('agent-speaks-http', 'https://127.0.0.1:8500') // "set CONSUL_HTTP_ADDR … to http://127.0.0.1:8500 …"
 */
export function mismatchRemedy(
  mismatch: NonNullable<TlsRejected['mismatch']>,
  origin: string,
): string {
  if (mismatch === 'agent-speaks-http') {
    const plain = origin.replace(/^https:/, 'http:')
    return (
      `set CONSUL_HTTP_ADDR (or the address option) to ${plain} and CONSUL_HTTP_SSL to false ` +
      '(or unset it), or enable TLS on the agent (its ports.https and tls settings)'
    )
  }
  const secure = origin.replace(/^http:/, 'https:')
  return (
    `set CONSUL_HTTP_ADDR (or the address option) to ${secure} (or CONSUL_HTTP_SSL to true), ` +
    "with the CA that signed the agent's certificate in CONSUL_CACERT, or use the agent's " +
    'plain-HTTP port (ports.http) if it has one'
  )
}
