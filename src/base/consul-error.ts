/**
 * Typed errors of the Consul layer. Callers never see a raw HTTP client error: every failure is one
 * of these, with a message a person can act on. Messages never contain the ACL token.
 */

interface ErrorBase {
  /** What went wrong and what to do, for people. */
  readonly message: string
  /** `METHOD /v1/path` of the request, without query string (which never holds the token). */
  readonly request?: string | undefined
}

/**
 * The agent could not be reached (connection refused, reset, DNS, TLS handshake). Transient.
 *
 * @example
 * ```ts
 * if (error._tag === 'Unreachable') console.warn(error.message) // names the address and the code
 * ```
 */
export interface Unreachable extends ErrorBase {
  /** Discriminant of the ConsulError union. */
  readonly _tag: 'Unreachable'
  /** The underlying network error, summarised (`name`, `code` such as ECONNREFUSED, `message`). */
  readonly cause?: unknown
}
/**
 * The client's TLS settings and the agent's disagree. Either the agent's TLS certificate failed
 * verification (not signed by the CA the client trusts, expired, or issued for another name): fix
 * `CONSUL_CACERT` (or `CONSUL_CAPATH`) / `CONSUL_TLS_SERVER_NAME`, or turn verification off with
 * `CONSUL_HTTP_SSL_VERIFY=false` (unsafe). Or an agent answered over the other protocol
 * (`mismatch`): the client speaks TLS to a plain-HTTP agent, or plain HTTP to an HTTPS port: fix
 * the scheme of `CONSUL_HTTP_ADDR` (or the `address` option) and `CONSUL_HTTP_SSL`. Permanent, from
 * the first answer: the same settings would only fail again. The message says which and what to do.
 *
 * @example
 * ```ts
 * if (error._tag === 'TlsRejected') console.error(error.message) // names the TLS problem
 * ```
 */
export interface TlsRejected extends ErrorBase {
  /** Discriminant of the ConsulError union. */
  readonly _tag: 'TlsRejected'
  /**
   * Set when an agent answered over the other protocol: `agent-speaks-http` (the client asked for
   * https, the agent answered plain HTTP), `agent-speaks-https` (the client sent plain HTTP to an
   * agent's HTTPS port). Absent for a refused certificate.
   */
  readonly mismatch?: 'agent-speaks-http' | 'agent-speaks-https' | undefined
  /**
   * The TLS error, summarised (`name`, `code` such as UNABLE_TO_VERIFY_LEAF_SIGNATURE, `message`),
   * or the agent's answer (`status`, `body`) for a plain-HTTP request to its HTTPS port.
   */
  readonly cause?: unknown
}
/**
 * No answer within the request's timeout. Transient.
 *
 * @example
 * ```ts
 * if (error._tag === 'Timeout') console.warn(`no answer within ${error.timeoutMs} ms`)
 * ```
 */
export interface Timeout extends ErrorBase {
  /** Discriminant of the ConsulError union. */
  readonly _tag: 'Timeout'
  /**
   * The time allowed, in ms: the request timeout, or for a blocking query its wait plus Consul's
   * jitter (wait/16) plus the request timeout.
   */
  readonly timeoutMs: number
}
/**
 * 403: the ACL token lacks a permission, or is unknown. Permanent: no retry makes it pass.
 *
 * Also a 500 whose body named an ACL problem (`ACL not found`, `Permission denied`, e.g. behind
 * `rpc error making call: `) on several tries in a row (`ACL_FAILURES_BEFORE_PERMANENT`): a token
 * deleted on the servers is answered so through a client agent. Such a 500 is retried as a
 * ServerError first (a token can be missing for a moment while ACLs replicate); the loops that
 * retry it (watch, renewals, session creation, writes) give up with this error, `status` 500.
 *
 * @example
 * ```ts
 * if (error._tag === 'PermissionDenied') console.error(`check the token's policy: ${error.body}`)
 * ```
 */
