/**
 * Typed errors of the Consul layer. Callers never see a raw undici error: every failure is one of
 * these, with a message a person can act on. Messages never contain the ACL token.
 */

interface ErrorBase {
  /** What went wrong and what to do, for people. */
  readonly message: string
  /** `METHOD /v1/path` of the request, without query string (which never holds the token). */
  readonly request?: string | undefined
}

/** The agent could not be reached (connection refused, reset, DNS, TLS handshake). */
export interface Unreachable extends ErrorBase {
  readonly _tag: 'Unreachable'
  readonly cause?: unknown
}
/** No answer within the request's timeout. */
export interface Timeout extends ErrorBase {
  readonly _tag: 'Timeout'
  readonly timeoutMs: number
}
/** 403: the ACL token lacks a permission, or is unknown. */
export interface PermissionDenied extends ErrorBase {
  readonly _tag: 'PermissionDenied'
  readonly status: 403
  readonly body: string
}
/** 404 where it is an error (e.g. renewing a session that is gone). KV GET 404 is data, not this. */
export interface NotFound extends ErrorBase {
  readonly _tag: 'NotFound'
  readonly status: 404
  readonly body: string
}
/** 5xx (and 429): the server failed or is overloaded; usually worth a retry. */
export interface ServerError extends ErrorBase {
  readonly _tag: 'ServerError'
  readonly status: number
  readonly body: string
}
/**
 * 4xx other than 403/404/429: the request was wrong. Not worth a retry.
 *
 * Also used for a request the client refuses to send (a key with a leading `/`, a session TTL
 * outside 10 s..24 h, conflicting options): then `status` is 0, `body` is '' and
 * `rejectedBeforeSending` is true.
 */
export interface BadRequest extends ErrorBase {
  readonly _tag: 'BadRequest'
  readonly status: number
  readonly body: string
  readonly rejectedBeforeSending?: boolean | undefined
}
/** The answer did not have the shape Consul documents; `path` names the bad field. */
export interface DecodeError extends ErrorBase {
  readonly _tag: 'DecodeError'
  readonly errors: readonly string[]
}
/** The caller aborted the request (its AbortSignal fired). */
export interface Aborted extends ErrorBase {
  readonly _tag: 'Aborted'
}

export type ConsulError =
  | Unreachable
  | Timeout
  | PermissionDenied
  | NotFound
  | ServerError
  | BadRequest
  | DecodeError
  | Aborted

/** Transient failures are retried by watches and renewals; the others are permanent. */
export function isTransient(error: ConsulError): boolean {
  return error._tag === 'Unreachable' || error._tag === 'Timeout' || error._tag === 'ServerError'
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
