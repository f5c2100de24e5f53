// The checker of the nemesis suite: reads the history of a run (what each actor said it did, and
// what the nemesis did to whom, each with its moment) and finds what the semaphore promised not to
// do. Pure: it takes the history as data, so test/unit/nemesis-history.test.ts checks the checker.
//
// What counts:
// - An actor acts when it touches the guarded resource; it says so with an `act` line (a tick, or
//   a counter write). Within one tenure, acts closer than `gapMs` are one stretch of acting; a
//   longer silence (a frozen process cannot act) splits it, so a frozen holder is not counted
//   while frozen. An actor of several permits (a writer of the read-write lock) counts as that
//   many. A moment with more than `limit` slots' worth of actors acting is a violation.
// - A wait runs from `want` to `hold` (or to the actor's end). It is long when it lasts more than
//   `longWaitMs` while enough slots were free for more than half of it: as many as it asks for,
//   and as the largest request of a library waiter of another actor that wanted before it and
//   still waits (the queue is served in arrival order, so a reader behind a writer that waits for
//   every slot is not stranded by one free slot). Whether a slot was free is what
//   Consul said, sampled: `.lock` listed fewer than `limit` holders whose sessions were alive (a
//   holder whose session is gone is pruned by the next writer, so its slot is free; a killed
//   process's live session still takes its slot until its TTL runs out). While Consul could not
//   be read, no slot counts as free. A wait of an actor that a fault hit meanwhile is judged only
//   from the end of the last such fault: once healed, a waiter too must be served within the bound.
// - Fencing tokens: an actor's tokens only grow, no two tenures share one, a tenure that started
//   before another one wanted a slot has the smaller token, and a tenure never reads a token of
//   another writer (`seen`) that is not smaller than its own; all of it within one history of
//   Consul's state. A restart that loses the state (`state-loss`) begins a new history, whose
//   indexes, and so tokens, start low again: tokens of different histories are not compared.
// - A restart that loses Consul's state frees every slot at once, and a `consul lock` child runs on
//   until its client notices: a moment over the limit that begins within `lossWindowMs` of such a
//   restart, and that is over the limit only by counting `consul lock` actors, is counted apart.
// - Lost updates: each acknowledged counter write says the value it wrote (read + 1); a value
//   acknowledged twice is an increment lost. A `conflict` is a write whose CAS lost although its
//   fence held: another writer wrote while the writer held, an update a plain fenced write would
//   have lost.
// - Jobs: an actor process that runs many jobs at once names each job's lines `<actor>/<job>`.
//   Each job has its own waits and tenures; the faults, the kind, the acquisitions' actors and the
//   order of tokens are the process's (`actorOf`).

/** Who an actor is: this library in a process of its own, or `consul lock -n` in a loop. */
export type ActorKind = 'library' | 'consul-lock'

/** One line an actor said, or one thing that happened to it, at `at` (ms, wall clock). */
export interface ActorEvent {
  readonly who: string
  readonly kind: ActorKind
  readonly e:
    | 'want' // starts waiting for a slot
    | 'hold' // its slot is held: a tenure begins
    | 'act' // touched the guarded resource
    | 'inc' // a counter write was acknowledged (`value` written)
    | 'seen' // read the `token` of another writer (the counter's last one) while holding
    | 'conflict' // a counter write's CAS lost although its fence held
    | 'end' // the tenure ended as planned (released, or about to be)
    | 'lost' // the tenure ended because the slot was lost (or the guard refused)
    | 'killed' // the actor's process (group) was killed: whatever it held ends here
    | 'exit' // the actor's process ended
  readonly at: number
  /** The fencing token of the tenure (library actors), or the one seen, as decimal text. */
  readonly token?: string
  /** For `inc`: the counter value written. */
  readonly value?: number
  /**
   * For `want` and `act`: how many of the limit's slots the actor asks for or acts under (a
   * request of several permits, a writer of the read-write lock); 1 when absent.
   */
  readonly permits?: number
  /**
   * For a library actor's `want`: its process id, which its contender keys' value ends with, so
   * that the keys of the run's samples can be told by actor.
   */
  readonly pid?: number
}