export interface PermissionDenied extends ErrorBase {
  /** Discriminant of the ConsulError union. */
  readonly _tag: 'PermissionDenied'
  /**
   * 403; or 500 for an ACL problem Consul kept answering as a server failure (see above); or 200
   * for a listing Consul 1.11+ marked as filtered by ACLs (`filteredListingError`).
   */
  readonly status: 403 | 500 | 200
  /** Consul's answer body, e.g. `Permission denied`. */
  readonly body: string
}
/**
 * The address answered HTTP, but not as a Consul agent's HTTP API does: a 404 or 501 to a path
 * every agent serves (a 404 of a KV read or of a session renewal is data, not this), an HTML
 * page, or a KV read without the `X-Consul-Index` header that every agent sends. Usually
 * CONSUL_HTTP_ADDR names another web server, or a proxy that does not pass `/v1/` through.
 * Permanent: the same address would answer the same.
 *
 * @example
 * ```ts
 * if (error._tag === 'NotConsul') console.error(error.message) // names the address and the sign
 * ```
 */
export interface NotConsul extends ErrorBase {
  /** Discriminant of the ConsulError union. */
  readonly _tag: 'NotConsul'
  /** The HTTP status of the answer. */
  readonly status: number
  /** The start of the answer's body. */
  readonly body: string
}
/**
 * 5xx (and 429): the server failed or is overloaded; transient, usually worth a retry. A 429 or
 * 503 means "slow down" (Consul's rate limits): the library's retry loops wait longer for those,
 * and at least what `Retry-After` asked for (capped; see docs/operations.md).
 *
 * @example
 * ```ts
 * if (error._tag === 'ServerError' && error.status === 429) slowDown(error.retryAfterMs ?? 1000)
 * ```
 */
export interface ServerError extends ErrorBase {
  /** Discriminant of the ConsulError union. */
  readonly _tag: 'ServerError'
  /** The HTTP status: 429 or 500..599. */
  readonly status: number
  /** Consul's answer body, e.g. `No cluster leader`. */
  readonly body: string
  /**
   * The answer's `Retry-After` (delay in seconds or an HTTP date) as ms from when the answer
   * arrived; undefined when absent or unreadable.
   */
  readonly retryAfterMs?: number | undefined
}
/**
 * The answer was larger than the client's `maxResponseBytes`: the client stopped reading it at
 * the cap and closed the connection, without holding it whole in memory. Permanent: the same
 * request would only bring the same answer. Raise the option, or find out what wrote so much
 * under the prefix.
 *
 * @example
 * ```ts
 * if (error._tag === 'TooLarge') console.error(`${error.request}: over ${error.limitBytes} bytes`)
 * ```
 */
export interface TooLarge extends ErrorBase {
  /** Discriminant of the ConsulError union. */
  readonly _tag: 'TooLarge'
  /** The cap that was passed, in bytes (the client's `maxResponseBytes`). */
  readonly limitBytes: number
}
/**
 * 4xx other than 403/404/429: the request was wrong. Not worth a retry.
 *
 * Also used for a request the client refuses to send (a key with a leading `/`, a session TTL
 * outside 10 s..24 h, conflicting options): then `status` is 0, `body` is '' and
 * `rejectedBeforeSending` is true. A Community Edition agent's 400 to a namespace or an admin
 * partition (`Namespaces are a Consul Enterprise feature`) sets `enterpriseOnly`.
 *
 * @example
 * ```ts
 * const put = await consul.kv.put('/bad/key', 'x')()
 * if (E.isLeft(put) && put.left._tag === 'BadRequest') {
 *   console.log(put.left.rejectedBeforeSending, put.left.message) // true, '...begins with "/"...'
 * }
 * ```
 */
export interface BadRequest extends ErrorBase {
  /** Discriminant of the ConsulError union. */
  readonly _tag: 'BadRequest'
  /** The HTTP status, or 0 when the request was never sent. */
  readonly status: number
  /** Consul's answer body, or '' when the request was never sent. */
  readonly body: string
  /** True when the client refused to send the request: nothing reached Consul. */
  readonly rejectedBeforeSending?: boolean | undefined
  /**
   * Set when a Community Edition agent refused an Enterprise parameter the client sends: `ns`
   * (CONSUL_NAMESPACE, the `namespace` option) or `partition` (CONSUL_PARTITION, the `partition`
   * option). The message says which to unset.
   */
  readonly enterpriseOnly?: 'namespace' | 'partition' | undefined
}
/**
 * The answer did not have the shape Consul documents (a bad field, invalid JSON, a missing
 * `X-Consul-Index`); `errors` names each problem. Permanent.
 *
 * @example
 * ```ts
 * if (error._tag === 'DecodeError') error.errors.forEach((problem) => console.error(problem))
 * ```
 */
