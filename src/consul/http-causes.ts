/**
 * What the errors of the transport's sockets and parser mean to it, by their `code`: a
 * timeout, or a server certificate refused (configuration, not weather). An `https`
 * client talking to an agent that does not speak TLS is told in `tls-mismatch.ts`. The messages
 * that tell a user what to do about each are in `http-errors.ts`.
 */

/** A thrown error as the transport keeps it: its name, its `code` if a string, its message. */
export interface CauseSummary {
  readonly name: string
  readonly code: string | undefined
  readonly message: string
}

/** `error` summarised: anything may be thrown, and only these three are kept. */
export function summarise(error: unknown): CauseSummary {
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

/** Node's codes for a request that ran out of time (the socket's own: the OS gave up). */
const TIMEOUT_CODES = new Set(['ETIMEDOUT'])

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

/** Whether `cause` is a timeout of the socket's. */
export function timedOut(cause: CauseSummary): boolean {
  return cause.code !== undefined && TIMEOUT_CODES.has(cause.code)
}

/** Whether `cause` is the agent's certificate failing verification. */
export function certificateRefused(cause: CauseSummary): boolean {
  return cause.code !== undefined && TLS_VERIFY_CODES.has(cause.code)
}
