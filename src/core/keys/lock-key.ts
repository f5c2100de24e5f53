import { joinKey } from './join-key.js'

/** The name of the coordination key under a semaphore prefix (Go's `DefaultSemaphoreKey`). */
export const LOCK_KEY_NAME = '.lock'

/**
 * The key of a semaphore's coordination record, `<prefix>/.lock`, joined like Go's `path.Join`.
 *
 * @example
 * lockKey('service/db/lock/') // 'service/db/lock/.lock'
 * @param prefix - The semaphore prefix all contenders agree on.
 * @returns The `.lock` key.
 */
export function lockKey(prefix: string): string {
  return joinKey(prefix, LOCK_KEY_NAME)
}
