import type { ConsulError } from '../base/consul-error.js'

/**
 * The failure a contender is living with, and which of its loops met it: the prefix watch, the
 * session's renewals, or the creation of a new session (each keeps retrying it).
 *
 * @example
 * ```ts
 * const failure: LastFailure = { during: 'watch', error }
 * console.warn(`${failure.during}: ${failure.error.message}`)
 * ```
 */
export interface LastFailure {
  /** The loop that failed. */
  readonly during: 'watch' | 'renewal' | 'session'
  /** Its last failure. */
  readonly error: ConsulError
}
