import { joinKey } from './join-key.js'
import { LOCK_KEY_NAME } from './lock-key.js'

/**
 * The folder under a prefix where revoke requests are written: `<prefix>/.lock.revoke/<session>`.
 * Not a direct child of the prefix, so neither this library nor Consul's Go client takes its keys
 * for contender keys. Its name starts with `.lock`, so a long poll of `<prefix>/.lock` as a prefix
 * answers for a request: a leader polls that alone, and sees both the loss of its key and a
 * request to give it back (Go's `Lock` reads the key `.lock` alone, never as a prefix).
 */
export const REVOKE_DIR_NAME = `${LOCK_KEY_NAME}.revoke`

/**
 * The key that asks the holder `session` of `prefix` to give its slot back (`evict` with a grace).
 *
 * @example
 * revokeKey('service/db/lock/', '4ca8e74b-6350-7587-addf-a18084928f3c')
 * // 'service/db/lock/.lock.revoke/4ca8e74b-6350-7587-addf-a18084928f3c'
 * @param prefix - The semaphore or leader-lock prefix.
 * @param session - The holder's session.
 * @returns The revoke key, joined like Go's `path.Join`.
 */
export function revokeKey(prefix: string, session: string): string {
  return joinKey(prefix, REVOKE_DIR_NAME, session)
}
