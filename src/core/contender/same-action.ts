import type { ContenderAction } from './contender-state-model.js'

/**
 * Whether two actions ask for the same write: the same CAS (index and body bytes) or the creation
 * of the same contender key. Used to keep `next` the same object while nothing new is asked.
 *
 * @example
 * sameAction(previous.next, candidate) ? previous.next : candidate
 * @param a - An action, or undefined.
 * @param b - Another action, or undefined.
 * @returns True when both ask for the same write (or both are undefined).
 */
export function sameAction(
  a: ContenderAction | undefined,
  b: ContenderAction | undefined,
): boolean {
  if (a === undefined || b === undefined) return a === b
  if (a.type === 'NotContending' || b.type === 'NotContending') return a.type === b.type
  return (
    a.cas === b.cas && a.body.length === b.body.length && a.body.every((x, i) => x === b.body[i])
  )
}
