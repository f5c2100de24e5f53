/**
 * The try-once rule: when a contender that will not wait (`tryAcquire`, `tryLead`, `rxsem run
 * --timeout 0`) has its answer. One pure rule on facts that the library reads from the core's
 * state (`tryOnceRefused`) and `rxsem run` from the public `state$`.
 */

/** The answer of one try: held, not held, or not known from this state yet. */
export type TryOnceVerdict = 'held' | 'not-held' | 'undecided'

/**
 * Where the last decision on a snapshot put the contender:
 *
 * - `none`: no decision yet, its contender key is not (yet) in the snapshot, or its session is
 *   done (released, or gone in Consul: the run's end answers then);
 * - `listed`: `.lock` (or the lock key) lists its session, and `holding` follows;
 * - `problem`: a prefix problem (conflict, limit conflict, corrupt `.lock`), and its error follows;
 * - `contending`: its key is in Consul, it is not listed, and the slots decide.
 */
export type TryOncePlace = 'none' | 'listed' | 'problem' | 'contending'

/** What the rule needs to know about one contender after an event. */
export interface TryOnceFacts {
  /** The contender holds: the try succeeded. */
  readonly holding: boolean
  /** Where the last decision put it. */
  readonly place: TryOncePlace
  /** Slots of the last decision's view not taken by a live holder (a lock held by another: 0). */
  readonly freeSlots: number
  /** How many permits it asks for (1 but for a request of several): it needs that many free. */
  readonly weight: number
  /** Its place among the waiters (0: next), when the semaphore ranks it. */
  readonly rank: number | undefined
  /**
   * It takes a free slot only in its turn (fairness on), so only the first `freeSlots` waiters
   * have a slot for them now. A try-once contender is not ranked: it will not wait, so it keeps no
   * place in the queue, and a dead waiter ahead (its key kept until its session expires) must not
   * turn it away from a free slot.
   */
  readonly ranked: boolean
  /**
   * Its write was refused for the lock-delay that Consul sets on a key whose session was
   * invalidated: no snapshot shows when that ends, so the key is not to be had now.
   */
  readonly lockDelayed: boolean
}

/**
 * The one try's answer in this state:
 *
 * - `held` while holding;
 * - `not-held` when the contender's key is in and no slot is for it now: none free, the free ones
 *   are for waiters ahead (ranked only), or the lock refused for a lock-delay;
 * - `undecided` otherwise: no key or decision yet, listed but `holding` not yet true, a prefix
 *   problem (whose error follows), or a free slot is its own and the write is on its way. A lost
 *   write race is undecided too: the next snapshot lists the winner, and decides.
 *
 * @example
 * tryOnceVerdict({ holding: false, place: 'contending', freeSlots: 0, weight: 1, rank: 0, ranked: false, lockDelayed: false })
 * // 'not-held'
 * @param facts - The contender's facts after an event.
 * @returns Whether the one try has an answer yet, and which.
 */
export function tryOnceVerdict(facts: TryOnceFacts): TryOnceVerdict {
  if (facts.holding) return 'held'
  if (facts.place !== 'contending') return 'undecided'
  // A request of k permits has a slot when k are free: one slot for it, the rest its companions'.
  const slots = facts.freeSlots - (facts.weight - 1)
  if (facts.lockDelayed || slots <= 0) return 'not-held'
  if (facts.ranked && facts.rank !== undefined && facts.rank >= slots) return 'not-held'
  return 'undecided'
}
