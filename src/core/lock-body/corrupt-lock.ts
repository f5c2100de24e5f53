import type { PrefixProblem } from '../events.js'

/** A `.lock` whose body cannot be read: the library never writes over it. */
export type CorruptLock = Extract<PrefixProblem, { readonly type: 'CorruptLock' }>

/**
 * Builds the CorruptLock problem for a key.
 *
 * @example
 * corruptLock('svc/lock/.lock', 'not JSON')
 * @param key - The `.lock` key.
 * @param reason - What is wrong with its body.
 * @returns The problem.
 */
export function corruptLock(key: string, reason: string): CorruptLock {
  return { type: 'CorruptLock', key, reason }
}
