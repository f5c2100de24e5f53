// Records when each contender holds, and checks that no more than `limit` ever hold at once.
// Contenders in this process report holding$ transitions; processes outside it (CLI children,
// `consul lock` children) report start/stop times read from their output.

export interface Interval {
  readonly who: string
  readonly from: number
  /** Infinity while still holding. */
  readonly to: number
}

export class SafetyRecorder {
  private readonly open = new Map<string, number>()
  private readonly closed: Interval[] = []
  private readonly order: string[] = []
  private current = 0
  private peak = 0

  constructor(
    readonly limit: number,
    private readonly now: () => number = () => performance.timeOrigin + performance.now(),
  ) {}

  /** Feeds one holding transition of contender `who`. */
  record(who: string, holding: boolean, at = this.now()): void {
    const since = this.open.get(who)
    if (holding && since === undefined) {
      this.open.set(who, at)
      this.order.push(who)
      this.current++
      this.peak = Math.max(this.peak, this.current)
    } else if (!holding && since !== undefined) {
      this.open.delete(who)
      this.closed.push({ who, from: since, to: at })
      this.current--
    }
  }

  /** Adds a finished interval observed elsewhere (e.g. a child process's start and end). */
  addInterval(interval: Interval): void {
    this.closed.push(interval)
  }

  /** Contenders in the order they first held. */
  acquisitionOrder(): readonly string[] {
    return this.order
  }

  intervals(): readonly Interval[] {
    return [...this.closed, ...[...this.open].map(([who, from]) => ({ who, from, to: Infinity }))]
  }

  /** The most contenders that held at one instant, over all intervals (touching ends do not overlap). */
  maxConcurrent(): number {
    const points = this.intervals().flatMap((i) => [
      { at: i.from, delta: +1 },
      { at: i.to, delta: -1 },
    ])
    // At equal times, ends come before starts: a hand-over at one instant is not an overlap.
    points.sort((a, b) => a.at - b.at || a.delta - b.delta)
    let now = 0
    let max = 0
    for (const p of points) max = Math.max(max, (now += p.delta))
    return Math.max(max, this.peak)
  }
}
