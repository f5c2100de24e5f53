import { SemaphoreError } from './errors.js'
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
 * @example
 * ```ts
 * const rows = await withSlot({ prefix: 'service/db/lock', limit: 3 }, async (signal, slot) => {
 *   return migrate({ signal, beforeEachBatch: () => slot.assertHolding() })
 * })
 * ```
 * @param options - The semaphore's options, as for `semaphore(...)`.
 * @param work - The guarded work; `signal` aborts with a SemaphoreError when the slot is lost,
 *   `slot` checks synchronously that it is still held and makes fenced writes.
 * @returns What `work` returned. Rejects with what `work` threw, or with the SemaphoreError that
 *   kept the slot from being held, or with SemaphoreError('ReleaseFailed') if the release failed
 *   after the work succeeded.
 */
export function withSlot<T>(
  options: SemaphoreOptions,
  work: (signal: AbortSignal, slot: SlotGuard) => Promise<T>,
): Promise<T> {
  const sem = semaphore(options)
  const controller = new AbortController()
  return new Promise<T>((resolve, reject) => {
    let started = false
    let settled = false
    const finish = (outcome: () => void): void => {
      if (settled) return
      settled = true
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
        if (holding && !started) {
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
