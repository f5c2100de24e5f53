import { Observable, type OperatorFunction } from 'rxjs'
import type { KVSnapshot, WatchEvent } from '../../base/kv-snapshot.js'
import type { DecidedSnapshot } from '../../core/contender/contender-input.js'
import type { Decision } from '../../core/events.js'
import { holdsBack } from '../../core/semaphore/hold-back.js'
import type { FollowEvent } from './contender-port.js'

const HELD_BACK: FollowEvent = { type: 'held-back' }

/**
 * The snapshots a run's waiter holds back (`holdsBack`), kept out of its machine: the machine
 * sets the hold after each snapshot it steps on, this keeps the last one held back, and the
 * refresh takes it. A waiter far back in a prefix of thousands of contenders thus costs one
 * decision (a lookup in the prefix's shared view) per snapshot, and no step.
 *
 * @example
 * const held = new HeldBack(() => scheduler.now())
 * member.onWatch = heldBackTo(held, decideOn, subscriber.next) // the run's follow
 * held.hold(until) // the machine's hold-back command
 * held.take() // the refresh
 */
export class HeldBack {
  private until: number | undefined = undefined
  // The last snapshot held back and the decision on it, as two fields: holding one allocates nothing.
  private snapshot: KVSnapshot | undefined = undefined
  private decision: Decision | undefined = undefined

  constructor(private readonly now: () => number) {}

  /** The machine's hold (undefined: none). */
  hold(until: number | undefined): void {
    this.until = until
  }

  /** The last snapshot held back, if any, which is no longer kept. */
  take(): DecidedSnapshot | undefined {
    const { snapshot, decision } = this
    this.forget()
    return snapshot === undefined ? undefined : { type: 'snapshot', snapshot, decision }
  }

  /** A new run: no hold, nothing kept. */
  clear(): void {
    this.until = undefined
    this.forget()
  }

  /**
   * A decided snapshot of the watch: `pass` (it reaches the machine, and anything kept is older),
   * `held` or, for the first held since the last that passed, `first-held`. A reset is never held.
   */
  offer(snapshot: KVSnapshot, reset: boolean | undefined, decision: Decision): Offered {
    // Without a hold (most snapshots of most contenders) the clock is not read.
    const { until } = this
    if (reset === true || until === undefined || !holdsBack(until, decision, this.now())) {
      this.forget()
      return 'pass'
    }
    const first = this.snapshot === undefined
    this.snapshot = snapshot
    this.decision = decision
    return first ? 'first-held' : 'held'
  }

  private forget(): void {
    this.snapshot = undefined
    this.decision = undefined
  }
}

/** What becomes of a snapshot offered to `HeldBack`. */
export type Offered = 'pass' | 'held' | 'first-held'

/**
 * What a run's follow does with each watch event: a snapshot is decided (`decideOn`) and offered
 * to `held`; those it holds back stay there, the first of them told to `next` as `held-back`.
 * Other events pass as they are. The port's follow calls it on each event the coordinator hands
 * its member (no Observable of its own per contender); `heldBackBy` is the same as an operator.
 *
 * ```
 * events:    a--b--c--d        b, c: far back within the hold; d: a change for the waiter
 * follow:    a--h-----d        h: held-back (c replaces b as the one kept)
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
): (event: WatchEvent) => void {
  return (event) => {
    if (event.type !== 'snapshot') return next(event)
    const { snapshot, reset } = event
    const decision = decideOn(snapshot)
    const offered = held.offer(snapshot, reset, decision)
    if (offered === 'pass') next({ type: 'snapshot', snapshot, reset, decision })
    else if (offered === 'first-held') next(HELD_BACK)
  }
}

/**
 * `heldBackTo` as an operator: the follow of a port whose watch is an Observable.
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
): OperatorFunction<WatchEvent, FollowEvent> {
  return (events) =>
    new Observable<FollowEvent>((subscriber) =>
      events.subscribe({
        next: heldBackTo(held, decideOn, (event) => subscriber.next(event)),
        error: (error: unknown) => subscriber.error(error),
        complete: () => subscriber.complete(),
      }),
    )
}
