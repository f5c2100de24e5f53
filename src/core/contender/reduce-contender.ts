import { applyContenderInput } from './apply-contender-input.js'
import type { ContenderInput } from './contender-input.js'
import type { ContenderState, ContenderStateOptions } from './contender-state-model.js'
import { lastFailureAfter } from './last-failure.js'
import { settleContender } from './settle-contender.js'

/**
 * The contender state machine as a pure reducer: one input and the scheduler time in, the next
 * state out. The prefix coordinator's members step it on each event and fire the timer it asks for
 * (`wakeAt`); `contenderState` is the same machine as an operator (`scan`), for marble specs.
 *
 * @example
 * const next = reduceContender(state, { type: 'release-requested' }, scheduler.now(), options)
 * @param state - The state before the input.
 * @param input - An event of the effects layer, or the operator's `wake`/`end`.
 * @param now - Scheduler time of the input.
 * @param options - The contender's options.
 * @returns The state after the input.
 */
export function reduceContender(
  state: ContenderState,
  input: ContenderInput,
  now: number,
  options: ContenderStateOptions,
): ContenderState {
  // `wake` means the operator's timer for `wakeAt` fired. A host timer can fire a little before
  // the scheduler's clock reaches it (Node measures timers from its cached loop time, and `wakeAt`
  // can be fractional): taken at face value such a wake finds nothing due, sets no new timer, and
  // the lease deadline or retry it was for would never be acted on. So a wake counts as `wakeAt`
  // at the earliest; acting a moment early on a deadline only drops `holding` sooner.
  const at = input.type === 'wake' && state.wakeAt !== undefined ? Math.max(now, state.wakeAt) : now
  const applied = applyContenderInput(state, input, at, options)
  const settled = settleContender(state, applied, input, at, options)
  const lastFailure = lastFailureAfter(state.lastFailure, input)
  return lastFailure === settled.lastFailure ? settled : { ...settled, lastFailure }
}