/** The kinds of fault the nemesis injects. */
export type FaultKind =
  | 'kill'
  | 'pause'
  | 'blackhole'
  | 'slow'
  | 'agent-restart'
  | 'state-loss'
  | 'leader-failover'
  | 'delete-lock'
  | 'delete-prefix'

/** One fault: to one actor (`who`) or to Consul (no `who`), from `from` to `to`. */
export interface Fault {
  readonly kind: FaultKind
  readonly who?: string
  readonly from: number
  readonly to: number
  /**
   * A state-losing restart: when the old server had stopped (it answers, with its old state,
   * while it shuts down after `from`). Tokens before it are of the old history.
   */
  readonly stoppedAt?: number
  /** What exactly, for the report (e.g. 'SIGSTOP 12.3 s'). */
  readonly detail?: string
}

export interface CheckOptions {
  readonly limit: number
  /** Acts of one tenure further apart than this are separate stretches of acting. */
  readonly gapMs: number
  /** A wait longer than this while slots were mostly free is a violation. */
  readonly longWaitMs: number
  /** How long after an operator's delete a moment over the limit is counted apart (ms). */
  readonly editWindowMs: number
  /**
   * How long after a state-losing restart (from its start) a moment over the limit that only
   * `consul lock` actors put over it is counted apart (ms); default 0.
   */
  readonly lossWindowMs?: number
}

/**
 * From `at` until the next one: how many slots live sessions held, as Consul said; undefined
 * when Consul could not be read (no slot counts as free then). With `keys`, the contender keys
 * then under the prefix, each as `<session>…@<the last field of its value>#<flags>`: a library
 * actor's keys end their value with its process id.
 */
export interface Occupancy {
  readonly at: number
  readonly taken: number | undefined
  readonly keys?: readonly string[]
}

/** A stretch of time with more than `limit` actors acting. */
export interface Crowd {
  readonly from: number
  readonly to: number
  readonly actors: readonly string[]
}

/** One wait for a slot. */
export interface Wait {
  readonly who: string
  readonly kind: ActorKind
  readonly from: number
  readonly to: number
  /** Of which this long at least one slot was free (counted conservatively, see above). */
  readonly freeMs: number
  /** A fault hit this actor during the wait: judged only from `healedAt`. */
  readonly faulted: boolean
  /** When the last fault on this actor during the wait ended (faulted waits). */
  readonly healedAt?: number
  /** Of the time from `healedAt` to the end, this long at least one slot was free. */
  readonly freeAfterHealMs?: number
  /** The wait ended without a slot (the actor was killed or the run ended). */
  readonly unserved: boolean
}

export interface Tenure {
  readonly who: string
  readonly kind: ActorKind
  readonly wantAt: number | undefined
  readonly from: number
  readonly to: number
  readonly badEnd: boolean
  readonly token: bigint | undefined
  readonly acts: number
  /** The greatest token of another writer read during the tenure. */
  readonly newestSeen?: bigint
}

export interface Report {
  /** The most actors acting at one moment. */
  readonly maxActing: number
  /** Moments over the limit, but for those in `editWindows`. */
  readonly crowds: readonly Crowd[]
  /**
   * Moments over the limit that began within `editWindowMs` of an operator's delete of `.lock` or
   * of the prefix: a holder learns of such an edit at its next wake-up (docs/safety.md), and may
   * act once before it if its process was not scheduled in time. Counted apart, not failed.
   */
  readonly editWindows: readonly Crowd[]
  /**
   * Moments over the limit that began within `lossWindowMs` of a state-losing restart and that the
   * library actors alone do not put over it: Consul forgot every holder at once, and a `consul
   * lock` child runs on until its client notices. Counted apart, not failed.
   */
  readonly lossWindows: readonly Crowd[]
  readonly tenures: readonly Tenure[]
  readonly waits: readonly Wait[]
  /**
   * Waits longer than longWaitMs with slots free over half of them; for a waiter a fault hit,
   * counted from the end of its last fault.
   */
  readonly longWaits: readonly Wait[]
  readonly tokenViolations: readonly string[]
  /** Counter writes acknowledged, distinct values among them, and their difference. */
  readonly counter: {
    readonly acknowledged: number
    readonly distinct: number
    readonly lost: number
    readonly conflicts: number
  }
  /**
   * Per kind of actor: tenures, actors, and the seconds those actors spent free of faults of
   * their own (from their first line to the end, less their kills, pauses, partitions and slow
   * networks), the fair denominator of a rate when faults hit one kind more than the other.
   */
  readonly acquisitions: Readonly<
    Record<
      ActorKind,
      { readonly tenures: number; readonly actors: number; readonly healthySeconds: number }
    >
  >
}

