import type { KVSnapshot } from '../../consul/types.js'
import type { ContenderStateOptions } from './contender-state-model.js'
import { decide } from '../semaphore/decide.js'
import type { Decision } from '../events.js'

/** Default of `fairnessGraceMs`. */
export const DEFAULT_FAIRNESS_GRACE_MS = 2000

/** A decision and the fairness grace it leaves counting. */
export interface PatientDecision {
  readonly decision: Decision
  /** `.lock` ModifyIndex the grace counts for; undefined when not held back by rank. */
  readonly graceLockIndex: bigint | undefined
  /** Scheduler ms from which the rank is ignored; undefined when not held back by rank. */
  readonly patientAt: number | undefined
}

/**
 * `decide` (or the injected `options.decide`) with the liveness guard of the ranking: while this waiter is held back by its rank
 * although slots are free, it counts a grace of `fairnessGraceMs × rank` from the
 * first snapshot showing that `.lock` ModifyIndex; once `now` reaches it, it decides ignoring its
 * rank. Any write to `.lock` (someone took a slot) restarts the count, so a working queue never
 * triggers it, and a stalled one lets the next in line through first.
 *
 * @example
 * const { decision, patientAt } = decidePatiently(snapshot, session, scheduler.now(), state, options)
 * @param snapshot - The prefix snapshot.
 * @param session - This contender's session.
 * @param now - Scheduler time.
 * @param counting - The grace being counted so far (from the previous decision).
 * @param options - Prefix, limit, fairness and grace.
 * @returns The decision and the grace to keep counting.
 */
export function decidePatiently(
  snapshot: KVSnapshot,
  session: string,
  now: number,
  counting: Pick<PatientDecision, 'graceLockIndex' | 'patientAt'>,
  options: ContenderStateOptions,
): PatientDecision {
  const base = { prefix: options.prefix, session, limit: options.limit, fairness: options.fairness }
  const decideStep = options.decide ?? decide
  const fair = decideStep(snapshot, base)
  if (options.fairness === false || fair.type !== 'Wait' || fair.freeSlots === 0) {
    return { decision: fair, graceLockIndex: undefined, patientAt: undefined }
  }
  const graceLockIndex = fair.view.lockIndex
  const graceMs = options.fairnessGraceMs ?? DEFAULT_FAIRNESS_GRACE_MS
  const behind = Math.max(1, fair.rank ?? 0)
  const patientAt =
    counting.graceLockIndex === graceLockIndex && counting.patientAt !== undefined
      ? counting.patientAt
      : now + graceMs * behind
  const decision = now >= patientAt ? decideStep(snapshot, { ...base, ignoreRank: true }) : fair
  return { decision, graceLockIndex, patientAt }
}
