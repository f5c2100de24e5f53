import type { LastFailure } from '../last-failure.js'
import type { ContenderInput } from './contender-input.js'

export type { LastFailure } from '../last-failure.js'

/**
 * The contender's last failure after one input: a watch `disconnected` or a `renewal-failed` sets
 * it; the success of the same loop (a snapshot for the watch, a renewal for the lease) clears it,
 * and so does a new session. Other inputs keep it.
 *
 * @example
 * lastFailureAfter(undefined, { type: 'renewal-failed', error }) // { during: 'renewal', error }
 * @param previous - The failure before the input.
 * @param input - The input.
 * @returns The failure after it (the same object when unchanged).
 */
export function lastFailureAfter(
  previous: LastFailure | undefined,
  input: ContenderInput,
): LastFailure | undefined {
  switch (input.type) {
    case 'disconnected':
      return { during: 'watch', error: input.error }
    case 'renewal-failed':
      return { during: 'renewal', error: input.error }
    case 'snapshot':
      return previous?.during === 'watch' ? undefined : previous
    case 'session-renewed':
      return previous?.during === 'renewal' ? undefined : previous
    case 'session-created':
      return previous?.during === 'watch' ? previous : undefined
    default:
      return previous
  }
}