const byTime = <T extends { readonly at: number }>(a: T, b: T): number => a.at - b.at

/** The actor (process) of `who`: itself, or the actor a job `<actor>/<job>` runs in. */
export function actorOf(who: string): string {
  const slash = who.indexOf('/')
  return slash === -1 ? who : who.slice(0, slash)
}

/** Each actor's tenures, read from its events in time order. */
export function tenuresOf(events: readonly ActorEvent[]): Tenure[] {
  const perActor = new Map<string, ActorEvent[]>()
  for (const event of events) {
    const list = perActor.get(event.who) ?? []
    list.push(event)
    perActor.set(event.who, list)
  }
  const tenures: Tenure[] = []
  for (const [who, list] of perActor) {
    list.sort(byTime)
    let wantAt: number | undefined
    let open:
      | {
          from: number
          token: bigint | undefined
          acts: number
          wantAt?: number
          newestSeen?: bigint
        }
      | undefined
    let kind: ActorKind = list[0]?.kind ?? 'library'
    const close = (to: number, badEnd: boolean): void => {
      if (open)
        tenures.push({
          who,
          kind,
          wantAt: open.wantAt,
          from: open.from,
          to,
          badEnd,
          token: open.token,
          acts: open.acts,
          ...(open.newestSeen === undefined ? {} : { newestSeen: open.newestSeen }),
        })
      open = undefined
    }
    for (const event of list) {
      kind = event.kind
      switch (event.e) {
        case 'want':
          if (open) close(event.at, false)
          wantAt = event.at
          break
        case 'hold':
          if (open) close(event.at, false)
          open = {
            from: event.at,
            token: event.token === undefined ? undefined : BigInt(event.token),
            acts: 0,
            ...(wantAt === undefined ? {} : { wantAt }),
          }
          wantAt = undefined
          break
        case 'act':
          if (open) open.acts++
          break
        case 'end':
          close(event.at, false)
          break
        case 'lost':
        case 'killed':
          close(event.at, true)
          break
        case 'exit':
          // An exit while holding that was not announced as an end is a bad end.
          close(event.at, true)
          break
        case 'seen':
          if (open && event.token !== undefined) {
            const seen = BigInt(event.token)
            if (open.newestSeen === undefined || seen > open.newestSeen) open.newestSeen = seen
          }
          break
        case 'inc':
        case 'conflict':
          break
      }
    }
    const last = list.at(-1)
    if (open && last) close(last.at, false)
  }
  return tenures.sort((a, b) => a.from - b.from)
}

/** A stretch of acting of one actor, under `permits` of the limit's slots. */
export interface Stretch {
  readonly who: string
  readonly from: number
  readonly to: number
  readonly permits: number
}

/** Stretches of acting: per actor and tenure, acts no further apart than `gapMs`. */
export function actingStretches(events: readonly ActorEvent[], gapMs: number): Stretch[] {
  const stretches: Stretch[] = []
  const open = new Map<string, { from: number; to: number; permits: number }>()
  const flush = (who: string): void => {
    const stretch = open.get(who)
    if (stretch) stretches.push({ who, ...stretch })
    open.delete(who)
  }
  for (const event of [...events].sort(byTime)) {
    if (event.e === 'act') {
      const stretch = open.get(event.who)
      if (stretch && event.at - stretch.to <= gapMs) stretch.to = event.at
      else {
        flush(event.who)
        open.set(event.who, { from: event.at, to: event.at, permits: event.permits ?? 1 })
      }
    } else if (event.e !== 'inc' && event.e !== 'seen' && event.e !== 'conflict') {
      // Any other line ends a stretch: the next tenure's acts start a new one.
      flush(event.who)
    }
  }
  for (const who of [...open.keys()]) flush(who)
  return stretches
}

