import * as E from 'fp-ts/lib/Either.js'
import type { ConsulClient } from '../../consul/client-api.js'
import type { ConsulError } from '../../base/consul-error.js'
import { SemaphoreError } from '../../base/semaphore-error.js'
import type { SessionGrant } from '../../core/contender/contender-life.js'
import { adoptedSessionGone } from './give-up-error.js'

/**
 * Takes an existing session over (`ContenderOptions.session`): one renewal, which says that it
 * exists and what TTL it runs on, and starts its lease afresh. A session that does not exist is
 * SessionGone; one without a TTL is refused, since the lease deadline counts from it.
 *
 * @example
 * const answer = await adoptSession(client, session, controller.signal, scheduler.now())
 * @returns The session as the contender runs it, or why it cannot.
 */
export async function adoptSession(
  client: ConsulClient,
  session: string,
  signal: AbortSignal,
  sentAt: number,
): Promise<E.Either<ConsulError | SemaphoreError, SessionGrant>> {
  const renewed = await client.session.renew(session, { signal })()
  if (E.isLeft(renewed)) return renewed
  const info = renewed.right
  if (info === null) return E.left(adoptedSessionGone(session, 'does not exist'))
  if (info.ttlMs === undefined) {
    return E.left(
      new SemaphoreError(
        'InvalidOptions',
        `option session: session ${session} has no TTL, so no lease deadline can be counted for ` +
          'it and holding$ could not be kept safe: give a session created with a TTL (10s to 24h).',
      ),
    )
  }
  return E.right({ session, ttlMs: info.ttlMs, sentAt })
}
