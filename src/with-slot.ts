import { SemaphoreError, abortedError } from './errors.js'
import type { SemaphoreOptions } from './options/contender-options.js'
import { semaphore } from './semaphore.js'
import type { SlotGuard } from './slot-guard.js'

/**
 * Runs `work` while a slot of the semaphore is held, for callers who do not use RxJS: waits for a
 * slot, calls `work(signal, slot)`, aborts `signal` the moment the slot is lost (the work should
 * stop touching the guarded resource then), and releases the slot when `work` settles. `slot` is
 * the contender's guard: `slot.isHolding()` or `slot.assertHolding()` right before each touch of
 * the resource (they read the wall clock, so they are right even after a pause that no timer has
 * noticed yet), and `slot.fencedTxn(ops)` for a Consul write that commits only while held.
 *
 * `options.signal` bounds or cancels the whole thing, as Node's own APIs take one
 * (`AbortSignal.timeout(5000)`: a slot within 5 s, or give up). An abort while waiting releases
 * everything (the session, the contender key) and then rejects with SemaphoreError('Aborted'),
 * whose `cause` is the signal's reason; an abort while `work` runs gives the slot back as
 * `close()` does and aborts `work`'s signal with that error; the promise then settles with what
 * `work` does.
 *
 * @example
 * ```ts
 * const rows = await withSlot(
 *   { prefix: 'service/db/lock', limit: 3, signal: AbortSignal.timeout(5000) },
 *   async (signal, slot) => migrate({ signal, beforeEachBatch: () => slot.assertHolding() }),
 * )
 * ```
 * @param options - The semaphore's options, as for `semaphore(...)`, and an optional `signal`.
 * @param work - The guarded work; `signal` aborts with a SemaphoreError when the slot is lost,
 *   `slot` checks synchronously that it is still held and makes fenced writes.
 * @returns What `work` returned. Rejects with what `work` threw, or with the SemaphoreError that
 *   kept the slot from being held (`Aborted` when the signal ended the wait), or with
 *   SemaphoreError('ReleaseFailed') if the release failed after the work succeeded.
 */
export function withSlot<T>(
  options: WithSlotOptions,
  work: (signal: AbortSignal, slot: SlotGuard) => Promise<T>,
): Promise<T> {
  const { signal: caller, ...semaphoreOptions } = options
  if (caller?.aborted === true) {
    return Promise.reject(abortedError(caller, 'waiting for a slot'))
  }
  const sem = semaphore(semaphoreOptions)
  const controller = new AbortController()
  return new Promise<T>((resolve, reject) => {
    let started = false
    let settled = false
    const onAbort = (): void => {
      if (!started) {
        finish(() => reject(abortedError(caller as AbortSignal, 'waiting for a slot')))
        return
      }
      // Holding: give the slot back now, and tell the work why its signal aborted.
      const error = abortedError(caller as AbortSignal, 'holding a slot')
      if (!controller.signal.aborted) controller.abort(error)
      void sem.close().catch(() => undefined)
    }
    caller?.addEventListener('abort', onAbort, { once: true })
    const finish = (outcome: () => void): void => {
      if (settled) return
      settled = true
      caller?.removeEventListener('abort', onAbort)
      sem.close().then(
        () => {
          subscription.unsubscribe()
          outcome()
        },
        (error: unknown) => {
          subscription.unsubscribe()
          // The work's own failure matters more than a failed clean-up after it.
          if (controller.signal.aborted || !started) outcome()
          else reject(error)
        },
      )
    }
    const subscription = sem.holding$.subscribe({
      next: (holding) => {
        if (holding && !started && !settled) {
          started = true
          const { isHolding, assertHolding, fencedTxn } = sem
          work(controller.signal, { isHolding, assertHolding, fencedTxn }).then(
            (value) => finish(() => resolve(value)),
            (error: unknown) => finish(() => reject(error)),
          )
        } else if (!holding && started && !controller.signal.aborted) {
          controller.abort(new SemaphoreError('SlotLost', 'the semaphore slot was lost'))
        }
      },
      error: (error: unknown) => {
        controller.abort(error)
        finish(() => reject(error))
      },
    })
  })
}

/** Options of `withSlot`: the semaphore's, and the caller's signal. */
export interface WithSlotOptions extends SemaphoreOptions {
  /**
   * Aborts the wait (and then the hold): `AbortSignal.timeout(ms)` bounds the wait for a slot.
   * See `withSlot`.
   */
  readonly signal?: AbortSignal | undefined
}
