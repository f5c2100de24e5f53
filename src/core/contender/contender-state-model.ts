import type { SchedulerLike } from 'rxjs'
import type { KVSnapshot } from '../../base/kv-snapshot.js'
import type { DecideOptions } from '../semaphore/decide.js'
import type { Decision, PrefixProblem, SemaphoreView, TransitionReason } from '../events.js'
import type { LastFailure } from '../last-failure.js'
import type { LeaseMargin } from './lease-deadline.js'
import type { Refencing } from '../semaphore/refencing.js'

/**
 * A write the effects layer should make now: CAS `.lock`, (re)create the contender key, or, for a
 * holder whose job ended while another job of its process waits, the renewal that gives the next
 * job a fresh fencing token (`Refencing`).
 *
 * @example
 * ```ts
 * states.pipe(map((s) => s.write), distinctUntilChanged()).subscribe((action?: ContenderAction) => {
 *   if (action?.type === 'TryAcquire') casLock(action.body, action.cas)
 *   else if (action?.type === 'NotContending') acquireContenderKey()
 * })
 * ```
 */
export type ContenderAction =
  | Extract<
      Decision,
      {
        /** Discriminant: CAS `.lock` ('TryAcquire') or acquire the contender key ('NotContending'). */
        readonly type: 'TryAcquire' | 'NotContending'
      }
    >
  | Refencing

/**
 * The re-fence a holder of `snapshot` makes (see `Refencing`); undefined when the snapshot allows
 * none. Given by the semaphore's protocol; without it, a `refence` input changes nothing.
 * `keepSlot`: the holder is within its quantum on this slot, so it keeps the slot even when others
 * wait (the limit still decides).
 */
export type RefenceStep = (
  snapshot: KVSnapshot,
  session: string,
  keepSlot: boolean,
) => Refencing | undefined

/**
 * The decide step of the state machine: what to write next, from one snapshot. The semaphore's
 * `decide` by default; `decideLeaderKey`, given this contender's value, for the single-key lock. It
 * must be pure: the core calls it again on every snapshot, wake and retry.
 *
 * @example
 * ```ts
 * const lockStep: DecideStep = (snapshot, { prefix, session }) =>
 *   decideLeaderKey(snapshot, { prefix, session, value: 'node-a' })
 * const { state } = contenderStep(before, input, now, { prefix, limit: 1, fairness: false, decide: lockStep })
 * ```
 */
export type DecideStep = (snapshot: KVSnapshot, options: DecideOptions) => Decision

/**
 * Options of `contenderStep`, the per-session step (a contender's machine, `lifeStep`, passes them
 * as its `step` options).
 *
 * @example
 * ```ts
 * const options: ContenderStateOptions = { prefix: 'service/db/lock', limit: 3, fairness: false }
 * const { state, commands } = contenderStep(initialContenderState, input, now, options)
 * ```
 */
export interface ContenderStateOptions extends LeaseMargin {
  /** The semaphore prefix all contenders agree on. */
  readonly prefix: string
  /** The slot limit, a positive integer; `.lock` must agree unless `followLimit`. */
  readonly limit: number
  /** Take the limit `.lock` states (see `PrefixViewOptions.followLimit`). Default false. */
  readonly followLimit?: boolean | undefined
  /** Rank waiters so that a release wakes one CAS attempt (default true); see `decide`. */
  readonly fairness?: boolean | undefined
  /**
   * The sessions a contender of several permits holds besides `session` (its companions, made
   * with it): they are in every acquisition it decides, and it holds only while `.lock` lists them
   * all. Default: none (one permit).
   */
  readonly companionsOf?: ((session: string) => readonly string[]) | undefined
  /**
   * Liveness guard of the ranking: a waiter held back by rank while slots stay free and `.lock`
   * unchanged tries anyway after `fairnessGraceMs × rank` (default 2000 ms), so
   * a stalled front-runner delays others by a bounded time, and the next in line goes first.
   */
  readonly fairnessGraceMs?: number | undefined
  /**
   * The fairness grace that the contenders of one process share on a prefix (`decidePatiently`):
   * a contender that starts behind a front waiter that another one already saw stall behind a
   * free slot goes on counting from then, instead of granting it a whole grace again. Default:
   * each contender counts alone.
   */
  readonly sharedGrace?: SharedGrace | undefined
  /** Scheduler of every timer and of `now()`; default `asyncScheduler`. */
  readonly scheduler?: SchedulerLike | undefined
  /**
   * The decide step (default the semaphore's `decide`): pass one that calls `decideLeaderKey` to run
   * the same state machine (lease deadline, watch failure, release, holding rules) on the
   * single-key lock (see DecideStep).
   */
  readonly decide?: DecideStep | undefined
  /**
   * Ride through a failing watch (default false). A holder whose watch reports `disconnected`
   * keeps `holding` until its lease deadline instead of dropping it at once ('watch-failed'): a
   * session Consul still renews holds its key, so no contender that follows the protocol can prune
   * it meanwhile, and Consul renews every session's TTL when its servers elect a new leader. It
   * drops at once when an answer shows the slot gone (a snapshot without it: 'removed'; the
   * session gone: 'session-invalidated'), and at the deadline ('lease-expired'), which only a
   * successful renewal moves. A contender that did not hold when the watch failed does not rise
   * before the watch answers again. What it trades: an operator's edit of `.lock`, or the deletion
   * of its key, is seen only when Consul answers again (docs/safety.md).
   */
  readonly rideThrough?: boolean | undefined
  /**
   * Try once (`tryAcquire`, `tryLead`): while it does not hold, the step ends the run (`end`,
   * why 'refused') at the first refusal (`tryOnceRefused`) instead of waiting. Default false.
   */
  readonly tryOnce?: boolean | undefined
  /** The re-fence between two jobs of a process (`refence` inputs); default: none. */
  readonly refence?: RefenceStep | undefined
  /**
   * How long a holder that re-fences keeps its slot while others wait (ms, counted from when it
   * took the slot; `slotQuantumMs`): a job that ends within it hands its slot to the next job of
   * its process, a job that ends after it hands the slot on. Default SLOT_QUANTUM_MS.
   */
  readonly quantumMs?: number | undefined
}

