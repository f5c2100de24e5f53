import type { KVSnapshot } from '../../base/kv-snapshot.js'
import type { ContenderStateOptions } from './contender-state-model.js'
import { decide, type DecideOptions } from '../semaphore/decide.js'
import type { Decision } from '../events.js'

/** Default of `fairnessGraceMs`. */
export const DEFAULT_FAIRNESS_GRACE_MS = 2000

/** A decision and the fairness grace it leaves counting. */
export interface PatientDecision {
  readonly decision: Decision
  /**
   * The waiter first in line when the grace started counting; undefined when not counting. The
   * count starts over only when that waiter takes a slot (the queue moves): not when it leaves
   * (a dead contender's key expiring), and not when others write `.lock`.
   */
  readonly graceFront: string | undefined
  /** Scheduler ms at which the grace started counting; undefined when not counting. */
  readonly graceSince: number | undefined
  /** Scheduler ms from which the rank is ignored; undefined when not counting. */
  readonly patientAt: number | undefined
}

/** The grace of a waiter `rank` places behind the front: one grace, plus a quarter per place. */
export function graceFor(rank: number, graceMs: number): number {
  return graceMs + (Math.max(1, rank) - 1) * (graceMs / 4)
}

const notCounting = { graceFront: undefined, graceSince: undefined, patientAt: undefined }

/**
 * The decision of `session` on `snapshot` with the contender's decide step (the semaphore's
 * `decide` by default): by its rank, which the coordinator asks of each member and the step starts
 * from when no decision came with a snapshot, or, with `ignoreRank`, that of a waiter whose
 * fairness grace is over.
 *
 * @example
 * decideByRank(snapshot, 'a1b2', { prefix: 'svc/lock', limit: 3 }) // { type: 'Wait', rank: 1, ... }
 */
export function decideByRank(
  snapshot: KVSnapshot,
  session: string,
  options: Pick<
    ContenderStateOptions,
    'prefix' | 'limit' | 'followLimit' | 'fairness' | 'decide' | 'companionsOf'
  >,
  ignoreRank = false,
): Decision {
  return (options.decide ?? decide)(snapshot, decideOptions(session, options, ignoreRank))
}

/**
 * What `decideByRank` decides with, for a caller that decides again and again with the same ones
 * (the coordinator's member, once per snapshot): made once, not per decision.
 *
 * @example
 * const options = decideOptions(session, step)
 * const decision = step.decide(snapshot, options) // as decideByRank(snapshot, session, step)
 */
export function decideOptions(
  session: string,
  options: Pick<
    ContenderStateOptions,
    'prefix' | 'limit' | 'followLimit' | 'fairness' | 'companionsOf'
  >,
  ignoreRank = false,
): DecideOptions {
  const companions = options.companionsOf?.(session)
  return {
    prefix: options.prefix,
    session,
    limit: options.limit,
    followLimit: options.followLimit,
    fairness: options.fairness,
    ...(ignoreRank ? { ignoreRank } : {}),
    ...(companions !== undefined && companions.length > 0 ? { companions } : {}),
  }
}

/**
 * `decide` (or the injected `options.decide`) with the liveness guard of the ranking. A waiter
 * held back by its rank while it sees a free slot starts counting a grace (`graceFor`: the
 * `fairnessGraceMs`, plus a quarter of it for each place further back, so the next in line still
 * goes first); once `now` reaches it, it decides ignoring its rank whenever it sees a free slot.
 * The count starts over only when the waiter first in line takes a slot: a working queue never
 * lets the grace run out, while a queue whose head is dead (killed, frozen or cut off, its key
 * kept until Consul expires its session) or whose free slots go to contenders that do not queue
 * (`consul lock`, which writes `.lock` on every acquisition) cannot hold a waiter back for long.
 * With `options.sharedGrace`, a contender that starts counting takes up the count another
 * contender of its process keeps for the same front waiter: a process that contends again and
 * again (a new contender per job) does not grant a stalled front waiter a new grace each time.
 *
 * @example
 * const { decision, patientAt } = decidePatiently(snapshot, session, scheduler.now(), state, options)
 * @param snapshot - The prefix snapshot.
 * @param session - This contender's session.
 * @param now - Scheduler time.
 * @param counting - The grace being counted so far (from the previous decision).
 * @param options - Prefix, limit, fairness and grace.
 * @param given - The decision on `snapshot` by its rank, when already made (by the coordinator).
 * @returns The decision and the grace to keep counting.
 */
export function decidePatiently(
  snapshot: KVSnapshot,
  session: string,
  now: number,
  counting: Pick<PatientDecision, 'graceFront' | 'graceSince'>,
  options: ContenderStateOptions,
  given?: Decision,
): PatientDecision {
  const fair = given ?? decideByRank(snapshot, session, options)
  if (options.fairness === false || fair.type !== 'Wait' || fair.rank === undefined) {
    return { decision: fair, ...notCounting }
  }
  const front = fair.view.waiting[0]?.session
  // A contender that is not counting yet takes up the count of another contender of its process
  // when that one measures the stall of the same front waiter.
  const shared = counting.graceSince === undefined ? options.sharedGrace?.recall() : undefined
  const from = shared !== undefined && shared.graceFront === front ? shared : counting
  const moved = from.graceFront !== undefined && fair.view.liveHolders.includes(from.graceFront)
  // Slots the front waiter cannot use (it asks for more permits than are free) are no stall: the
  // waiters behind it wait for it, so that a request of several permits is not passed for ever.
  const stalled = fair.freeSlots >= (fair.view.waiting[0]?.weight ?? 1)
  const since =
    from.graceSince !== undefined && !moved ? from.graceSince : stalled ? now : undefined
  if (since === undefined) return { decision: fair, ...notCounting }
  if (front !== undefined) options.sharedGrace?.remember({ graceFront: front, graceSince: since })
  const graceMs = options.fairnessGraceMs ?? DEFAULT_FAIRNESS_GRACE_MS
  const patientAt = since + graceFor(fair.rank, graceMs)
  const decision =
    stalled && now >= patientAt ? decideByRank(snapshot, session, options, true) : fair
  return { decision, graceFront: front, graceSince: since, patientAt }
}