/**
 * Moments when actors holding more than `limit` slots between them were acting (stretches are
 * closed intervals; a stretch counts its permits).
 */
export function crowds(
  stretches: readonly Stretch[],
  limit: number,
): { maxActing: number; crowds: Crowd[] } {
  const points = stretches.flatMap((s, i) => [
    { at: s.from, delta: +1, i },
    { at: s.to, delta: -1, i },
  ])
  // Closed intervals: at equal times starts come first, so two stretches that touch overlap.
  points.sort((a, b) => a.at - b.at || b.delta - a.delta)
  const acting = new Set<number>()
  const permitsOf = (i: number): number => stretches[i]?.permits ?? 1
  let taken = 0
  let maxActing = 0
  const found: Crowd[] = []
  for (const point of points) {
    if (point.delta > 0) {
      acting.add(point.i)
      taken += permitsOf(point.i)
      maxActing = Math.max(maxActing, taken)
      if (taken > limit) {
        const actors = [...new Set([...acting].map((i) => stretches[i]?.who ?? '?'))]
        const last = found.at(-1)
        if (last && last.to >= point.at) {
          found[found.length - 1] = {
            from: last.from,
            to: Math.max(last.to, ...[...acting].map((i) => stretches[i]?.to ?? point.at)),
            actors: [...new Set([...last.actors, ...actors])],
          }
        } else {
          found.push({
            from: point.at,
            to: Math.min(...[...acting].map((i) => stretches[i]?.to ?? point.at)),
            actors,
          })
        }
      }
    } else {
      acting.delete(point.i)
      taken -= permitsOf(point.i)
    }
  }
  return { maxActing, crowds: found }
}

/**
 * Time within [from, to] during which `occupancy` had as many slots free as were needed: `need`
 * slots (default one), or, given as the library waits ahead of a waiter, as many as the largest
 * of them still waiting asked for (and at least `least`).
 */
export function freeTime(
  occupancy: readonly Occupancy[],
  limit: number,
  from: number,
  to: number,
  need: number | Needed = 1,
): number {
  const needed: Needed = typeof need === 'number' ? { least: need, ahead: [] } : need
  let free = 0
  for (let i = 0; i < occupancy.length; i++) {
    const here = occupancy[i]
    if (!here || here.taken === undefined) continue
    const start = Math.max(here.at, from)
    const end = Math.min(occupancy[i + 1]?.at ?? to, to)
    if (end <= start) continue
    // Split the step where a wait ahead ends: what is needed changes there.
    const cuts = [
      start,
      ...needed.ahead.map((w) => w.to).filter((at) => at > start && at < end),
      end,
    ]
    cuts.sort((a, b) => a - b)
    for (let c = 0; c + 1 < cuts.length; c++) {
      const at = cuts[c] ?? start
      const most = Math.max(
        needed.least,
        ...needed.ahead.filter((w) => w.from <= at && at < w.to).map((w) => w.permits),
      )
      if (here.taken <= limit - most) free += Math.max(0, (cuts[c + 1] ?? end) - at)
    }
  }
  return free
}

/**
 * What a waiter needs free to be served: its own permits (`least`), and the permits of the
 * library waiters that wanted before it and still wait (`ahead`; a killed one until its keys are
 * gone): the queue is served in arrival order, so a request of several permits at its front that
 * does not fit keeps those behind it waiting, whatever is free for them.
 */
export interface Needed {
  readonly least: number
  readonly ahead: readonly {
    readonly from: number
    readonly to: number
    readonly permits: number
  }[]
}

