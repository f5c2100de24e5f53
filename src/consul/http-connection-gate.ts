/**
 * Admission of a client's requests to its pool of connections, and each admitted request's
 * deadline.
 *
 * At most `connections` requests are given to the HTTP client at once; the others wait here,
 * without a timer, first in first out, with urgent ones (session renewals: a holder's lease hangs
 * on them) ahead of those waiting but never of those admitted. A request's timeout starts when it
 * is admitted: it measures the agent's answer, not this client's own queue. Timed from the call
 * instead, the last of a burst (thousands of contenders' writes, long polls) would time out
 * unsent and be sent again, which makes the queue longer still: 10,000 contenders on one prefix
 * would never all get their keys in.
 *
 * Long polls never hold the last connection: a client watching as many prefixes as it has
 * connections would otherwise hold its renewals back until a poll returns, past a lease. A long
 * poll that waits for want of a connection of its own does not hold up the requests behind it
 * that fit. With one connection there is none to keep, and a long poll may take it.
 */
import { asyncScheduler, type SchedulerLike, type Subscription } from 'rxjs'

/** What stopped a request: its caller's signal, its timeout, or the gate's close. */
export type StopReason = 'caller' | 'timeout' | 'closed'

/** A request asking to be admitted. */
export interface GateEntry {
  /**
   * The caller's signal: aborted while the request waits, it takes the request out of the queue;
   * after its admission, it stops the request (`Admitted.onStop`).
   */
  readonly signal?: AbortSignal | undefined
  /** Goes ahead of the requests waiting (a session renewal). */
  readonly urgent: boolean
  /** A long poll: admitted only while long polls hold fewer than all but one connection. */
  readonly poll: boolean
  /** How long the request may take once admitted, in ms of the gate's scheduler. */
  readonly timeoutMs: number
}

/** A request admitted: it has a connection until it leaves. */
export interface Admitted {
  readonly admitted: true
  /**
   * Calls `listener` once the request must stop: its timeout passed, its caller aborted or the
   * gate closed (at once if one did already; never after the request left). One listener, the
   * last given: the transport's, which destroys the request. A plain callback rather than
   * an AbortSignal, which would be an EventTarget and a listener object made for every request.
   */
  readonly onStop: (listener: () => void) => void
  /** Which of those stopped the request, the first; undefined while none did. */
  readonly stop: () => StopReason | undefined
  /**
   * The request is done with its connection: its timer is cancelled and the requests waiting
   * that now fit are admitted, in order. Only the first call counts.
   */
  readonly leave: () => void
}

/** A request never admitted: its caller aborted it first, or the gate closed. */
export interface Refused {
  readonly admitted: false
  readonly stop: 'caller' | 'closed'
}

export type Admission = Admitted | Refused

export interface ConnectionGate {
  /**
   * Admits `entry`, or refuses it (its caller aborted it, or the gate closed). The answer is
   * given at once when it is known at once (a free connection, an aborted signal, a closed gate),
   * so that a request that fits is sent in its caller's turn, before whatever that turn does
   * next; otherwise a promise resolves once it is.
   */
  enter(entry: GateEntry): Admission | Promise<Admission>
  /**
   * Closes the gate: every request waiting is refused (`closed`), every admitted one is stopped
   * (`closed`), and every later entry is refused.
   */
  close(): void
}

interface Waiter {
  readonly entry: GateEntry
  readonly answer: (admission: Admission) => void
  readonly onAbort: () => void
  /** Admitted or aborted: it waits no more, and leaves its line when the line's front reaches it. */
  settled: boolean
}

/**
 * Requests waiting in one line, first in first out. A request admitted or aborted out of turn is
 * only marked settled, and the front passes over it later: taking it out there would move every
 * request behind it, and a burst of thousands of requests would cost the square of their number.
 */
interface Line {
  items: Waiter[]
  /** The first item that may still wait; those before it are settled. */
  head: number
}

/**
 * The gate of a pool of `connections` connections; request timeouts run on `scheduler`.
 *
 * @example
 * ```ts
 * const gate = connectionGate(16)
 * const admission = await gate.enter({ signal, urgent: false, poll: false, timeoutMs: 10_000 })
 * if (admission.admitted) {
 *   try {
 *     await send(admission.onStop)
 *   } finally {
 *     admission.leave()
 *   }
 * }
 * ```
 * @param connections - How many requests may be admitted at once (at least 1).
 * @param scheduler - Runs the admitted requests' timeouts.
 * @returns The gate, open.
 */
