import * as E from 'fp-ts/lib/Either.js'
import type { ConsulError } from '../../base/consul-error.js'
import {
  releaseNext,
  releaseStart,
  type ReleaseInput,
  type ReleaseOutcome,
} from '../../core/release/release-slot-plan.js'
import { runReleasePlan, type ReleaseDriverOptions } from './release-driver.js'

/** What `releaseSlot` needs: the plan's input and the driver's client, scheduler and jitter. */
export interface ReleaseSlotOptions extends ReleaseInput, ReleaseDriverOptions {}

/**
 * Gives a semaphore slot back and leaves Consul clean: runs the release plan (`releaseStart`, in
 * the core, which makes every choice: hand-off or plain, hint or read, retries, giving up) on the
 * client, its waits on the scheduler. The session is destroyed at the end, unless `keepSession`
 * asked to keep it and the slot went back cleanly (the outcome then says `sessionKept`).
 *
 * @example
 * const result = await releaseSlot({ client, prefix: 'svc/lock', session, limit: 3 })
 * if (E.isLeft(result)) console.error(result.left.message)
 * @returns Right with how the slot went back (`HandedOff` names the heir) when the session and its contender key are gone (and `.lock` no longer lists it,
 *   or lists a session every acquirer prunes); Left with the error that stopped it (the session
 *   is still destroyed when Consul lets it be; otherwise it expires by its TTL, and others prune
 *   it).
 */
export async function releaseSlot(
  options: ReleaseSlotOptions,
): Promise<E.Either<ConsulError, ReleaseOutcome>> {
  return runReleasePlan(releaseStart(options), releaseNext, options)
}
