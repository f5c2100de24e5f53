import { joinKey } from './join-key.js'

/**
 * The key a contender holds with its session, `<prefix>/<session>`, joined like Go's `path.Join`.
 *
 * @example
 * contenderKey('service/db/lock/', '4ca8e74b-6350-7587-addf-a18084928f3c')
 * // 'service/db/lock/4ca8e74b-6350-7587-addf-a18084928f3c'
 * @param prefix - The semaphore prefix all contenders agree on.
 * @param session - The contender's session id.
 * @returns The contender key.
 */
export function contenderKey(prefix: string, session: string): string {
  return joinKey(prefix, session)
}
