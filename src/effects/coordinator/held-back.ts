import {
  Observable,
  type OperatorFunction,
  type SchedulerAction,
  type SchedulerLike,
  type Subscription,
} from 'rxjs'
import type { KVSnapshot, WatchEvent } from '../../base/kv-snapshot.js'
import type { DecidedSnapshot } from '../../core/contender/contender-input.js'
import type { Decision, Handed } from '../../core/events.js'
import { holdsBack } from '../../core/semaphore/hold-back.js'
import type { FollowEvent } from './contender-port.js'

/**
 * The snapshots a run's waiter holds back (`holdsBack`), kept out of its machine: the machine sets
 * the hold after each snapshot it steps on (`hold-back`), this keeps the last one held back, and
 * at the end of the hold hands it over (`refresh-due`), with one timer set when the first is kept.
 * A waiter far back in a prefix of thousands of contenders thus costs one decision (a lookup in
 * the prefix's shared view) per snapshot, one step per refresh, and nothing while the prefix is
 * quiet.
 *
 * ```
 * hold:      |-------------------|         (until, from the machine's hold-back)
 * offered:   --a--b--c-----------          far back: kept, each replacing the last
 * handed:    --------------------r         r: refresh-due with c, at until
 * ```
 *
 * @example
 * const held = new HeldBack(scheduler)
 * followWatch(held, run, event) // the run's follow, on each event of the watch
 * held.hold(until) // the machine's hold-back command
 * held.clear() // the run's follow ends
 */
export class HeldBack {
  private until: number | undefined = undefined
  // The last snapshot held back and the decision on it, as two fields: holding one allocates nothing.
  private snapshot: KVSnapshot | undefined = undefined
  private decision: Decision | undefined = undefined
  /** The refresh of what is kept: set when the first snapshot is kept, for the end of the hold. */
  private refresh: Subscription | undefined = undefined
  /** Where the refresh hands what is kept: the run that offered the first of it. */
  private sink: FollowSink | undefined = undefined

  constructor(private readonly scheduler: SchedulerLike) {}

  /** The machine's hold (undefined: none), in place of the last one: what it kept is dropped. */
  hold(until: number | undefined): void {
    this.until = until
    this.forget()
  }

  /** The last snapshot held back, if any, which is no longer kept. */
  take(): DecidedSnapshot | undefined {
    const { snapshot, decision } = this
    this.forget()
    return snapshot === undefined ? undefined : { type: 'snapshot', snapshot, decision }
  }

  /** A new run, or the end of one: no hold, nothing kept, no refresh. */
  clear(): void {
    this.until = undefined
    this.forget()
  }

  /**
   * A decided snapshot of the watch: `pass` (it reaches the machine, and anything kept is older,
   * dropped with its refresh), `held` or, for the first held since the last that passed,
   * `first-held`: then `sink` is handed it, or a later one held back, as `refresh-due` at the end
   * of the hold, unless it is dropped before. A reset is never held.
   */
  offer(
    snapshot: KVSnapshot,
    reset: boolean | undefined,
    decision: Decision,
    sink: FollowSink,
  ): Offered {
    // Without a hold (most snapshots of most contenders) the clock is not read.
    const { until } = this
    const now = until === undefined ? 0 : this.scheduler.now()
    if (reset === true || until === undefined || !holdsBack(until, decision, now)) {
      this.forget()
      return 'pass'
    }
    const first = this.snapshot === undefined
    this.snapshot = snapshot
    this.decision = decision
    if (!first) return 'held'
    this.sink = sink
    this.refresh = this.scheduler.schedule(refreshNow, until - now, this)
    return 'first-held'
  }

  /** The end of the hold (the refresh's work): what is kept goes to its sink as `refresh-due`. */
  refreshed(): void {
    this.refresh = undefined
    const { sink } = this
    const held = this.take()
    if (held !== undefined) sink?.next({ type: 'refresh-due', held })
  }

