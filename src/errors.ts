import type { ConsulError } from './consul/errors.js'
import { LOCK_FLAGS } from './consul/flags.js'
import type { PrefixProblem } from './core/events.js'

/**
 * What kind of failure a SemaphoreError is: what a program branches on (the message is for people).
 *
 * @example
 * ```ts
 * // Like `rxsem run`: 75 (EX_TEMPFAIL, try again later) when the slot was lost, else 1.
 * const exitCode = (kind: SemaphoreErrorKind) => (kind === 'SlotLost' ? 75 : 1)
 * ```
 */
export type SemaphoreErrorKind =
  /** An option was wrong; nothing was sent to Consul. */
  | 'InvalidOptions'
  /**
   * Consul refused the ACL token: 403, or a 500 naming an ACL problem (`ACL not found`) on several
   * tries in a row, as a token deleted on the servers is answered through a client agent.
   */
  | 'PermissionDenied'
  /** `<prefix>/.lock` carries flags of another use (e.g. `consul lock` without `-n`). */
  | 'Conflict'
  /** `<prefix>/.lock` was written with another limit. */
  | 'LimitConflict'
  /** `<prefix>/.lock` could not be read; it is left as it is. */
  | 'CorruptLock'
  /**
   * A failure talking to Consul that is not retried: a bad request or an undecodable answer (and,
   * for `tryAcquire`/`tryLead`, which never retry, an agent that cannot be reached).
   */
  | 'Consul'
  /**
   * A held slot or task lock was lost (the abort reason of `withSlot`'s and `exclusive`'s
   * signals); a contender contends again by itself.
   */
  | 'SlotLost'
  /** `close()` could not leave Consul clean (the slot is given up locally all the same). */
  | 'ReleaseFailed'

/**
 * The one error type the public API throws or errors with: `kind` says what went wrong, the message
 * what to do about it, and `cause` carries the underlying Consul error where there is one.
 *
 * @example
 * ```ts
 * sem.holding$.subscribe({
 *   error: (error: unknown) => {
 *     if (error instanceof SemaphoreError) console.error(`${error.kind}: ${error.message}`)
 *   },
 * })
 * ```
 */
export class SemaphoreError extends Error {
  /** Always `'SemaphoreError'`, so logs and `String(error)` name the type. */
  override readonly name = 'SemaphoreError'
  constructor(
    /** What kind of failure this is; see SemaphoreErrorKind. */
    readonly kind: SemaphoreErrorKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options)
  }
}

/** Wraps a permanent ConsulError for the public API. */
export function fromConsulError(error: ConsulError, doing: string): SemaphoreError {
  const kind = error._tag === 'PermissionDenied' ? 'PermissionDenied' : 'Consul'
  const hint =
    error._tag === 'PermissionDenied'
      ? ' The token needs `key_prefix "<prefix>" { policy = "write" }` and `session_prefix "" { policy = "write" }` (see docs/operations.md).'
      : ''
  return new SemaphoreError(kind, `${doing}: ${error.message}${hint}`, { cause: error })
}

/** The SemaphoreError for a prefix problem the core found. */
export function problemError(problem: PrefixProblem): SemaphoreError {
  switch (problem.type) {
    case 'Conflict':
      return new SemaphoreError(
        'Conflict',
        `${problem.key} has flags ${problem.flags}, so another kind of client uses this prefix ` +
          `(${problem.flags === LOCK_FLAGS ? '`consul lock` without -n: a single-holder lock' : 'not a semaphore'}). ` +
          'Nothing was written. Choose another prefix, or stop the other user of this one.',
      )
    case 'LimitConflict':
      return new SemaphoreError(
        'LimitConflict',
        `${problem.key} says the limit is ${problem.lockLimit}, but this contender was given limit ` +
          `${problem.localLimit}. All contenders of a prefix must use the same limit; nothing was written.`,
      )
    case 'CorruptLock':
      return new SemaphoreError(
        'CorruptLock',
        `${problem.key} cannot be read: ${problem.reason}. It was left as it is; fix or delete it ` +
          `(consul kv delete ${problem.key}) once no contender relies on it.`,
      )
  }
}

/** Any error of the contender as the public SemaphoreError. */
export function toSemaphoreError(error: unknown): SemaphoreError {
  if (error instanceof SemaphoreError) return error
  if (typeof error === 'object' && error !== null && '_tag' in error) {
    return fromConsulError(error as ConsulError, 'Consul refused the semaphore')
  }
  return new SemaphoreError('Consul', `unexpected failure: ${String(error)}`, { cause: error })
}
