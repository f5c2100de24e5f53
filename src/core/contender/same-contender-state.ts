import type { ContenderState } from './contender-state-model.js'

/**
 * Whether two states are field by field identical (`Object.is` on each field): the step
 * rebuilds the object on every input, this tells whether anything actually changed.
 *
 * @example
 * states.pipe(distinctUntilChanged(sameContenderState))
 * @param a - A state.
 * @param b - Another state.
 * @returns True when no field differs.
 */
export function sameContenderState(a: ContenderState, b: ContenderState): boolean {
  return (Object.keys(a) as (keyof ContenderState)[]).every((key) => Object.is(a[key], b[key]))
}
