/**
 * Driving a VirtualTimeScheduler from async tests. The double's answers are Promises, so between
 * two virtual instants the promise continuations must run: `advanceBy` runs the due actions one
 * instant at a time and lets every continuation settle in between; `autoAdvance` does so whenever
 * the test is idle, so code that awaits a 30 s blocking query returns at once in real time.
 */
import type { VirtualTimeScheduler } from 'rxjs'

/** Resolves once every microtask queued so far (and those they queue) has run. */
export function settle(): Promise<void> {
  return new Promise((done) => setImmediate(done))
}

/** Runs the actions due at the earliest instant, if it is at most `limit`; false when none is. */
function runNextInstant(scheduler: VirtualTimeScheduler, limit: number): boolean {
  const next = scheduler.actions[0]
  if (next === undefined || next.delay > limit) return false
  const maxFrames = scheduler.maxFrames
  scheduler.maxFrames = next.delay
  try {
    scheduler.flush()
  } finally {
    scheduler.maxFrames = maxFrames
  }
  return true
}

/**
 * Moves virtual time forward by `ms`, running what falls due on the way in order, with the
 * promise continuations of each instant settled before the next instant.
 *
 * @example
 * ```ts
 * const scheduler = new VirtualTimeScheduler()
 * const double = createConsulDouble({ scheduler })
 * const answer = double.client.kv.list('p', { index: 5n, waitMs: 30_000 })()
 * await advanceBy(scheduler, 30_000) // the blocking list answers at its wait's end
 * ```
 * @param scheduler - The virtual scheduler of the double and of the code under test.
 * @param ms - How far to move, in ms.
 */
export async function advanceBy(scheduler: VirtualTimeScheduler, ms: number): Promise<void> {
  const target = scheduler.now() + ms
  await settle()
  while (runNextInstant(scheduler, target)) await settle()
  if (scheduler.frame < target) scheduler.frame = target
}

/**
 * Moves virtual time forward a millisecond at a time until `done()` holds; fails the test with
 * `what` when it does not within `limitMs` virtual ms.
 *
 * @example
 * ```ts
 * await advanceUntil(scheduler, 'a holds', () => a.last?.holding === true)
 * ```
 * @param scheduler - The virtual scheduler of the double and of the code under test.
 * @param what - The state waited for, for the failure's message.
 * @param done - Whether it is reached.
 * @param limitMs - How long it may take, in virtual ms; default 10 s.
 */
export async function advanceUntil(
  scheduler: VirtualTimeScheduler,
  what: string,
  done: () => boolean,
  limitMs = 10_000,
): Promise<void> {
  await advanceBy(scheduler, 0)
  const end = scheduler.now() + limitMs
  while (!done()) {
    if (scheduler.now() >= end) throw new Error(`${what}: not reached in ${limitMs} virtual ms`)
    await advanceBy(scheduler, 1)
  }
}

/**
 * Calls `closable.close()` and moves virtual time until it resolved (`advanceUntil`).
 *
 * @example
 * ```ts
 * await closeInVirtualTime(scheduler, sem) // its release's requests answered, its session gone
 * ```
 * @param scheduler - The virtual scheduler of the double and of the code under test.
 * @param closable - A contender, a client: anything with `close()`.
 */
export async function closeInVirtualTime(
  scheduler: VirtualTimeScheduler,
  closable: { close(): Promise<void> },
): Promise<void> {
  let closed = false
  const closing = closable.close().then(() => (closed = true))
  await advanceUntil(scheduler, 'close() resolved', () => closed)
  await closing
}

/**
 * Whenever the test has nothing left to run but timers, jumps virtual time to the next one and
 * runs it. Returns the stop function (call it before the test ends).
 *
 * @example
 * ```ts
 * const stop = autoAdvance(scheduler)
 * try {
 *   await double.client.kv.list('p', { index: 5n, waitMs: 30_000 })() // answers at virtual 30 s
 * } finally {
 *   stop()
 * }
 * ```
 * @param scheduler - The virtual scheduler to drive.
 * @returns Stops the driving.
 */
export function autoAdvance(scheduler: VirtualTimeScheduler): () => void {
  let stopped = false
  const loop = async (): Promise<void> => {
    while (!stopped) {
      // Two turns: a continuation that itself schedules work gets to run before time moves.
      await settle()
      await settle()
      if (stopped) return
      if (!runNextInstant(scheduler, Number.POSITIVE_INFINITY)) {
        // Nothing scheduled: the test awaits something real, or a held call. Look again soon.
        await new Promise((done) => setTimeout(done, 1))
      }
    }
  }
  void loop()
  return () => {
    stopped = true
  }
}
