// Turns a log of wants, starts and releases into handover samples: for each start that had to
// wait for a release, the time from that release to the start.

export interface HoldEvent {
  /**
   * want: the contender is wanted (semaphore created, process spawned); ready: the contender is
   * up and contending (a process's start-up is over; for the library the same as want).
   */
  readonly kind: 'want' | 'ready' | 'start' | 'release'
  readonly who: string
  /** Milliseconds on one clock shared by every event of the log. */
  readonly at: number
}

/** A counted handover: the times of its release and of the start that took the slot over. */
export interface HandoverPair {
  readonly release: number
  readonly start: number
}

export interface Handovers {
  /** Release → next start, ms. */
  readonly samples: readonly number[]
  /** The release and the start of each sample, in the same order (for splitting a sample up). */
  readonly pairs: readonly HandoverPair[]
  /**
   * Handovers left out because the new holder had not been contending for `readyMs` before the
   * release: its wait may include its own start-up, which is not handover time.
   */
  readonly dropped: number
  /** Per acquisition: want → start, ms. */
  readonly waits: readonly { readonly who: string; readonly ms: number }[]
  /** Per acquisition: ready (else want) → start, ms: the wait without process start-up. */
  readonly queuedWaits: readonly number[]
}

/**
 * Pairs each start with the oldest release not yet taken over (a FIFO of freed slots); a start
 * while no slot had been freed is the initial fill and no handover. A handover counts only when
 * the new holder was ready (contending) `readyMs` before the release. With limit n this matches
 * each freed slot with the start that filled it, whoever released it.
 */
export function pairHandovers(events: readonly HoldEvent[], readyMs: number): Handovers {
  const sorted = [...events].sort((a, b) => a.at - b.at)
  const freed: number[] = []
  const wantOf = new Map<string, number>()
  const readyOf = new Map<string, number>()
  const queuedWaits: number[] = []
  const samples: number[] = []
  const pairs: HandoverPair[] = []
  const waits: { who: string; ms: number }[] = []
  let dropped = 0
  for (const event of sorted) {
    if (event.kind === 'want') wantOf.set(event.who, event.at)
    else if (event.kind === 'ready') readyOf.set(event.who, event.at)
    else if (event.kind === 'release') freed.push(event.at)
    else {
      const want = wantOf.get(event.who)
      const queued = readyOf.get(event.who) ?? want
      if (want !== undefined) waits.push({ who: event.who, ms: event.at - want })
      if (queued !== undefined) queuedWaits.push(event.at - queued)
      wantOf.delete(event.who)
      readyOf.delete(event.who)
      const release = freed.shift()
      if (release === undefined) continue
      if (queued !== undefined && queued <= release - readyMs) {
        samples.push(event.at - release)
        pairs.push({ release, start: event.at })
      } else dropped++
    }
  }
  return { samples, pairs, dropped, waits, queuedWaits }
}
