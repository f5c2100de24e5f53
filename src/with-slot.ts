import { asyncScheduler } from 'rxjs'
import { SemaphoreError, abortedError } from './errors.js'
import { formatGoDuration } from './consul/durations.js'
import {
  checkTimeout,
  resolveSemaphoreOptions,
  withoutTrailingSlashes,
  type Duration,
  type SemaphoreOptions,
} from './options/contender-options.js'
import { onAbort } from './shared/abort-fanout.js'
import type { SlotGuard } from './slot-guard.js'
import { slotPool, type JobSlot } from './slot-pool.js'

/**
 * Runs `work` while a slot of the semaphore is held, for callers who do not use RxJS: waits for a
 * slot, calls `work(signal, slot)`, aborts `signal` the moment the slot is lost (the work should
 * stop touching the guarded resource then), and releases the slot when `work` settles. `slot` is
 * the contender's guard: `slot.isHolding()` or `slot.assertHolding()` right before each touch of
 * the resource (they read the wall clock, so they are right even after a pause that no timer has
 * noticed yet), and `slot.fencedTxn(ops)` for a Consul write that commits only while held.
 *
 * Two options end it early, and they do not mean the same:
 * - `options.waitTimeout` bounds the wait alone (`'5s'`: a slot within 5 s, or give up): if no
 *   slot is held by then, everything is released (the session, the contender key) and the promise
 *   rejects with SemaphoreError('WaitTimeout'). Once `work` has started it has no effect: a job
 *   longer than the timeout runs to its end.
 * - `options.signal` cancels, as Node's own APIs take one: an abort while waiting releases
 *   everything and then rejects with SemaphoreError('Aborted'), whose `cause` is the signal's
 *   reason; an abort while `work` runs gives the slot back as `close()` does and aborts `work`'s
 *   signal with that error; the promise then settles with what `work` does. So
 *   `AbortSignal.timeout(ms)` bounds the wait and the work together.
 *
 * @example
 * ```ts
 * const rows = await withSlot(
 *   { prefix: 'service/db/lock', limit: 3, waitTimeout: '5s' },
 *   async (signal, slot) => migrate({ signal, beforeEachBatch: () => slot.assertHolding() }),
 * )
 * ```
 * @param options - The semaphore's options, as for `semaphore(...)`, and optionally
 *   `waitTimeout` and `signal`.
 * @param work - The guarded work; `signal` aborts with a SemaphoreError when the slot is lost,
 *   `slot` checks synchronously that it is still held and makes fenced writes.
 * @returns What `work` returned. Rejects with what `work` threw, or with the SemaphoreError that
 *   kept the slot from being held (`WaitTimeout` when `waitTimeout` ended the wait, `Aborted` when
 *   the signal did, `InvalidOptions` for a wrong option), or with SemaphoreError('ReleaseFailed')
 *   if the release failed after the work succeeded.
 */