  private forget(): void {
    this.snapshot = undefined
    this.decision = undefined
    this.sink = undefined
    if (this.refresh === undefined) return
    this.refresh.unsubscribe()
    this.refresh = undefined
  }
}

/** The refresh's work: one module-level function for every hold (its state says which). */
function refreshNow(this: SchedulerAction<HeldBack>, held?: HeldBack): void {
  held?.refreshed()
}

/** What becomes of a snapshot offered to `HeldBack`. */
export type Offered = 'pass' | 'held' | 'first-held'

/** Where a run's follow hands the events that reach its machine. */
export interface FollowSink {
  readonly next: (event: FollowEvent) => void
}

/** A run's follow, as `followWatch` hands it the watch's events: its decision and its sink. */
export interface FollowingRun extends FollowSink {
  /** The run's decision on a snapshot (made once per snapshot). */
  readonly decisionOn: (snapshot: KVSnapshot) => Decision
}

/**
 * What a run's follow does with one watch event: a snapshot is decided (`run.decisionOn`) and
 * offered to `held`; those it holds back stay there, and the last of them is told to the run as
 * `refresh-due` at the end of the hold. Other events pass as they are.
 *
 * @example
 * followWatch(held, run, { type: 'snapshot', snapshot })
 * @param held - The run's held-back snapshots.
 * @param run - The run's decision and where its events go.
 * @param event - One event of the prefix's watch.
 */
export function followWatch(held: HeldBack, run: FollowingRun, event: WatchEvent | Handed): void {
  if (event.type !== 'snapshot') return run.next(event)
  const { snapshot, reset } = event
  const decision = run.decisionOn(snapshot)
  if (held.offer(snapshot, reset, decision, run) === 'pass') {
    run.next({ type: 'snapshot', snapshot, reset, decision })
  }
}

/**
 * `followWatch` as the handler of one watch event, made once per run: a snapshot is decided
 * (`decideOn`) and offered to `held`; those it holds back stay there, and the last of them is told
 * to `next` as `refresh-due` at the end of the hold. Other events pass as they are. `heldBackBy`
 * is the same as an operator.
 *
 * ```
 * events:    a--b--c-------    b, c: far back within the hold (until: the end of the line)
 * follow:    a------------r    r: refresh-due with c
 * ```
 *
 * @example
 * member.onWatch = heldBackTo(held, (snapshot) => member.decisionOn(snapshot), subscriber.next)
 * @param held - The run's held-back snapshots.
 * @param decideOn - The run's decision on a snapshot.
 * @param next - Where the events that reach the machine go.
 * @returns The handler of one watch event.
 */
export function heldBackTo(
  held: HeldBack,
  decideOn: (snapshot: KVSnapshot) => Decision,
  next: (event: FollowEvent) => void,
): (event: WatchEvent | Handed) => void {
  // Made once per run: a refresh allocates its event only.
  const run: FollowingRun = { decisionOn: decideOn, next }
  return (event) => followWatch(held, run, event)
}

/**
 * `heldBackTo` as an operator: the follow of a port whose watch is an Observable. Unsubscribed (or
 * once its source ends), it drops what `held` kept, and its refresh.
 *
 * @example
 * watchEvents.pipe(heldBackBy(held, (snapshot) => decideByRank(snapshot, session, step)))
 * @param held - The run's held-back snapshots.
 * @param decideOn - The run's decision on a snapshot.
 * @returns The operator.
 */
export function heldBackBy(
  held: HeldBack,
  decideOn: (snapshot: KVSnapshot) => Decision,
): OperatorFunction<WatchEvent | Handed, FollowEvent> {
  return (events) =>
    new Observable<FollowEvent>((subscriber) => {
      const subscription = events.subscribe({
        next: heldBackTo(held, decideOn, (event) => subscriber.next(event)),
        error: (error: unknown) => subscriber.error(error),
        complete: () => subscriber.complete(),
      })
      return () => {
        subscription.unsubscribe()
        held.clear()
      }
    })
}
