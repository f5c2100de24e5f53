/** Test-only: a contender's step called by hand, with no timer and no subscription. */
import type { ContenderInput } from '../../src/core/contender/contender-input.js'
import {
  initialContenderState,
  type ContenderState,
  type ContenderStateOptions,
} from '../../src/core/contender/contender-state-model.js'
import { contenderStep } from '../../src/core/contender/contender-step.js'

/**
 * The state after each input, each `[input, at]` stepped on `contenderStep` from the initial
 * state, one plain call each.
 */
export function statesAfter(
  options: ContenderStateOptions,
  inputs: readonly (readonly [ContenderInput, number])[],
): ContenderState[] {
  const states: ContenderState[] = []
  let state = initialContenderState
  for (const [input, at] of inputs) {
    state = contenderStep(state, input, at, options).state
    states.push(state)
  }
  return states
}