export function withSlot<T>(
  options: WithSlotOptions,
  work: (signal: AbortSignal, slot: SlotGuard) => Promise<T>,
): Promise<T> {
  const { signal: caller, waitTimeout, ...semaphoreOptions } = options
  let waitTimeoutMs = Infinity
  let limit: number
  try {
    // The wait's bound is checked with the semaphore's options: one error names every problem.
    limit = resolveSemaphoreOptions(semaphoreOptions, 'rx-consul-semaphore', (report) => {
      if (waitTimeout !== undefined)
        waitTimeoutMs = checkTimeout('waitTimeout', waitTimeout, report)
    }).limit
  } catch (error: unknown) {
    return Promise.reject(error)
  }
  if (caller?.aborted === true) {
    return Promise.reject(abortedError(caller, 'waiting for a slot', waitAloneHint(caller)))
  }
  return new Promise<T>((resolve, reject) => {
    let slot: JobSlot | undefined
    let given: Promise<void> | undefined
    const controller = new AbortController()
    /** The slot goes to the next job of the process, or back (once). */
    const giveBack = (): Promise<void> => (given ??= slot?.done() ?? Promise.resolve())
    const stopListening = caller && onAbort(caller, () => aborted())
    const waitTimer =
      waitTimeoutMs === Infinity
        ? undefined
        : (options.scheduler ?? asyncScheduler).schedule(() => {
            if (slot !== undefined) return
            stopListening?.()
            const error = waitTimeoutError(withoutTrailingSlashes(options.prefix), waitTimeoutMs)
            void leaveQueue().then(() => reject(error))
          }, waitTimeoutMs)
    const aborted = (): void => {
      const signal = caller as AbortSignal
      if (slot === undefined) {
        // Still queued: it leaves the queue, and nothing is sent to Consul for it.
        waitTimer?.unsubscribe()
        const error = abortedError(signal, 'waiting for a slot', waitAloneHint(caller))
        void leaveQueue().then(() => reject(error))
        return
      }
      // Running: its signal aborts and the slot goes on now; the promise settles with the work.
      controller.abort(abortedError(signal, 'the work holding a slot', waitAloneHint(caller)))
      giveBack().catch(() => undefined)
    }
    const leaveQueue = slotPool(semaphoreOptions, limit).submit({
      start: (held) => {
        slot = held
        waitTimer?.unsubscribe()
        held.onLost = (error) => {
          if (!controller.signal.aborted) controller.abort(error)
        }
        new Promise<T>((settle) => settle(work(controller.signal, held.guard))).then(
          (value) => finish(() => resolve(value), true),
          (error: unknown) => finish(() => reject(error), false),
        )
      },
      fail: (error) => {
        waitTimer?.unsubscribe()
        stopListening?.()
        reject(error)
      },
    })
    const finish = (outcome: () => void, succeeded: boolean): void => {
      stopListening?.()
      giveBack().then(outcome, (error: unknown) => {
        // The work's own failure matters more than a failed clean-up after it.
        if (succeeded && !controller.signal.aborted) reject(error)
        else outcome()
      })
    }
  })
}

/**
 * What the Aborted of `withSlot` adds when a timeout aborted the signal (`AbortSignal.timeout`),
 * perhaps meant to bound the wait only: the option that does that.
 */
function waitAloneHint(signal: AbortSignal | undefined): string | undefined {
  const reason: unknown = signal?.reason
  return reason instanceof Error && reason.name === 'TimeoutError'
    ? 'To bound only the wait for a slot, and never the work, use waitTimeout instead.'
    : undefined
}

/** The WaitTimeout of a wait for a slot of `prefix` that lasted `waitTimeoutMs`. */
function waitTimeoutError(prefix: string, waitTimeoutMs: number): SemaphoreError {
  return new SemaphoreError(
    'WaitTimeout',
    `no slot of ${prefix} was free within the waitTimeout of ${formatGoDuration(waitTimeoutMs)}; ` +
      'the session and contender key of the wait are released and the work was not started. ' +
      'Try again later, allow a longer waitTimeout, or see who holds the slots: ' +
      `rxsem status --prefix ${prefix}.`,
  )
}

/**
 * Options of `withSlot`: the semaphore's, the bound of the wait (`waitTimeout`), and the caller's
 * signal, which cancels the wait or the work.
 *
 * @example
 * ```ts
 * const options: WithSlotOptions = { prefix: 'service/db/lock', limit: 3, waitTimeout: '5s' }
 * await withSlot(options, (signal) => migrate(signal))
 * ```
 */
export interface WithSlotOptions extends SemaphoreOptions {
  /**
   * How long to wait for a slot, and only that: a duration ('5s', or 5000 for ms) or Infinity
   * (the default: wait for ever). No slot held within it: everything is released and `withSlot`
   * rejects with SemaphoreError('WaitTimeout'). Once the work has started it has no effect; the
   * work is never aborted by it. To stop the work too, use `signal`.
   */
  readonly waitTimeout?: Duration
  /**
   * Cancels, whenever it aborts: the wait (rejects with SemaphoreError('Aborted')), or the work
   * (its signal aborts and the slot is given back). `AbortSignal.timeout(ms)` here therefore
   * bounds the wait AND the work; to bound only the wait, use `waitTimeout`.
   */
  readonly signal?: AbortSignal | undefined
}
