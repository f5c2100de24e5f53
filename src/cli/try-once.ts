/**
 * `rxsem run --timeout 0`: try once, never queue. The verdict is taken at the first decision about
 * this contender's key, from the fields of SemaphoreState:
 *
 * - `holding`: held, run the command;
 * - `contending` (the key is in Consul and the core has decided), ranked among the waiters, but
 *   no free slot is meant for this contender (`holders.length >= limit`, or `rank` at or past the
 *   free slots, as the fair ranking lets only the first waiters try): not held, exit 124;
 * - contending without a rank: the decision was a prefix problem (conflict, limit conflict,
 *   corrupt `.lock`); the contender's error follows, and exits 1;
 * - listed as a holder while `holding` is still false: undecided, `holding` follows;
 * - otherwise (no session or key yet, or a free slot is ours and the CAS is on its way, or lost a
 *   CAS race and the next snapshot has not come): undecided, look at the next state.
 *
 * A lost CAS race resolves itself: the next snapshot lists the winner, so there is no free slot
 * left for this contender and the verdict is "not held".
 */
import type { SemaphoreState } from '../semaphore.js'

export type TryOnceVerdict = 'held' | 'not-held' | 'undecided'

/**
 * @example
 * tryOnceVerdict({ holding: false, session: 'b', contending: true, holders: ['a'], limit: 1, rank: 0 })
 * // 'not-held'
 * @param state - A state of the contender.
 * @returns Whether the one try has an answer yet, and which.
 */
export function tryOnceVerdict(
  state: Pick<SemaphoreState, 'holding' | 'session' | 'contending' | 'holders' | 'limit' | 'rank'>,
): TryOnceVerdict {
  if (state.holding) return 'held'
  if (!state.contending) return 'undecided'
  // Listed but not yet trusted (lease or watch not confirmed): holding follows.
  if (state.session !== undefined && state.holders.includes(state.session)) return 'undecided'
  // Contending without a rank: the decision was a prefix problem, and the error follows.
  if (state.rank === undefined) return 'undecided'
  const freeSlots = state.limit - state.holders.length
  if (freeSlots <= 0 || state.rank >= freeSlots) return 'not-held'
  return 'undecided'
}