/** The waits of every actor, with how long slots were free during each. */
export function waitsOf(
  events: readonly ActorEvent[],
  occupancy: readonly Occupancy[],
  faults: readonly Fault[],
  options: CheckOptions,
  endAt: number,
): Wait[] {
  interface Raw {
    readonly who: string
    readonly kind: ActorKind
    readonly from: number
    readonly to: number
    readonly permits: number
    readonly pid: number | undefined
    readonly unserved: boolean
    /** Until when it stood in the queue: past `to` for a waiter killed while its keys stay. */
    readonly queuedTo: number
  }
  const raw: Raw[] = []
  const pending = new Map<
    string,
    { from: number; kind: ActorKind; permits: number; pid: number | undefined }
  >()
  const finish = (who: string, to: number, unserved: boolean, killed = false): void => {
    const wait = pending.get(who)
    if (!wait) return
    pending.delete(who)
    raw.push({ who, ...wait, to, unserved, queuedTo: killed ? keysGoneAt(wait.pid, to) : to })
  }
  // A killed waiter's keys stay in the queue until Consul ends its session (up to 2 × TTL), and
  // the waiters behind it wait for them as for a live one: no client can tell them apart.
  const keysGoneAt = (pid: number | undefined, killedAt: number): number => {
    if (pid === undefined) return killedAt
    const mark = `@${pid}#`
    const gone = occupancy.find(
      (o) =>
        o.at >= killedAt &&
        o.taken !== undefined &&
        o.keys !== undefined &&
        !o.keys.some((k) => k.includes(mark)),
    )
    return gone?.at ?? endAt
  }
  for (const event of [...events].sort(byTime)) {
    if (event.e === 'want') {
      finish(event.who, event.at, true)
      pending.set(event.who, {
        from: event.at,
        kind: event.kind,
        permits: event.permits ?? 1,
        pid: event.pid,
      })
    } else if (event.e === 'hold') finish(event.who, event.at, false)
    else if (event.e === 'killed') finish(event.who, event.at, true, true)
    else if (event.e === 'exit') finish(event.who, event.at, true)
  }
  for (const who of [...pending.keys()]) finish(who, endAt, true)
  const library = raw.filter((w) => w.kind === 'library').map((w) => ({ ...w, to: w.queuedTo }))
  return raw.map((wait): Wait => {
    const { who, from, to } = wait
    const needed: Needed = {
      least: wait.permits,
      ahead:
        wait.kind === 'library'
          ? library.filter((w) => w.from < from && w.to > from && actorOf(w.who) !== actorOf(who))
          : [],
    }
    const own = faults.filter((f) => f.who === actorOf(who) && f.from < to && f.to > from)
    const healedAt = own.length === 0 ? undefined : Math.max(...own.map((f) => f.to))
    return {
      who,
      kind: wait.kind,
      from,
      to,
      freeMs: freeTime(occupancy, options.limit, from, to, needed),
      faulted: own.length > 0,
      ...(healedAt === undefined
        ? {}
        : {
            healedAt,
            freeAfterHealMs:
              healedAt < to ? freeTime(occupancy, options.limit, healedAt, to, needed) : 0,
          }),
      unserved: wait.unserved,
    }
  })
}

/**
 * Token rules broken by the library's tenures (see the file's comment), within each history of
 * Consul's state: `losses` are the moments the old state stopped answering in state-losing
 * restarts (a tenure that began before, during the old server's shutdown, is of the old history).
 */
export function tokenViolations(
  tenures: readonly Tenure[],
  losses: readonly number[] = [],
): string[] {
  const historyOf = (at: number): number => losses.filter((l) => l <= at).length
  const found: string[] = []
  const histories = new Map<number, Tenure[]>()
  for (const t of tenures) {
    const h = historyOf(t.from)
    histories.set(h, [...(histories.get(h) ?? []), t])
  }
  for (const [h, within] of histories) {
    const label = losses.length === 0 ? '' : ` (history ${h} of Consul's state)`
    found.push(...tokenViolationsWithin(within).map((v) => `${v}${label}`))
  }
  return found
}

