import type { ContenderState } from './contender-state-model.js'

/**
 * Whether a try-once contender (one that will not wait) has its answer "not held" in this state:
 * the core's decision, once its contender key exists, says another holder is in the way.
 *
 * - `Wait`: no free slot (the semaphore, with fairness off: a try-once contender ignores its rank
 *   because it will not wait anyway), or another session on the lock;
 * - `TryAcquire` answered by a `retry`: the lock's write was refused by Consul's lock-delay, which
 *   no snapshot shows ending (consul-http-semantics.md 3.6), so waiting for it is waiting.
 *
 * A refused CAS is not an answer yet: the snapshot it causes decides again (a slot may still be
 * free after another contender took one). `Held`, `NotContending` (the contender key is being
 * written) and a CAS in flight are no answer either.
 *
 * @example
 * states.pipe(takeWhile((state) => state.holding || !tryOnceRefused(state), true))
 * @param state - The core's state after an event.
 * @returns true when the contender should give up now.
 */
export function tryOnceRefused(state: ContenderState): boolean {
  if (state.holding || state.retired !== undefined) return false
  const decision = state.decision
  if (decision?.type === 'Wait') return true
  return decision?.type === 'TryAcquire' && state.next === undefined && state.retryAt !== undefined
}
