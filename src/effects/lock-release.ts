import * as E from 'fp-ts/lib/Either.js'
import type { ConsulClient } from '../consul/client-api.js'
import type { ConsulError } from '../consul/errors.js'
import { LOCK_FLAGS } from '../consul/flags.js'
import { lockKey } from '../core/keys/lock-key.js'
import { withTransientRetries } from './call-policy.js'

export interface LockReleaseOptions {
  readonly client: ConsulClient
  readonly prefix: string
  readonly session: string
  /** The value the lock was acquired with: `?release` rewrites the value, so send it again. */
  readonly value: string
}

/**
 * Gives the lock back and leaves Consul clean, as Go's `Lock.Unlock` does: `PUT ?release=<session>`
 * on `<prefix>/.lock` with the same value and LOCK_FLAGS (Consul replaces value and flags on
 * release, so anything else would change what others read), then destroy the session.
 *
 * The order matters for the handover: an explicit release sets no lock-delay, so a waiter can
 * acquire at once; destroying a session that still holds the key would invalidate it and make
 * Consul refuse the key to everyone for the session's lock-delay. A release that answers false
 * (this session did not hold the key: a waiter, or a prefix in conflict) changes nothing.
 *
 * The key stays, unheld, with this contender's value (as Go's `Unlock` leaves it): deleting it
 * would race a waiter's acquisition, and the value tells operators who led last.
 *
 * @example
 * const result = await releaseLockKey({ client, prefix: 'service/scheduler/leader', session, value: 'node-a' })
 * if (E.isLeft(result)) console.error(result.left.message)
 * @returns Right when the key is released (or was not held) and the session destroyed; Left with
 *   the first error (the session is still destroyed when Consul lets it be, and Consul then frees
 *   the key after the lock-delay; otherwise the session expires by its TTL).
 */
export async function releaseLockKey(
  options: LockReleaseOptions,
): Promise<E.Either<ConsulError, void>> {
  const { client, prefix, session } = options
  const released = await withTransientRetries(
    client.kv.put(lockKey(prefix), options.value, { release: session, flags: LOCK_FLAGS }),
  )
  // Destroy the session even when the release failed: Consul then frees the key itself (behavior
  // 'release'), after the lock-delay, rather than after the TTL.
  const destroyed = await withTransientRetries(client.session.destroy(session))
  if (E.isLeft(released)) return released
  return E.isLeft(destroyed) ? destroyed : E.right(undefined)
}
