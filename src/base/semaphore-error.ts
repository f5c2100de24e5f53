import type { ConsulError, PermissionDenied } from './consul-error.js'
import { LOCK_FLAGS } from './flags.js'
import type { PrefixProblem } from './prefix-problem.js'
import { sentences } from './sentences.js'

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
   * No usable Consul agent answered at the address within the contender's `startupTimeout`
   * (default 15 s), on a client the agent has never answered; for `tryAcquire`/`tryLead`, which
   * never retry, at the first attempt. The message names the address and the last failure. After a
   * first contact, an agent that cannot be reached is retried for as long as it lasts.
   */
  | 'Unreachable'
  /**
   * The address answers HTTP, but is not a Consul agent (another web server, or a proxy that
   * does not pass `/v1/` through): CONSUL_HTTP_ADDR or the address option is wrong.
   */
  | 'NotConsul'
  /**
   * The client's TLS settings and the agent's disagree, from the first answer: an agent answered in
   * plain HTTP to a client that speaks TLS (an https:// address, CONSUL_HTTP_SSL=true), or is an
   * HTTPS port sent plain HTTP, or its certificate was refused (CONSUL_CACERT,
   * CONSUL_TLS_SERVER_NAME). The message says which and what to change; nothing is retried.
   */
  | 'TlsRejected'
  /** A failure talking to Consul that is not retried: a bad request or an undecodable answer. */
  | 'Consul'
  /**
   * A held slot or task lock was lost (the abort reason of `withSlot`'s and `exclusive`'s
   * signals); a contender contends again by itself.
   */
  | 'SlotLost'
  /**
   * The existing session a contender was given (`ContenderOptions.session`) does not exist, or
   * ended while the contender used it: the contender never makes one in its place.
   */
  | 'SessionGone'
  /** `close()` could not leave Consul clean (the slot is given up locally all the same). */
  | 'ReleaseFailed'
  /**
   * The caller's `signal` aborted the wait (or the hold): everything was released first. Its
   * `cause` is the signal's reason (a TimeoutError for `AbortSignal.timeout(ms)`). A signal
   * cancels the work as well as the wait; compare 'WaitTimeout'.
   */
  | 'Aborted'
  /**
   * `withSlot`'s `waitTimeout` ran out before a slot was held: the work was not started, and the
   * session and contender key of the wait were released first. The message names the prefix and
   * the timeout. Unlike a signal, `waitTimeout` never ends work that has started.
   */
  | 'WaitTimeout'
  /**
   * `evict` was given a session that neither `.lock` lists as a holder nor holds the leader lock
   * of the prefix (a waiter, a session of elsewhere, a typo), or the start of a session ID that
   * is the start of no session of the prefix, or of several (the message names them): nothing
   * was written.
   */
  | 'NotHolder'
  /**
   * Someone asked the holder to give its slot back (`evict` with a grace): the abort reason of
   * `withSlot`'s signal. The slot is still held while the work stops, and given back when it
   * settles; past the grace, the eviction is forced.
   */
  | 'RevokeRequested'

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

/**
 * What a PermissionDenied message adds: the variable that carries the token, and the policy,
 * with the contenders' prefix filled in where it is known. Exported for `rxsem`, whose own
 * start-up check can be refused the same way.
 *
 * @example
 * permissionHint('service/db/lock') // 'Give the ACL token ... `key_prefix "service/db/lock/" ...'
 * @param prefix - The prefix the refused call was for, if known.
 * @returns One sentence.
 */
export function permissionHint(prefix: string | undefined): string {
  const keys =
    prefix === undefined
      ? 'write rights on the prefix the contenders use (`key_prefix "service/db/lock/" { policy = "write" }` for service/db/lock)'
      : `\`key_prefix "${prefix}/" { policy = "write" }\``
  return (
    'Give the ACL token (CONSUL_HTTP_TOKEN or CONSUL_HTTP_TOKEN_FILE) a policy with ' +
    `${keys} and \`session_prefix "" { policy = "write" }\`: see "ACL policy" in docs/operations.md.`
  )
}

