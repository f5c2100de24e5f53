import type { Decision, PrefixProblem } from '../events.js'

/**
 * Whether a decision is a prefix problem (CorruptLock, Conflict, LimitConflict): nothing may be
 * written, and no retry fixes it.
 *
 * @example
 * if (isPrefixProblem(decision)) console.error(decision.type, decision.key)
 * @param decision - A decision.
 * @returns True for the three problem variants.
 */
export function isPrefixProblem(decision: Decision): decision is Decision & PrefixProblem {
  return (
    decision.type === 'CorruptLock' ||
    decision.type === 'Conflict' ||
    decision.type === 'LimitConflict'
  )
}
