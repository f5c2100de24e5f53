import { asyncScheduler, type SchedulerLike, type Subscription } from 'rxjs'
import { SemaphoreError, abortedError } from '../base/semaphore-error.js'
import { formatGoDuration } from '../consul/durations.js'
import {
  checkTimeout,
  withoutTrailingSlashes,
  type Duration,
  type SemaphoreOptions,
} from '../options/contender-options.js'
import { onAbort } from '../handle/abort-fanout.js'
import type { SlotGuard } from '../handle/slot-guard.js'
import { slotPool, type JobSlot, type PoolJob, type SlotPool } from './slot-pool.js'
import {
  rejectUnknownOptions,
  SEMAPHORE_OPTION_NAMES,
  type OptionNames,
} from '../options/known-options.js'

/**
 * Runs `work` while a slot of the semaphore is held, for callers who do not use RxJS: waits for a
 * slot, calls `work(signal, slot)`, aborts `signal` the moment the slot is lost (the work should
 * stop touching the guarded resource then), and releases the slot when `work` settles. `signal`
 * also aborts, with SemaphoreError('RevokeRequested'), when someone asks the holder to give its
 * slot back (`evict` with a grace): the slot is still held while the work stops, and given back
 * when it settles, before the grace ends if the work stops in time. `slot` is
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
 * @param work - The guarded work; `signal` aborts with a SemaphoreError when the slot is lost
 *   (`SlotLost`) or asked back (`RevokeRequested`),
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
  const { signal: caller, waitTimeout } = options
  let waitTimeoutMs = Infinity
  let pool: SlotPool
  try {
    rejectUnknownOptions(options, 'withSlot', WITH_SLOT_OPTION_NAMES)
    // The wait's bound is checked with the semaphore's options: one error names every problem.
    // The pool takes the semaphore's options out of `options` itself (no copy per call).
    pool = slotPool(
      options,
      waitTimeout === undefined
        ? undefined
        : (report) => void (waitTimeoutMs = checkTimeout('waitTimeout', waitTimeout, report)),
    )
  } catch (error: unknown) {
    return Promise.reject(error)
  }
  if (caller?.aborted === true) {
    return Promise.reject(abortedError(caller, 'waiting for a slot', waitAloneHint(caller)))
  }
  return new Promise<T>((resolve, reject) => {
    const job = new SlotJob(pool, work, resolve, reject, caller)
    if (waitTimeoutMs !== Infinity) job.bound(options.scheduler ?? asyncScheduler, waitTimeoutMs)
    pool.submit(job)
  })
}

/**
 * One `withSlot` call in its pool: queued until a worker holds, then its work under the token of
 * that moment. One object per job, its methods on the prototype: ten thousand queued jobs are ten
 * thousand of these and their promises, with no listener and no controller each.
 */
class SlotJob<T> implements PoolJob {
  queued = false
  private slot: JobSlot | undefined
  private given: Promise<void> | undefined
  /** The work's signal, made when it starts. */
  private controller: AbortController | undefined
  private waitTimer: Subscription | undefined
  private readonly stopListening: (() => void) | undefined

  constructor(
    private readonly pool: SlotPool,
    private readonly work: (signal: AbortSignal, slot: SlotGuard) => Promise<T>,
    private readonly resolve: (value: T) => void,
    private readonly reject: (error: unknown) => void,
    private readonly caller: AbortSignal | undefined,
  ) {
    this.stopListening = caller && onAbort(caller, () => this.aborted(caller))
  }

  /** Bounds the wait (`waitTimeout`). */
  bound(scheduler: SchedulerLike, ms: number): void {
    this.waitTimer = scheduler.schedule(() => {
      if (this.slot !== undefined) return
      this.stopListening?.()
      const prefix = withoutTrailingSlashes(this.pool.prefix)
      const error = waitTimeoutError(prefix, ms)
      void this.pool.cancel(this).then(() => this.reject(error))
    }, ms)
  }

  start(slot: JobSlot): void {
    this.slot = slot
    this.waitTimer?.unsubscribe()
    const caller = this.caller
    if (caller?.aborted === true) {
      // Aborted, but started by a listener of the same abort that ran before this job's own (a
      // job ahead of it that stopped and passed its slot on at once): the work never runs.
      this.stopListening?.()
      const error = abortedError(caller, 'waiting for a slot', waitAloneHint(caller))
      this.giveBack().then(
        () => this.reject(error),
        () => this.reject(error),
      )
      return
    }
    const controller = (this.controller = new AbortController())
    new Promise<T>((settle) => settle(this.work(controller.signal, slot.guard))).then(
      (value) => this.finish(() => this.resolve(value), true),
      (error: unknown) => this.finish(() => this.reject(error), false),
    )
  }

  fail(error: SemaphoreError): void {
    this.waitTimer?.unsubscribe()
    this.stopListening?.()
    this.reject(error)
  }

  stop(error: SemaphoreError): void {
    const controller = this.controller
    if (controller !== undefined && !controller.signal.aborted) controller.abort(error)
  }

  private aborted(signal: AbortSignal): void {
    const controller = this.controller
    if (controller === undefined) {
      // Still queued: it leaves the queue, and nothing is sent to Consul for it.
      this.waitTimer?.unsubscribe()
      const error = abortedError(signal, 'waiting for a slot', waitAloneHint(signal))
      void this.pool.cancel(this).then(() => this.reject(error))
      return
    }
    // Running: its signal aborts and the slot goes on now; the promise settles with the work.
    controller.abort(abortedError(signal, 'the work holding a slot', waitAloneHint(signal)))
    this.giveBack().catch(() => undefined)
  }

  /** The slot goes to the next job of the process, or back (once). */
  private giveBack(): Promise<void> {
    return (this.given ??= this.slot?.done() ?? Promise.resolve())
  }

  private finish(outcome: () => void, succeeded: boolean): void {
    this.stopListening?.()
    this.giveBack().then(
      () => this.end(outcome),
      (error: unknown) => {
        // The work's own failure matters more than a failed clean-up after it.
        if (succeeded && this.controller?.signal.aborted !== true) {
          this.end(() => this.reject(error))
        } else this.end(outcome)
      },
    )
  }

  /**
   * Settles the job, then lets go of what its start made (its slot, its signal, the promise of
   * its slot's hand-on). A job that waited is in the old generation by then, and what it still
   * pointed to would outlive every young collection until the next full one: for a busy pool,
   * most of what a job's start allocates.
   */
  private end(outcome: () => void): void {
    outcome()
    this.slot = undefined
    this.controller = undefined
    this.given = undefined
  }
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

/** The names of the options `withSlot` takes, checked against its options' interface. */
const WITH_SLOT_OPTION_NAMES = {
  ...SEMAPHORE_OPTION_NAMES,
  waitTimeout: true,
  signal: true,
} as const satisfies OptionNames<WithSlotOptions>
