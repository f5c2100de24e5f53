// Records when each contender holds, and checks that no more than `limit` ever hold at once.
// Contenders in this process report holding$ transitions; processes outside it (CLI children,
// `consul lock` children) report start/stop times read from their output.
//
// Where Consul itself allows an overlap (a session invalidated while its owner still runs, as a
// `consul lock` child does until its CLI notices and kills it), a test declares the window the
// docs state with `allowOverlap`: an overlap that lies wholly inside such a window is counted but
// tolerated; any other overlap fails `assertSafe()`.

export interface Interval {
  readonly who: string
  readonly from: number
  /** Infinity while still holding. */
  readonly to: number
}

/** A time window in which Consul's documented behaviour permits more holders than the limit. */
export interface OverlapWindow {
  readonly from: number
  readonly to: number
  /** Why the docs allow it, e.g. 'consul lock: SIGTERM + 5 s grace after the lock is lost'. */
  readonly why: string
}

/** A stretch of time during which more than `limit` contenders held. */
export interface Overlap {
  readonly from: number
  readonly to: number
  /** The most holders at once during the stretch. */
  readonly holders: number
  /** Who held during the stretch. */
  readonly who: readonly string[]
  /** The allowed window it lies in, if any. */
  readonly allowedBy: OverlapWindow | undefined
}

export class SafetyRecorder {
  private readonly open = new Map<string, number>()
  private readonly closed: Interval[] = []
  private readonly order: string[] = []
  private readonly windows: OverlapWindow[] = []
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

  /** Declares a window in which an overlap is what Consul's docs allow (counted, not failed). */
  allowOverlap(window: OverlapWindow): void {
    this.windows.push(window)
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
    let max = 0
    for (const segment of this.segments()) max = Math.max(max, segment.who.length)
    return Math.max(max, this.peak)
  }

  /** Every stretch with more than `limit` holders, merged, each with the window allowing it. */
  overlaps(): readonly Overlap[] {
    const merged: { from: number; to: number; holders: number; who: Set<string> }[] = []
    for (const segment of this.segments()) {
      if (segment.who.length <= this.limit) continue
      const last = merged.at(-1)
      if (last && last.to === segment.from) {
        last.to = segment.to
        last.holders = Math.max(last.holders, segment.who.length)
        segment.who.forEach((w) => last.who.add(w))
      } else {
        merged.push({ ...segment, holders: segment.who.length, who: new Set(segment.who) })
      }
    }
    return merged.map((o) => ({
      from: o.from,
      to: o.to,
      holders: o.holders,
      who: [...o.who],
      allowedBy: this.windows.find((w) => w.from <= o.from && o.to <= w.to),
    }))
  }

  /** Overlaps that no declared window allows. */
  unexplainedOverlaps(): readonly Overlap[] {
    return this.overlaps().filter((o) => o.allowedBy === undefined)
  }

  /** How many overlaps fell inside an allowed window. */
  allowedOverlapCount(): number {
    return this.overlaps().length - this.unexplainedOverlaps().length
  }

  /** Throws an Error describing every overlap no window allows; returns the allowed count. */
  assertSafe(): number {
    const bad = this.unexplainedOverlaps()
    if (bad.length > 0) {
      const lines = bad.map(
        (o) =>
          `${o.holders} holders (limit ${this.limit}) from ${o.from} for ${o.to - o.from} ms: ${o.who.join(', ')}`,
      )
      throw new Error(`safety violated ${bad.length} time(s):\n${lines.join('\n')}`)
    }
    return this.allowedOverlapCount()
  }

  /** Consecutive stretches between interval ends, each with who held then. */
  private segments(): { from: number; to: number; who: string[] }[] {
    // An empty interval holds nothing (and would upset the end-before-start order below).
    const intervals = this.intervals().filter((i) => i.to > i.from)
    const points = intervals.flatMap((interval, index) => [
      { at: interval.from, delta: +1, index },
      { at: interval.to, delta: -1, index },
    ])
    // At equal times, ends come before starts: a hand-over at one instant is not an overlap.
    points.sort((a, b) => a.at - b.at || a.delta - b.delta)
    const holding = new Set<number>()
    const segments: { from: number; to: number; who: string[] }[] = []
    for (let i = 0; i < points.length; i++) {
      const point = points[i]
      if (!point) continue
      if (point.delta > 0) holding.add(point.index)
      else holding.delete(point.index)
      const next = points[i + 1]
      if (next && next.at > point.at && holding.size > 0) {
        segments.push({
          from: point.at,
          to: next.at,
          who: [...holding].map((k) => intervals[k]?.who ?? '?'),
        })
      }
    }
    return segments
  }
}
