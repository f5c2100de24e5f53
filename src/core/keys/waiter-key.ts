import { directChild } from './direct-child.js'
import { joinKey } from './join-key.js'

/**
 * The folder under a leader-lock prefix where this library's waiters queue:
 * `<prefix>/.queue/<session>`. Not a direct child of the prefix, so no semaphore contender (ours or
 * Go's) is taken from it; not a name that starts with `.lock`, so a long poll of `<prefix>/.lock`
 * (Go's `Lock` reads that key alone, and our first in line polls it as a prefix) never answers for
 * a waiter's key.
 */
export const QUEUE_DIR_NAME = '.queue'

/**
 * The key a waiter of the single-key lock holds with its session while it waits for the lock.
 *
 * @example
 * waiterKey('service/scheduler/leader', '4ca8e74b-6350-7587-addf-a18084928f3c')
 * // 'service/scheduler/leader/.queue/4ca8e74b-6350-7587-addf-a18084928f3c'
 * @param prefix - The leader lock's prefix.
 * @param session - The waiter's session.
 * @returns The waiter key, joined like Go's `path.Join`.
 */
export function waiterKey(prefix: string, session: string): string {
  return joinKey(prefix, QUEUE_DIR_NAME, session)
}

/**
 * Builds a test for "is this key a waiter key of the prefix", returning the session it is named
 * after.
 *
 * @example
 * const waiterOf = waiterName('svc/leader')
 * waiterOf('svc/leader/.queue/4ca8…') // '4ca8…'
 * waiterOf('svc/leader/.lock') // undefined
 * @param prefix - The leader lock's prefix.
 * @returns A function from a key to the session it names, or undefined for any other key.
 */
export function waiterName(prefix: string): (key: string) => string | undefined {
  return directChild(joinKey(prefix, QUEUE_DIR_NAME))
}