/**
 * A fairness grace being counted, as the contenders of one process share it on one prefix: the
 * waiter first in line when it started, and since when (scheduler ms).
 *
 * @example
 * ```ts
 * let last: CountedGrace | undefined
 * const sharedGrace: SharedGrace = { recall: () => last, remember: (grace) => (last = grace) }
 * ```
 */
export interface SharedGrace {
  /** The grace another contender counted last, if any. */
  readonly recall: () => CountedGrace | undefined
  /** Records the grace a contender counts now. */
  readonly remember: (grace: CountedGrace) => void
}

/** A fairness grace being counted: whose stall it measures, and since when. */
export interface CountedGrace {
  /** The waiter first in line when the count started. */
  readonly graceFront: string
  /** Scheduler ms at which it started. */
  readonly graceSince: number
}

/**
 * Where a contender is, derived from its facts after every event (`settleContender`): one name
 * for what is otherwise a combination of fields.
 *
 * ```
 * idle ─► joining ─► waiting ⇄ acquiring ─► holding ⇄ doubtful
 *              (any) ─► stopped (a prefix problem)   (any) ─► retired (released / session gone)
 * ```
 *
 * - `idle`: no session yet;
 * - `joining`: a session, but its contender key is not in the last snapshot (or none was seen);
 * - `waiting`: in the queue, with no free slot its turn allows (`Wait`);
 * - `acquiring`: its turn: the CAS of `.lock` is asked for or in flight (`TryAcquire`);
 * - `holding`: `holding` is true (with `rideThrough`, also while its watch is down: `connected`
 *   false and `lastFailure` tell that it rides on its lease);
 * - `doubtful`: `.lock` lists it, but the watch, the lease or the session is in doubt, or its
 *   fencing token is still to come (a listing older than the `.lock` that lists it);
 * - `stopped`: the prefix has a problem no retry fixes (conflict, limit conflict, corrupt);
 * - `retired`: released, or its session is gone; no more writes for this session.
 */
export type ContenderPhase =
  'idle' | 'joining' | 'waiting' | 'acquiring' | 'holding' | 'doubtful' | 'stopped' | 'retired'

/**
 * Everything the core knows about one contender after each event. `holding` is the library's
 * safety signal; `write` is the write the effects layer should make.
 *
 * @example
 * ```ts
 * contenderStates(port, lifeOptions).subscribe((s: ContenderState) => {
 *   if (s.problem) console.error('prefix problem:', s.problem.type)
 *   else console.log(s.holding, s.reason, s.fencingToken)
 * })
 * ```
 */
