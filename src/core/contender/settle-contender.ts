import type { ContenderInput } from './contender-input.js'
import type { ContenderAction, ContenderPhase, ContenderState } from './contender-state-model.js'
import type { Decision, TransitionReason } from '../events.js'
import { sameAction } from './same-action.js'

/**
 * Derives what follows from the facts after an input: `holding` (listed, connected, lease valid,
 * not retired), the `reason` of a change, the `next` write and the next timer `wakeAt`.
 *
 * @example
 * settleContender(before, applyContenderInput(before, input, now, options), input, now)
 * @param prev - The state before the input.
 * @param s - The state with the input's facts applied.
 * @param input - The input.
 * @param now - Scheduler time of the input.
 * @returns The settled state.
 */
export function settleContender(
  prev: ContenderState,
  s: ContenderState,
  input: ContenderInput,
  now: number,
): ContenderState {
  const leaseValid = s.leaseDeadline !== undefined && now < s.leaseDeadline
  const ending = input.type === 'end'
  const holding = s.listed && s.connected && leaseValid && s.retired === undefined && !ending
  const rising = holding && !prev.holding
  const reason: TransitionReason | undefined = rising
    ? s.heldInTenure
      ? 'restored'
      : 'acquired'
    : !holding && prev.holding
      ? fallReason(s, leaseValid, ending)
      : s.reason
  const open = s.connected && leaseValid && s.retired === undefined && !ending
  const candidate = s.decision === prev.decision ? s.next : actionOf(s.decision)
  const next = !open ? undefined : sameAction(prev.next, candidate) ? prev.next : candidate
  return {
    ...s,
    phase: phaseOf(s, holding),
    holding,
    reason,
    heldInTenure: s.heldInTenure || rising,
    next,
    wakeAt: earliestAfter(now, [s.leaseDeadline, s.patientAt, s.retryAt]),
  }
}

/** The phase the facts of a state (and whether it holds now) put the contender in. */
function phaseOf(s: ContenderState, holding: boolean): ContenderPhase {
  if (s.retired !== undefined) return 'retired'
  if (s.problem !== undefined) return 'stopped'
  if (holding) return 'holding'
  if (s.listed) return 'doubtful'
  if (s.session === undefined) return 'idle'
  switch (s.decision?.type) {
    case 'Wait':
      return 'waiting'
    case 'TryAcquire':
      return 'acquiring'
    case 'Held':
      return 'doubtful'
    default:
      return 'joining'
  }
}

function fallReason(s: ContenderState, leaseValid: boolean, ending: boolean): TransitionReason {
  if (ending || s.retired === 'released') return 'released'
  if (s.retired === 'session-gone') return 'session-invalidated'
  if (!leaseValid) return 'lease-expired'
  if (!s.connected) return 'watch-failed'
  return 'removed'
}

function actionOf(decision: Decision | undefined): ContenderAction | undefined {
  return decision?.type === 'TryAcquire' || decision?.type === 'NotContending'
    ? decision
    : undefined
}

function earliestAfter(now: number, times: readonly (number | undefined)[]): number | undefined {
  const future = times.filter((t): t is number => t !== undefined && t > now)
  return future.length === 0 ? undefined : Math.min(...future)
}