export interface DecodeError extends ErrorBase {
  /** Discriminant of the ConsulError union. */
  readonly _tag: 'DecodeError'
  /** One line per problem, naming the field: `[0].Flags: expected uint64 decimal, got "abc"`. */
  readonly errors: readonly string[]
}
/**
 * The request was aborted: the caller's AbortSignal fired, or the client was closed.
 *
 * @example
 * ```ts
 * const controller = new AbortController()
 * const answer = consul.kv.get('service/web/leader', { signal: controller.signal })()
 * controller.abort()
 * const result = await answer // E.left({ _tag: 'Aborted', ... })
 * ```
 */
export interface Aborted extends ErrorBase {
  /** Discriminant of the ConsulError union. */
  readonly _tag: 'Aborted'
}

/**
 * Every failure of the Consul layer, told apart by `_tag`. Calls answer with it on the left of a
 * TaskEither instead of throwing, so each caller decides what a failure means for it.
 *
 * @example
 * ```ts
 * const answer = await consul.kv.get('service/web/leader')()
 * if (E.isLeft(answer)) {
 *   const error: ConsulError = answer.left
 *   console.error(error._tag, error.message, isTransient(error) ? '(will retry)' : '')
 * }
 * ```
 */
export type ConsulError =
  | Unreachable
  | TlsRejected
  | Timeout
  | PermissionDenied
  | NotConsul
  | ServerError
  | BadRequest
  | DecodeError
  | TooLarge
  | Aborted

/**
 * Whether `error` is the 500 a Consul client agent answers when its RPC to the servers hit its
 * deadline (`rpc error making call: i/o deadline reached`). Consul 1.11.9 to 1.14.x answer a
 * blocking query so when the servers hold it about as long as the agent's own RPC deadline
 * (hashicorp/consul#13303, #15246): on a blocking read it means the wait was cut short, not that
 * the agent failed, and the prefix watch re-reads at once without blocking.
 *
 * @example
 * if (blocking && isDeadlineCut(error)) rereadNow()
 * @param error - A failure of the Consul layer.
 * @returns True for a ServerError 500 whose body names the deadline.
 */
export function isDeadlineCut(error: ConsulError): error is ServerError {
  return (
    error._tag === 'ServerError' &&
    error.status === 500 &&
    /i\/o deadline reached/i.test(error.body)
  )
}

/** The BadRequest for a request the client refuses to send; nothing reaches Consul. */
export function rejectedBeforeSending(request: string, message: string): BadRequest {
  return {
    _tag: 'BadRequest',
    status: 0,
    body: '',
    request,
    rejectedBeforeSending: true,
    message: `${request}: not sent: ${message}`,
  }
}

/**
 * The permanent PermissionDenied of a listing that Consul 1.11+ marked as filtered by ACLs
 * (`X-Consul-Results-Filtered-By-ACLs: true`): a contender must not decide on part of a prefix
 * (a hidden holder or `.lock` would look like a free slot).
 *
 * @example
 * if (snapshot.filteredByAcls) subscriber.error(filteredListingError(prefix))
 * @param prefix - The prefix listed.
 * @returns PermissionDenied, status 200.
 */
export function filteredListingError(prefix: string): PermissionDenied {
  const request = `GET /v1/kv/${prefix}?recurse`
  return {
    _tag: 'PermissionDenied',
    status: 200,
    body: 'X-Consul-Results-Filtered-By-ACLs: true',
    request,
    message:
      `${request}: Consul's ACLs left keys out of the listing of ${prefix} ` +
      '(X-Consul-Results-Filtered-By-ACLs), so no slot can be decided on it; give the token ' +
      `(CONSUL_HTTP_TOKEN, CONSUL_HTTP_TOKEN_FILE or the token option) key_prefix "${prefix}" read ` +
      'and write',
  }
}
