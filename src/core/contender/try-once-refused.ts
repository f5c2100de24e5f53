import type { SemaphoreView } from '../events.js'
import type { ContenderState } from './contender-state-model.js'
import { tryOnceVerdict, type TryOnceFacts } from './try-once-verdict.js'

/**
 * Whether a try-once contender (one that will not wait) has its answer "not held" in this state,
 * by the try-once rule (`tryOnceVerdict`) on the core's facts:
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
  return tryOnceVerdict(tryOnceFacts(state)) === 'not-held'
}

/**
 * The try-once facts of the core's state. A try-once contender runs with fairness off, and a lock
 * has no queue: its facts are unranked.
 *
 * @example
 * tryOnceVerdict(tryOnceFacts(state)) // 'held' | 'not-held' | 'undecided'
 * @param state - The core's state after an event.
 * @returns The facts the try-once rule reads.
 */
export function tryOnceFacts(state: ContenderState): TryOnceFacts {
  const decision = state.decision
  const contending = decision?.type === 'Wait' || decision?.type === 'TryAcquire'
  return {
    holding: state.holding,
    place:
      state.retired !== undefined || decision === undefined || decision.type === 'NotContending'
        ? 'none'
        : decision.type === 'Held'
          ? 'listed'
          : contending
            ? 'contending'
            : 'problem',
    freeSlots: contending ? freeSlots(decision.view) : 0,
    weight:
      (contending && decision.rank !== undefined
        ? decision.view.waiting[decision.rank]?.weight
        : undefined) ?? 1,
    rank: contending ? decision.rank : undefined,
    ranked: false,
    lockDelayed:
      decision?.type === 'TryAcquire' && state.write === undefined && state.retryAt !== undefined,
  }
}

const freeSlots = (view: SemaphoreView): number => Math.max(0, view.limit - view.liveHolders.length)
