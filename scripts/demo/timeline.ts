// The demo's record of what happened: every interval and event here is fed from a real `state$`
// emission of a real semaphore, or from the operator's real HTTP call. The terminal view, the SVG
// and the demo's own checks all read this one record, so none of them can tell a different story.
import type { TransitionReason } from '../../src/index.js'

/** One tenure of a slot, from the `holding$` true to the `holding$` false that ended it. */
export interface Hold {
  readonly name: string
  readonly from: number
  to: number | undefined
  readonly fencingToken: bigint
  readonly session: string
  /** The reason of the transition that ended it; undefined while held or when the run ended. */
  endReason: TransitionReason | undefined
}

/** Time a contender spent in the queue: from its key being in Consul to a slot or giving up. */
export interface Wait {
  readonly name: string
  readonly from: number
  to: number | undefined
}

/** The operator destroyed a holder's session. */
export interface OperatorCut {
  readonly at: number
  readonly name: string
  readonly session: string
}

export type TimelineEvent =
  | {
      readonly type: 'contends'
      readonly at: number
      readonly name: string
      readonly session: string
    }
  | {
      readonly type: 'acquired'
      readonly at: number
      readonly hold: Hold
      readonly holders: readonly string[]
    }
  | { readonly type: 'lost'; readonly at: number; readonly hold: Hold }
  | { readonly type: 'gave-up'; readonly at: number; readonly name: string }
  | { readonly type: 'operator'; readonly at: number; readonly cut: OperatorCut }
  | { readonly type: 'over-limit'; readonly at: number; readonly holders: readonly string[] }

/** Seconds since the contenders started. */
export type DemoClock = () => number

/**
 * One call into the timeline, as it was made: with the timeline's names and limit, the calls of a
 * run replay it exactly (`Timeline.replay`), so a run's picture can be redrawn and tested later.
 */
export type TimelineCall =
  | {
      readonly at: number
      readonly call: 'contends'
      readonly name: string
      readonly session: string
    }
  | {
      readonly at: number
      readonly call: 'acquired'
      readonly name: string
      /** Decimal, as JSON has no bigint. */
      readonly fencingToken: string
      readonly session: string
    }
  | {
      readonly at: number
      readonly call: 'lost'
      readonly name: string
      readonly reason: TransitionReason | undefined
    }
  | { readonly at: number; readonly call: 'round-ended'; readonly name: string }
  | {
      readonly at: number
      readonly call: 'operator'
      readonly name: string
      readonly session: string
    }
  | { readonly at: number; readonly call: 'finish' }

/** A whole run, as JSON: what `npm run demo -- --record <file>` writes. */
export interface TimelineRecord {
  readonly names: readonly string[]
  readonly limit: number
  readonly calls: readonly TimelineCall[]
}

export class Timeline {
  readonly holds: Hold[] = []
  readonly waits: Wait[] = []
  readonly cuts: OperatorCut[] = []
  /**
   * The most holders at once, counted in the order the holders reported their changes: a new
   * holder seen before an old one's loss counts both, so this is never below the real figure.
   */
  maxConcurrent = 0
  readonly overLimitAt: number[] = []
  endedAt: number | undefined
  /** Every call made so far, for `record()`. */
  private readonly calls: TimelineCall[] = []
  private readonly holding = new Map<string, Hold>()
  private readonly queued = new Map<string, Wait>()

  constructor(
    readonly names: readonly string[],
    readonly limit: number,
    readonly now: DemoClock,
    private readonly onEvent: (event: TimelineEvent) => void,
  ) {}

  /** A timeline rebuilt from a record, each call made at its recorded time. */
  static replay(
    record: TimelineRecord,
    onEvent: (event: TimelineEvent) => void = () => {},
  ): Timeline {
    let at = 0
    const timeline = new Timeline(record.names, record.limit, () => at, onEvent)
    for (const call of record.calls) {
      at = call.at
      switch (call.call) {
        case 'contends':
          timeline.contends(call.name, call.session)
          break
        case 'acquired':
          timeline.acquired(call.name, BigInt(call.fencingToken), call.session)
          break
        case 'lost':
          timeline.lost(call.name, call.reason)
          break
        case 'round-ended':
          timeline.roundEnded(call.name)
          break
        case 'operator':
          timeline.operatorDestroyed(call.name, call.session)
          break
        case 'finish':
          timeline.finish()
          break
      }
    }
    return timeline
  }

  /** The run so far, as JSON can carry it. */
  record(): TimelineRecord {
    return { names: this.names, limit: this.limit, calls: [...this.calls] }
  }

  contends(name: string, session: string): void {
    const at = this.now()
    this.calls.push({ at, call: 'contends', name, session })
    const wait: Wait = { name, from: at, to: undefined }
    this.queued.set(name, wait)
    this.waits.push(wait)
    this.onEvent({ type: 'contends', at, name, session })
  }

  acquired(name: string, fencingToken: bigint, session: string): void {
    const at = this.now()
    this.calls.push({ at, call: 'acquired', name, fencingToken: fencingToken.toString(), session })
    this.closeWait(name, at)
    const hold: Hold = {
      name,
      from: at,
      to: undefined,
      fencingToken,
      session,
      endReason: undefined,
    }
    this.holding.set(name, hold)
    this.holds.push(hold)
    this.countHolders()
    this.onEvent({ type: 'acquired', at, hold, holders: [...this.holding.keys()] })
    if (this.holding.size > this.limit) {
      this.overLimitAt.push(at)
      this.onEvent({ type: 'over-limit', at, holders: [...this.holding.keys()] })
    }
  }

  lost(name: string, reason: TransitionReason | undefined): void {
    const hold = this.holding.get(name)
    if (!hold) return
    const at = this.now()
    this.calls.push({ at, call: 'lost', name, reason })
    hold.to = at
    hold.endReason = reason
    this.holding.delete(name)
    this.countHolders()
    this.onEvent({ type: 'lost', at, hold })
  }

  /** The round ended; if it never got a slot, its wait ends here. */
  roundEnded(name: string): void {
    const at = this.now()
    this.calls.push({ at, call: 'round-ended', name })
    if (this.closeWait(name, at)) this.onEvent({ type: 'gave-up', at, name })
  }

  operatorDestroyed(name: string, session: string): void {
    const cut = { at: this.now(), name, session }
    this.calls.push({ at: cut.at, call: 'operator', name, session })
    this.cuts.push(cut)
    this.onEvent({ type: 'operator', at: cut.at, cut })
  }

  holders(): Hold[] {
    return [...this.holding.values()]
  }

  /** Ends the record: whatever is still open is cut at this moment. */
  finish(): void {
    const at = this.now()
    this.calls.push({ at, call: 'finish' })
    this.endedAt = at
    for (const hold of this.holding.values()) hold.to = at
    for (const wait of this.queued.values()) wait.to = at
  }

  private closeWait(name: string, at: number): boolean {
    const wait = this.queued.get(name)
    if (!wait) return false
    wait.to = at
    this.queued.delete(name)
    return true
  }

  private countHolders(): void {
    this.maxConcurrent = Math.max(this.maxConcurrent, this.holding.size)
  }
}
