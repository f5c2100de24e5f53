import * as E from 'fp-ts/lib/Either.js'
import type { ConsulError } from '../../base/consul-error.js'
import {
  leaderKeyReleaseNext,
  leaderKeyReleaseStart,
  type LeaderKeyReleaseInput,
} from '../../core/release/leader-key-release-plan.js'
import { runReleasePlan, type ReleaseDriverOptions } from './release-driver.js'

/** What `releaseLeaderKey` needs: the plan's input and the driver's client, scheduler and jitter. */
export interface LeaderKeyReleaseOptions extends LeaderKeyReleaseInput, ReleaseDriverOptions {}

/**
 * Gives the single-key lock back and leaves Consul clean: runs the lock release plan
 * (`leaderKeyReleaseStart`: `?release=` with the same value and flags, then destroy the session) on the
 * client. A release that answers false (this session did not hold the key) changes nothing.
 *
 * @example
 * const result = await releaseLeaderKey({ client, prefix: 'service/scheduler/leader', session, value: 'node-a' })
 * if (E.isLeft(result)) console.error(result.left.message)
 * @returns Right when the key is released (or was not held) and the session destroyed; Left with
 *   the first error (the session is still destroyed when Consul lets it be, and Consul then frees
 *   the key after the lock-delay; otherwise the session expires by its TTL).
 */
export async function releaseLeaderKey(
  options: LeaderKeyReleaseOptions,
): Promise<E.Either<ConsulError, void>> {
  const result = await runReleasePlan(leaderKeyReleaseStart(options), leaderKeyReleaseNext, options)
  return E.map((): void => undefined)(result)
}
