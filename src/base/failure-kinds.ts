/**
 * What kind of failure a ConsulError is, for the loops that decide whether to try again: the
 * transport's watch, the effects layer's retries and the core's release plans all ask here (or
 * `judgeFailure`, which builds on these), so they agree. Pure: no I/O, no clock.
 */
import type { ConsulError, ServerError } from './consul-error.js'

/**
 * Whether a failure is transient (Unreachable, Timeout, ServerError): watches and renewals retry
 * these; every other ConsulError is permanent, and retrying it would only repeat it.
 *
 * @example
 * ```ts
 * const answer = await consul.session.renew(session)()
 * if (E.isLeft(answer) && !isTransient(answer.left)) throw new Error(answer.left.message)
 * ```
 * @param error - A failure of the Consul layer.
 * @returns True for Unreachable, Timeout and ServerError.
 */
export function isTransient(error: ConsulError): boolean {
  return error._tag === 'Unreachable' || error._tag === 'Timeout' || error._tag === 'ServerError'
}

/** A 429 or 503: Consul's rate limits (or an overloaded server) ask the client to slow down. */
export function isThrottled(error: ConsulError): error is ServerError {
  return error._tag === 'ServerError' && (error.status === 429 || error.status === 503)
}

/**
 * Whether a thrown value is one of the Consul layer's typed errors (anything else that reaches a
 * retry loop is a bug or the user's, and is passed on as it is).
 */
export function isConsulError(value: unknown): value is ConsulError {
  return typeof value === 'object' && value !== null && '_tag' in value
}

/** Consul's words for an ACL problem (acl/errors.go), also behind `rpc error making call: `. */
export function namesAclProblem(text: string): boolean {
  return /ACL not found|Permission denied/i.test(text)
}

/** A ServerError whose body names an ACL problem (see PermissionDenied). */
export function isAclServerError(error: ConsulError): error is ServerError {
  return error._tag === 'ServerError' && namesAclProblem(error.body)
}