/** The public kind of a permanent ConsulError. */
function kindOf(error: ConsulError): SemaphoreErrorKind {
  switch (error._tag) {
    case 'PermissionDenied':
    case 'NotConsul':
    case 'TlsRejected':
      return error._tag
    case 'Unreachable':
    case 'Timeout':
      return 'Unreachable'
    default:
      return 'Consul'
  }
}

/**
 * Wraps a permanent ConsulError for the public API; `doing` leads the message of a refusal, not
 * that of an agent that cannot be reached, is not one, or speaks another protocol (their messages
 * say so themselves).
 */
export function fromConsulError(
  error: ConsulError,
  doing: string,
  prefix?: string,
): SemaphoreError {
  const kind = kindOf(error)
  const lead =
    kind === 'Unreachable' || kind === 'NotConsul' || kind === 'TlsRejected' ? '' : `${doing}: `
  const message =
    error._tag === 'PermissionDenied' ? withPermissionHint(error, prefix) : error.message
  return new SemaphoreError(kind, sentences(`${lead}${message}`), { cause: error })
}

/**
 * A refusal's message with the one remedy that applies: the policy to give a token Consul knows
 * (`permissionHint`); none for a token Consul does not know (`ACL not found`), whose message
 * already says to use one that exists. Exported for `rxsem`, which reports refusals too.
 *
 * @example
 * console.error(withPermissionHint(error))
 * @param error - The refusal.
 * @param prefix - The prefix the refused call was for, if known: the policy names it.
 * @returns Its message, and the policy hint where it applies.
 */
export function withPermissionHint(error: PermissionDenied, prefix?: string): string {
  return /ACL not found/i.test(error.body)
    ? sentences(error.message)
    : sentences(error.message, permissionHint(prefix))
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
          `${problem.localLimit}. Nothing was written. All contenders of a prefix must use the same ` +
          'limit, or take the one .lock states (option followLimit, rxsem run --follow-limit); ' +
          'an operator changes it with `rxsem set-limit`.',
      )
    case 'CorruptLock':
      return new SemaphoreError(
        'CorruptLock',
        `${problem.key} cannot be read: ${problem.reason}. Nothing was written; it was left as it ` +
          'is. Correct its body (`{"Limit":<n>,"Holders":{}}` and the holders it lists) or delete ' +
          `it (consul kv delete ${problem.key}) once no contender relies on it: the next ` +
          'contender writes a new one.',
      )
  }
}

/** Any error of the contender at `prefix` as the public SemaphoreError. */
export function toSemaphoreError(error: unknown, prefix?: string): SemaphoreError {
  if (error instanceof SemaphoreError) return error
  if (typeof error === 'object' && error !== null && '_tag' in error) {
    return fromConsulError(error as ConsulError, 'Consul refused the semaphore', prefix)
  }
  return new SemaphoreError('Consul', `unexpected failure: ${String(error)}`, { cause: error })
}

/**
 * The error of a wait that the caller's signal aborted, as Node's own APIs reject on an abort
 * (`events.once`, `timers/promises`): its `cause` is the signal's reason.
 *
 * @example
 * signal.addEventListener('abort', () => reject(abortedError(signal, 'waiting for a slot')))
 * @param signal - The aborted signal.
 * @param what - What was aborted, for the message.
 * @param hint - A last sentence for the message, if any.
 * @returns SemaphoreError('Aborted').
 */
export function abortedError(signal: AbortSignal, what: string, hint?: string): SemaphoreError {
  const reason: unknown = signal.reason
  const why =
    reason instanceof Error
      ? `${reason.name}: ${reason.message}`
      : typeof reason === 'string'
        ? reason
        : 'aborted'
  return new SemaphoreError(
    'Aborted',
    sentences(`${what} was aborted by its signal (${why}); its session and key are released`, hint),
    { cause: reason },
  )
}