export interface ContenderState {
  /** Where the contender is (derived from the other fields; see ContenderPhase). */
  readonly phase: ContenderPhase
  /** The current session, from the last `session-created`. */
  readonly session: string | undefined
  /**
   * True only while `.lock` lists this live session, the watch is connected and the lease valid
   * (with `rideThrough`, a holder stays true while the watch is down, until the lease deadline).
   */
  readonly holding: boolean
  /** Why `holding` last changed; undefined before the first change. */
  readonly reason: TransitionReason | undefined
  /**
   * ModifyIndex of `.lock` written by the CAS that won the slot (or, if holding was first seen in
   * a snapshot, `.lock`'s ModifyIndex in it). Kept across a watch failure or a late renewal; cleared
   * when the tenure ends. Larger tokens belong to later tenures of the same `.lock`.
   */
  readonly fencingToken: bigint | undefined
  /** Scheduler ms at which the lease is no longer trusted (`leaseDeadline`). */
  readonly leaseDeadline: number | undefined
  /** The watch delivered a snapshot since its last failure. */
  readonly connected: boolean
  /** The last snapshot used for a decision. */
  readonly snapshot: KVSnapshot | undefined
  /** The last decision (undefined before a snapshot and a session are both known). */
  readonly decision: Decision | undefined
  /** The view of the last decision that had one. */
  readonly view: SemaphoreView | undefined
  /** The prefix problem of the last decision, if it was one. */
  readonly problem: PrefixProblem | undefined
  /**
   * The write to make now, or undefined. The object is kept (same reference) while the action is
   * the same, so `distinctUntilChanged()` on `write` yields each action once. Cleared when the CAS
   * answers, when the watch fails, when the lease lapses, after release or session loss.
   */
  readonly write: ContenderAction | undefined
  /** `.lock` is believed to list this session (from the last snapshot or a later CAS). */
  readonly listed: boolean
  /** This session is done: released by the user, or gone in Consul. No more writes for it. */
  readonly retired: 'released' | 'session-gone' | undefined
  /** True once `holding` was true in the current tenure (a later rise is 'restored'). */
  readonly heldInTenure: boolean
  /**
   * The job that held this tenure's fencing token has ended and another waits: `holding` stays
   * false until the re-fence (`write`) writes a new token or rotates this contender to the tail.
   */
  readonly refencing: boolean
  /**
   * The re-fence asked for keeps the slot even when others wait: the job before it ended within
   * the holder's quantum on this slot (`slotSince`). Meaningful only while `refencing`.
   */
  readonly keepSlot: boolean
  /**
   * Scheduler ms at which this contender took the slot it is listed on (its first holding in the
   * tenure); a re-fence that keeps the slot keeps it too. Undefined while not listed.
   */
  readonly slotSince: number | undefined
  /**
   * A Refence written ahead (a `refence` input with `ahead`) is out: the holder keeps holding
   * under its token meanwhile. Its answer leaves `aheadToken`, or nothing if it did not keep the
   * slot; a `refence` input that comes first makes it the refence of the job that ended.
   */
  readonly aheadOut: boolean
  /**
   * The token a Refence written ahead gave the next job: the `refence` input of the job that
   * ends takes it at once, with no write, if the slot is still kept then (`keepsSlot`).
   * Cleared when the tenure ends.
   */
  readonly aheadToken: bigint | undefined
  /** ModifyIndex of this contender's own successful CAS: older snapshots are stale. */
  readonly casIndex: bigint | undefined
  /** The waiter first in line when the fairness grace started counting (`decidePatiently`). */
  readonly graceFront: string | undefined
  /** Scheduler ms at which the fairness grace started counting. */
  readonly graceSince: number | undefined
  /** Scheduler ms from which this waiter ignores its rank (liveness guard), if counting. */
  readonly patientAt: number | undefined
  /**
   * Scheduler ms at which to decide again on the last snapshot, after a `retry` event (a write
   * refused by Consul's lock-delay, which no snapshot shows ending). Cleared by any new decision.
   */
  readonly retryAt: number | undefined
  /** Scheduler ms of the next timer the operator must fire (lease deadline, grace or retry). */
  readonly wakeAt: number | undefined
  /**
   * The failure the watch or the renewals are retrying now (`lastFailureAfter`), so that a
   * contender that keeps failing says why; undefined once that loop succeeds again.
   */
  readonly lastFailure: LastFailure | undefined
}

/** The state before any event: not holding, not connected, nothing known. */
export const initialContenderState: ContenderState = {
  phase: 'idle',
  session: undefined,
  holding: false,
  reason: undefined,
  fencingToken: undefined,
  leaseDeadline: undefined,
  connected: false,
  snapshot: undefined,
  decision: undefined,
  view: undefined,
  problem: undefined,
  write: undefined,
  listed: false,
  retired: undefined,
  heldInTenure: false,
  refencing: false,
  keepSlot: false,
  slotSince: undefined,
  aheadOut: false,
  aheadToken: undefined,
  casIndex: undefined,
  graceFront: undefined,
  graceSince: undefined,
  patientAt: undefined,
  retryAt: undefined,
  wakeAt: undefined,
  lastFailure: undefined,
}