function tokenViolationsWithin(tenures: readonly Tenure[]): string[] {
  const withToken = tenures.filter(
    (t): t is Tenure & { token: bigint } => t.kind === 'library' && t.token !== undefined,
  )
  const found: string[] = []
  const seen = new Map<bigint, Tenure>()
  for (const t of withToken) {
    const other = seen.get(t.token)
    if (other)
      found.push(
        `token ${t.token} held by two tenures: ${other.who} at ${other.from} and ${t.who} at ${t.from}`,
      )
    seen.set(t.token, t)
  }
  // Per process: the tenures of its jobs, in the order they began, as those of one actor.
  const perActor = new Map<string, bigint>()
  for (const t of withToken) {
    const before = perActor.get(actorOf(t.who))
    if (before !== undefined && t.token <= before) {
      found.push(
        `${actorOf(t.who)}'s token went from ${before} to ${t.token} at ${t.from} (${t.who})`,
      )
    }
    perActor.set(actorOf(t.who), t.token)
    if (t.newestSeen !== undefined && t.newestSeen >= t.token) {
      found.push(
        `${t.who}, holding with token ${t.token} from ${t.from}, read a write made under token ` +
          `${t.newestSeen} by another writer`,
      )
    }
  }
  for (const earlier of withToken) {
    for (const later of withToken) {
      if (
        later.wantAt !== undefined &&
        earlier.from < later.wantAt &&
        earlier.token >= later.token
      ) {
        found.push(
          `${earlier.who} held at ${earlier.from} with token ${earlier.token}, before ${later.who} ` +
            `wanted at ${later.wantAt}, yet ${later.who} got the smaller token ${later.token}`,
        )
      }
    }
  }
  return found
}

/** Reads a whole run's history. */
export function check(
  events: readonly ActorEvent[],
  occupancy: readonly Occupancy[],
  faults: readonly Fault[],
  options: CheckOptions,
  endAt: number,
): Report {
  const tenures = tenuresOf(events)
  const { maxActing, crowds: found } = crowds(actingStretches(events, options.gapMs), options.limit)
  const edits = faults.filter((f) => f.kind === 'delete-lock' || f.kind === 'delete-prefix')
  const inEditWindow = (c: Crowd): boolean =>
    edits.some((f) => f.from <= c.from && c.from <= f.from + options.editWindowMs)
  const lossFaults = faults.filter((f) => f.kind === 'state-loss')
  const losses = lossFaults.map((f) => f.from)
  const kindOf = new Map(events.map((e) => [e.who, e.kind]))
  const inLossWindow = (c: Crowd): boolean =>
    losses.some((at) => at <= c.from && c.from <= at + (options.lossWindowMs ?? 0)) &&
    c.actors.filter((who) => kindOf.get(who) === 'library').length <= options.limit
  const waits = waitsOf(events, occupancy, faults, options, endAt)
  const values = events.filter((e) => e.e === 'inc' && e.value !== undefined).map((e) => e.value)
  const acquisitions = (kind: ActorKind) => {
    const firstLine = new Map<string, number>()
    for (const e of events) {
      const who = actorOf(e.who)
      if (e.kind === kind) firstLine.set(who, Math.min(firstLine.get(who) ?? e.at, e.at))
    }
    let healthyMs = 0
    for (const [who, from] of firstLine) {
      const faultedMs = faults
        .filter((f) => f.who === who)
        .reduce((sum, f) => sum + Math.max(0, Math.min(f.to, endAt) - Math.max(f.from, from)), 0)
      healthyMs += endAt - from - faultedMs
    }
    return {
      tenures: tenures.filter((t) => t.kind === kind).length,
      actors: firstLine.size,
      healthySeconds: healthyMs / 1000,
    }
  }
  return {
    maxActing,
    crowds: found.filter((c) => !inEditWindow(c) && !inLossWindow(c)),
    editWindows: found.filter(inEditWindow),
    lossWindows: found.filter((c) => !inEditWindow(c) && inLossWindow(c)),
    tenures,
    waits,
    longWaits: waits.filter((w) => {
      const since = w.healedAt ?? w.from
      const free = w.healedAt === undefined ? w.freeMs : (w.freeAfterHealMs ?? 0)
      return w.to - since > options.longWaitMs && free > (w.to - since) / 2
    }),
    tokenViolations: tokenViolations(
      tenures,
      lossFaults.map((f) => f.stoppedAt ?? f.from),
    ),
    counter: {
      acknowledged: values.length,
      distinct: new Set(values).size,
      lost: values.length - new Set(values).size,
      conflicts: events.filter((e) => e.e === 'conflict').length,
    },
    acquisitions: { library: acquisitions('library'), 'consul-lock': acquisitions('consul-lock') },
  }
}
