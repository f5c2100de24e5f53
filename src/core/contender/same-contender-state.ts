import { initialContenderState, type ContenderState } from './contender-state-model.js'

/** A state's fields, listed once: every state has the same ones (the initial state's). */
const FIELDS = Object.keys(initialContenderState) as (keyof ContenderState)[]

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
  return FIELDS.every((key) => Object.is(a[key], b[key]))
}
