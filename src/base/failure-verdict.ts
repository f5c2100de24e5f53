/**
 * The one rule by which every retry loop of the library judges a failure: the prefix watch, the
 * session lease, the writes and the session loop. Pure: the caller keeps the count of ACL
 * failures in a row, and waits (or not) as its own backoff says.
 *
 * ```
 * failure:   Timeout   500 ACL   500 ACL   …   500 ACL (5th in a row)   403
 * verdict:   retry 0   retry 1   retry 2   …   permanent (PermissionDenied)   permanent
 * ```
 */
import type { PermissionDenied, ServerError } from './consul-error.js'
import { isAclServerError, isConsulError, isTransient } from './failure-kinds.js'

/**
 * How many answers in a row naming an ACL problem with a 500 a retry loop accepts before it gives
 * up with PermissionDenied: enough to ride out a token that has not replicated yet (a few seconds
 * of backoff), few enough that a deleted token is reported within seconds rather than never.
 */
export const ACL_FAILURES_BEFORE_PERMANENT = 5

/**
 * What a retry loop does with a failure: try again (carrying the count of ACL failures in a row to
 * the next failure), or stop with `error` (of type `E`: what the loop's failures are).
 *
 * @example
 * ```ts
 * const verdict: FailureVerdict = { verdict: 'retry', aclInRow: 0 }
 * ```
 */
export type FailureVerdict<E = unknown> =
  /** A transient failure: retry, and hand `aclInRow` to the judgement of the next failure. */
  | { readonly verdict: 'retry'; readonly aclInRow: number }
  /** Stop: `error` is the failure itself, or the PermissionDenied of an ACL problem that stayed. */
  | { readonly verdict: 'permanent'; readonly error: E }

/**
 * Judges a failure: a transient ConsulError (Unreachable, Timeout, ServerError) is retried, unless
 * it is a 500 naming an ACL problem for the ACL_FAILURES_BEFORE_PERMANENT-th time in a row, which
 * becomes the permanent PermissionDenied (`persistentAclError`: the token was probably deleted).
 * Anything else (a permanent ConsulError, or a value that is no ConsulError) is permanent as it
 * is. A success in between resets the count: the caller then passes 0.
 *
 * @example
 * ```ts
 * const verdict = judgeFailure(error, aclInRow)
 * if (verdict.verdict === 'permanent') return fail(verdict.error)
 * aclInRow = verdict.aclInRow
 * ```
 * @param error - The failure, as thrown or as a Left.
 * @param aclInRow - 500s naming an ACL problem answered in a row just before this failure.
 * @returns Retry with the count to carry on, or permanent with the error to stop with.
 */
export function judgeFailure<E>(error: E, aclInRow: number): FailureVerdict<E | PermissionDenied> {
  if (!isConsulError(error) || !isTransient(error)) return { verdict: 'permanent', error }
  if (!isAclServerError(error)) return { verdict: 'retry', aclInRow: 0 }
  const tries = aclInRow + 1
  return tries >= ACL_FAILURES_BEFORE_PERMANENT
    ? { verdict: 'permanent', error: persistentAclError(error, tries) }
    : { verdict: 'retry', aclInRow: tries }
}

/**
 * The permanent PermissionDenied for an ACL problem Consul answered `tries` times in a row as a
 * server failure.
 *
 * @example
 * const error = persistentAclError(serverError, ACL_FAILURES_BEFORE_PERMANENT)
 */
export function persistentAclError(error: ServerError, tries: number): PermissionDenied {
  const request = error.request ?? 'a request'
  return {
    _tag: 'PermissionDenied',
    status: 500,
    body: error.body,
    request,
    message:
      `${request}: Consul answered ${tries} times in a row that the ACL token is not valid ` +
      `(500: ${error.body}); the token (CONSUL_HTTP_TOKEN, CONSUL_HTTP_TOKEN_FILE or the token ` +
      `option) was probably deleted on the servers: give the client a token that exists`,
  }
}
