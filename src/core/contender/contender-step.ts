import type { ContenderInput } from './contender-input.js'
import type {
  ContenderAction,
  ContenderState,
  ContenderStateOptions,
} from './contender-state-model.js'
import { applyContenderInput } from './apply-contender-input.js'
import { lastFailureAfter } from './last-failure.js'
import { settleContender } from './settle-contender.js'
import { tryOnceRefused } from './try-once-refused.js'

/**
 * What the interpreter of a contender does after a step, in the order given.
 *
 * - `write`: start this write (CAS `.lock`, or acquire the contender key), cancelling the one in
 *   flight; feed its answers back as inputs;
 * - `cancel-write`: the write in flight is no longer wanted (the watch failed, the lease lapsed,
 *   the CAS answered): unsubscribe it;
 * - `wake`: set the one wake-up at `at` (scheduler ms), replacing the one before; `at` undefined
 *   clears it. When it fires, feed `{ type: 'wake' }`;
 * - `end`: this session's run is over: tear down its write, wake-up, lease and watch, then release
 *   the slot (CAS out of `.lock`, delete the key, destroy the session) when `release` is true.
 *   `why` says what ended it: the user's release, the session's loss, a prefix problem that no
 *   retry fixes (`state.problem`), or a try-once contender's refusal. A session lost while `.lock`
 *   listed it is released too: Consul deleted its key with it, but `.lock` names it until
 *   someone prunes it, and a waiter that long-polls only its own key would see that free slot
 *   only at its next listing; the process, still alive, hands it on at once. Nothing follows an
 *   `end`: the interpreter steps this session no more.
 */
export type ContenderCommand =
  | { readonly type: 'write'; readonly action: ContenderAction }
  | { readonly type: 'cancel-write' }
  | { readonly type: 'wake'; readonly at: number | undefined }
  | {
      readonly type: 'end'
      readonly why: 'released' | 'session-gone' | 'problem' | 'refused'
      readonly release: boolean
    }

/** One step of a contender: the state after an input, and what to do about it. */
export interface ContenderStep {
  readonly state: ContenderState
  readonly commands: readonly ContenderCommand[]
}

/**
 * The contender of either recipe as one pure step: the state before, one input and the scheduler
 * time in; the state after and the commands that carry it out: the per-session half of a
 * contender's machine (`lifeStep`), which turns these commands into its own for the interpreter.
 *
 * A snapshot input may carry this contender's decision on it (`decision`), decided once per
 * snapshot by whoever delivered it; without one, the step decides (`options.decide`). A decision
 * is taken once: the same object given again (the snapshot delivered twice) is decided afresh.
 *
 * ```
 * state ─┐
 * input ─┼─► apply the input's facts ─► settle holding / reason / next / wakeAt ─► state'
 * now ───┘                                      └─► commands: write | cancel-write | wake | end
 * ```
 *
 * @example
 * const { state, commands } = contenderStep(before, { type: 'release-requested' }, now, options)
 * // commands: [{ type: 'cancel-write' }?, { type: 'end', why: 'released', release: true }]
 * @param state - The state before the input.
 * @param input - An event of the effects layer, or the interpreter's `wake`/`end`.
 * @param now - Scheduler time of the input.
 * @param options - The contender's options.
 * @returns The state after the input, and the commands to carry out.
 */
export function contenderStep(
  state: ContenderState,
  input: ContenderInput,
  now: number,
  options: ContenderStateOptions,
): ContenderStep {
  // `wake` means the timer set for `wakeAt` fired. A host timer can fire a little before the
  // scheduler's clock reaches it (Node measures timers from its cached loop time, and `wakeAt` can
  // be fractional): taken at face value such a wake finds nothing due, sets no new timer, and the
  // lease deadline or retry it was for would never be acted on. So a wake counts as `wakeAt` at
  // the earliest; acting a moment early on a deadline only drops `holding` sooner.
  const at = input.type === 'wake' && state.wakeAt !== undefined ? Math.max(now, state.wakeAt) : now
  const applied = applyContenderInput(state, input, at, options)
  const settled = settleContender(state, applied, at, options)
  const lastFailure = lastFailureAfter(state.lastFailure, input)
  const after = lastFailure === settled.lastFailure ? settled : { ...settled, lastFailure }
  return { state: after, commands: commandsBetween(state, after, options) }
}

function commandsBetween(
  before: ContenderState,
  after: ContenderState,
  options: ContenderStateOptions,
): ContenderCommand[] {
  const commands: ContenderCommand[] = []
  if (after.write !== before.write) {
    commands.push(
      after.write === undefined ? { type: 'cancel-write' } : { type: 'write', action: after.write },
    )
  }
  if (after.wakeAt !== before.wakeAt) commands.push({ type: 'wake', at: after.wakeAt })
  const end = endOf(before, after, options)
  if (end !== undefined) commands.push(end)
  return commands
}

/** Whether the run of this session is over after the step, and whether to release its slot. */
function endOf(
  before: ContenderState,
  after: ContenderState,
  options: ContenderStateOptions,
): Extract<ContenderCommand, { type: 'end' }> | undefined {
  if (after.problem !== undefined) return { type: 'end', why: 'problem', release: true }
  if (after.retired === 'session-gone') {
    // The slot `.lock` still lists under the lost session is given back (see `end` above): the
    // contender believed it listed, or its last view found it a dead holder (its key gone).
    const session = before.session
    const listed =
      before.listed ||
      (session !== undefined && before.view?.deadHolders.includes(session) === true)
    return { type: 'end', why: 'session-gone', release: before.retired === undefined && listed }
  }
  if (after.retired === 'released') return { type: 'end', why: 'released', release: true }
  // A try-once contender that does not hold gives up at the first refusal (`tryOnceRefused`).
  if (options.tryOnce === true && !after.holding && tryOnceRefused(after)) {
    return { type: 'end', why: 'refused', release: true }
  }
  return undefined
}
