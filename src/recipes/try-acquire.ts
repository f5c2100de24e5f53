import type { Observable, Subscription } from 'rxjs'
import { closeOnDispose } from '../handle/close-on-dispose.js'
import {
  contendForLead,
  type LeaderElection,
  type LeaderElectionOptions,
} from './leader-election.js'
import { contendForSlot, type Semaphore } from './semaphore.js'
import type { SemaphoreOptions } from '../options/contender-options.js'
import { abortedError } from '../base/semaphore-error.js'
import {
  rejectUnknownOptions,
  CONTENDER_OPTION_NAMES,
  SEMAPHORE_OPTION_NAMES,
} from '../options/known-options.js'

/**
 * One attempt at a slot of the semaphore under `options.prefix`, answered at once: the same
 * protocol as `semaphore(...)` (session, contender key, one CAS of `.lock`), except that the
 * contender does not wait. It tries whenever a slot is free, whatever its rank among waiters (it
 * would not wait for its turn anyway), and answers "not held" as soon as the core finds no free
 * slot.
 *
 * - Held: resolves with a `Semaphore` that already holds. It behaves as any contender from then
 *   on (`holding$` turns false if the slot is lost, and it then contends again, without ranking),
 *   except that it keeps its slot without a subscriber: only `close()` gives it back.
 * - Not held: resolves with null once its contender key is deleted and its session destroyed.
 * - Rejects with a SemaphoreError: 'InvalidOptions' (nothing was sent), a prefix problem
 *   ('Conflict', 'LimitConflict', 'CorruptLock'), 'PermissionDenied', 'NotConsul', 'TlsRejected', or
 *   'Unreachable' when no agent answers (a try-once does not retry), or 'Aborted' when
 *   `options.signal` aborted the attempt (its contender key is gone by then, its session given back).
 * - After it resolved with a holder, an abort of `options.signal` closes that holder, as
 *   `close()` does.
 *
 * @example
 * ```ts
 * const sem = await tryAcquire({ prefix: 'service/db/lock', limit: 3, consul })
 * if (sem === null) console.log('all slots taken, try later')
 * else try { await work() } finally { await sem.close() }
 * ```
 * @param options - The options of `semaphore(...)`; `fairness` is ignored.
 * @returns The holding contender, or null.
 */
export function tryAcquire(options: TryOptions<SemaphoreOptions>): Promise<Semaphore | null> {
  const { signal, ...semaphoreOptions } = options
  try {
    rejectUnknownOptions(options, 'tryAcquire', { ...SEMAPHORE_OPTION_NAMES, signal: true })
  } catch (error: unknown) {
    return Promise.reject(error)
  }
  if (signal?.aborted === true) return Promise.reject(abortedError(signal, 'trying for a slot'))
  return made(() => contendForSlot(semaphoreOptions, { tryOnce: true }), signal)
}

/** The options of a try-once: the contender's, and the caller's signal. */
export type TryOptions<O> = O & {
  /** Aborts the attempt (and then the hold it won); see `tryAcquire`. */
  readonly signal?: AbortSignal | undefined
}

/**
 * One attempt at the leadership under `options.prefix` (the single-key lock `<prefix>/.lock`, as
 * `leaderElection(...)` and `consul lock`), answered at once: not held when another session holds
 * the key or when Consul refuses it for a lock-delay (after a leader's session was invalidated).
 * A separate function rather than a flag of `tryAcquire`, because the answer has another type
 * (`LeaderElection`, with `leader$`) and the two protocols do not share a prefix.
 *
 * Held: the election, already leading, kept until `close()` (as `tryAcquire`). Not held: null,
 * once its session is destroyed. Rejects with a SemaphoreError as `tryAcquire` does.
 *
 * @example
 * ```ts
 * const election = await tryLead({ prefix: 'service/scheduler/leader', value: 'node-a', consul })
 * if (election) try { await runOnce() } finally { await election.close() }
 * ```
 * @param options - The options of `leaderElection(...)`.
 * @returns The leading election, or null.
 */
export function tryLead(
  options: TryOptions<LeaderElectionOptions>,
): Promise<LeaderElection | null> {
  const { signal, ...electionOptions } = options
  try {
    rejectUnknownOptions(options, 'tryLead', { ...CONTENDER_OPTION_NAMES, signal: true })
  } catch (error: unknown) {
    return Promise.reject(error)
  }
  if (signal?.aborted === true) return Promise.reject(abortedError(signal, 'trying to lead'))
  return made(() => contendForLead(electionOptions, { tryOnce: true }), signal)
}

interface Contender {
  readonly state$: Observable<{ readonly holding: boolean }>
  close(): Promise<void>
}

/** `settleTry` on the contender `make` makes; its InvalidOptions rejects the promise. */
function made<C extends Contender>(
  make: () => C,
  signal: AbortSignal | undefined,
): Promise<C | null> {
  let contender: C
  try {
    contender = make()
  } catch (error: unknown) {
    return Promise.reject(error)
  }
  return settleTry(contender, signal)
}

/**
 * Subscribes to a try-once contender until it answers (holding, or its state completes), and
 * keeps that subscription for the holder, so that it stays a holder until `close()`.
 */
async function settleTry<C extends Contender>(
  contender: C,
  signal: AbortSignal | undefined,
): Promise<C | null> {
  let keeper: Subscription | undefined
  let held: boolean
  let onAbort: (() => void) | undefined
  try {
    held = await new Promise<boolean>((resolve, reject) => {
      onAbort = () => reject(abortedError(signal as AbortSignal, 'trying for a slot'))
      signal?.addEventListener('abort', onAbort, { once: true })
      keeper = contender.state$.subscribe({
        next: (state) => state.holding && resolve(true),
        complete: () => resolve(false),
        error: reject,
      })
    })
  } catch (error: unknown) {
    if (onAbort) signal?.removeEventListener('abort', onAbort)
    // The contender's finalize has started its release (or the abort asks for it): wait for it
    // before answering, so that nothing it created is left when the promise settles.
    await contender.close().catch(() => undefined)
    keeper?.unsubscribe()
    throw error
  }
  if (onAbort) signal?.removeEventListener('abort', onAbort)
  if (!held) {
    keeper?.unsubscribe()
    await contender.close()
    return null
  }
  const close = async (): Promise<void> => {
    if (stopOnAbort) signal?.removeEventListener('abort', stopOnAbort)
    try {
      await contender.close()
    } finally {
      keeper?.unsubscribe()
    }
  }
  // Held: the same signal now ends the hold, as close() does.
  const stopOnAbort = signal && ((): void => void close().catch(() => undefined))
  if (stopOnAbort) signal?.addEventListener('abort', stopOnAbort, { once: true })
  // The spread leaves out the contender's dispose method, which would skip the unsubscribe.
  return closeOnDispose({ ...contender, close })
}