export function connectionGate(
  connections: number,
  scheduler: SchedulerLike = asyncScheduler,
): ConnectionGate {
  const mostPolls = Math.max(1, connections - 1)
  let out = 0
  let polls = 0
  let closed = false
  /** Waiting requests in the order they go: the urgent line first, then the others. */
  const lines: readonly [Line, Line] = [
    { items: [], head: 0 },
    { items: [], head: 0 },
  ]
  /**
   * How to stop each admitted request, for the close. An array rather than a Set: it holds at
   * most `connections` entries, and a Set that a few requests at a time join and leave makes a
   * new table of its own whenever it grows or shrinks, several times a request.
   */
  const running: ((why: StopReason) => void)[] = []

  const fits = (poll: boolean): boolean => out < connections && (!poll || polls < mostPolls)
  /** Moves a line's front past its settled requests, and lets go of them now and then. */
  const trim = (line: Line): void => {
    while (line.head < line.items.length && (line.items[line.head] as Waiter).settled) line.head++
    if (line.head === line.items.length) {
      line.items = []
      line.head = 0
    } else if (line.head >= 1024 && line.head * 2 >= line.items.length) {
      line.items = line.items.slice(line.head)
      line.head = 0
    }
  }
  const refused = (stop: Refused['stop']): Refused => ({ admitted: false, stop })

  const admit = (entry: GateEntry): Admitted => {
    out++
    if (entry.poll) polls++
    let stop: StopReason | undefined
    let onStop: (() => void) | undefined
    let left = false
    const end = (why: StopReason): void => {
      if (stop !== undefined) return
      stop = why
      onStop?.()
    }
    const onCallerAbort = (): void => end('caller')
    const timer: Subscription = scheduler.schedule(() => end('timeout'), entry.timeoutMs)
    entry.signal?.addEventListener('abort', onCallerAbort, { once: true })
    running.push(end)
    return {
      admitted: true,
      onStop: (listener) => {
        if (left) return
        if (stop === undefined) onStop = listener
        else listener()
      },
      stop: () => stop,
      leave: () => {
        if (left) return
        left = true
        onStop = undefined
        timer.unsubscribe()
        entry.signal?.removeEventListener('abort', onCallerAbort)
        // Its place is taken by the last one: the order does not matter.
        const at = running.indexOf(end)
        running[at] = running[running.length - 1] as (why: StopReason) => void
        running.pop()
        out--
        if (entry.poll) polls--
        admitWaiting()
      },
    }
  }

  /** Admits the requests waiting that fit, in order (a long poll that does not is passed over). */
  const admitWaiting = (): void => {
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i] as (typeof lines)[number]
      const { items } = line
      for (let at = line.head; at < items.length && out < connections; at++) {
        const waiter = items[at] as Waiter
        if (waiter.settled || !fits(waiter.entry.poll)) continue
        waiter.settled = true
        waiter.entry.signal?.removeEventListener('abort', waiter.onAbort)
        waiter.answer(admit(waiter.entry))
      }
      trim(line)
    }
  }

  return {
    enter: (entry) => {
      if (closed) return refused('closed')
      if (entry.signal?.aborted === true) return refused('caller')
      // Whoever waits cannot use a free connection (every leave admits all that fit), so a
      // request that fits may take it.
      if (fits(entry.poll)) return admit(entry)
      return new Promise<Admission>((answer) => {
        const waiter: Waiter = {
          entry,
          answer,
          onAbort: () => {
            if (waiter.settled) return
            waiter.settled = true
            answer(refused('caller'))
          },
          settled: false,
        }
        entry.signal?.addEventListener('abort', waiter.onAbort, { once: true })
        lines[entry.urgent ? 0 : 1].items.push(waiter)
      })
    },
    close: () => {
      if (closed) return
      closed = true
      for (const line of lines) {
        for (const waiter of line.items.slice(line.head)) {
          if (waiter.settled) continue
          waiter.settled = true
          waiter.entry.signal?.removeEventListener('abort', waiter.onAbort)
          waiter.answer(refused('closed'))
        }
        line.items = []
        line.head = 0
      }
      for (const end of [...running]) end('closed')
    },
  }
}
