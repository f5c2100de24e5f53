import type {
  ContenderAction,
  ContenderPhase,
  ContenderState,
  ContenderStateOptions,
} from './contender-state-model.js'
import type { TransitionReason } from '../events.js'

/**
 * Derives what follows from the facts after an input: `holding` (listed, connected, lease valid,
 * not retired), the `reason` of a change, the `write` to make and the next timer `wakeAt`.
 *
 * With `options.rideThrough`, a holder rides through a watch failure: it stays holding while the
 * watch is down, for as long as it stays listed, its lease valid and its session not retired.
 * Only a holder rides: a contender that did not hold when the watch failed (or that dropped while
 * it was down) rises only once the watch answers again.
 *
 * ```
 * events:  C-l-d           C: session created (TTL 100: lease deadline 90), d: disconnected
 * default: f-t-f           'watch-failed'
 * ride:    f-t 87ms f      'lease-expired' at 90, unless a renewal moves the deadline first
 * ```
 *
 * @example
 * settleContender(before, applyContenderInput(before, input, now, options), now, options)
 * @param prev - The state before the input.
 * @param s - The state with the input's facts applied.
 * @param now - Scheduler time of the input.
 * @param options - The contender's options (`rideThrough`).
 * @returns The settled state.
 */
export function settleContender(
  prev: ContenderState,
  s: ContenderState,
  now: number,
  options: Pick<ContenderStateOptions, 'rideThrough' | 'refence'> = {},
): ContenderState {
  const leaseValid = s.leaseDeadline !== undefined && now < s.leaseDeadline
  // The watch vouches for the listing; without it, only a holder riding on its lease keeps it.
  const watched = s.connected || (options.rideThrough === true && prev.holding)
  const holding = s.listed && watched && leaseValid && s.retired === undefined && !s.refencing
  const rising = holding && !prev.holding
  const reason: TransitionReason | undefined = rising
    ? s.heldInTenure
      ? 'restored'
      : 'acquired'
    : !holding && prev.holding
      ? fallReason(s, leaseValid)
      : s.reason
  const open = s.connected && leaseValid && s.retired === undefined
  const candidate =
    s.decision === prev.decision && s.refencing === prev.refencing && s.aheadOut === prev.aheadOut
      ? s.write
      : actionOf(s, options)
  const write = !open ? undefined : sameAction(prev.write, candidate) ? prev.write : candidate
  return {
    ...s,
    phase: phaseOf(s, holding),
    holding,
    reason,
    heldInTenure: s.heldInTenure || rising,
    // The slot is counted from its first holding, across the re-fences that keep it.
    slotSince: !s.listed ? undefined : (s.slotSince ?? (holding ? now : undefined)),
    write,
    wakeAt: earliestAfter(now, s.leaseDeadline, earliestAfter(now, s.patientAt, s.retryAt)),
  }
}

/** The phase the facts of a state (and whether it holds now) put the contender in. */
function phaseOf(s: ContenderState, holding: boolean): ContenderPhase {
  if (s.retired !== undefined) return 'retired'
  if (s.problem !== undefined) return 'stopped'
  if (holding) return 'holding'
  // A holder between two jobs: writing the renewal that gives the next one its token.
  if (s.refencing) return 'acquiring'
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

function fallReason(s: ContenderState, leaseValid: boolean): TransitionReason {
  if (s.retired === 'released') return 'released'
  if (s.retired === 'session-gone') return 'session-invalidated'
  if (!leaseValid) return 'lease-expired'
  // The job that held the token ended: the slot is released to the next job's renewal.
  if (s.refencing) return 'released'
  // Before the watch: a riding holder that an answer shows unlisted was removed, connected or not.
  if (!s.listed) return 'removed'
  return 'watch-failed'
}

function actionOf(
  s: ContenderState,
  options: Pick<ContenderStateOptions, 'refence'>,
): ContenderAction | undefined {
  const decision = s.decision
  // A renewal is written from a snapshot that shows this contender holding (a CAS that made it a
  // holder may have answered before the watch showed it): until then, nothing.
  if (s.refencing || s.aheadOut) {
    const next =
      decision?.type === 'Held' && s.snapshot !== undefined && s.session !== undefined
        ? options.refence?.(s.snapshot, s.session, s.keepSlot)
        : undefined
    // Written ahead, the holder keeps its slot or writes nothing (its job's end decides).
    return s.refencing || next?.type === 'Refence' ? next : undefined
  }
  if (decision?.type === 'Held') return undefined
  return decision?.type === 'TryAcquire' || decision?.type === 'NotContending'
    ? decision
    : undefined
}

/** The earlier of two times after `now` (undefined when neither is). */
function earliestAfter(
  now: number,
  a: number | undefined,
  b: number | undefined,
): number | undefined {
  const first = a !== undefined && a > now ? a : undefined
  const second = b !== undefined && b > now ? b : undefined
  if (first === undefined || second === undefined) return first ?? second
  return Math.min(first, second)
}

/**
 * Whether two actions ask for the same write: the same CAS (index and body bytes) or the creation
 * of the same contender key. Used to keep `write` the same object while nothing new is asked.
 *
 * @example
 * sameAction(previous.write, candidate) ? previous.write : candidate
 * @param a - An action, or undefined.
 * @param b - Another action, or undefined.
 * @returns True when both ask for the same write (or both are undefined).
 */
function sameAction(a: ContenderAction | undefined, b: ContenderAction | undefined): boolean {
  if (a === undefined || b === undefined) return a === b
  if (a.type === 'NotContending' || b.type === 'NotContending') return a.type === b.type
  // A Refence reads `.lock` rather than checking its index: one out is as good as a newer one.
  if (a.type === 'Refence' || b.type === 'Refence') return a.type === b.type
  if (a.type === 'Rotate' || b.type === 'Rotate') {
    return (
      a.type === 'Rotate' &&
      b.type === 'Rotate' &&
      a.cas === b.cas &&
      a.handOff?.heir === b.handOff?.heir
    )
  }
  return (
    a.cas === b.cas && a.body.length === b.body.length && a.body.every((x, i) => x === b.body[i])
  )
}
