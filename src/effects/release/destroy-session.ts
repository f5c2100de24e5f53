import * as E from 'fp-ts/lib/Either.js'
import type { ConsulError } from '../../base/consul-error.js'
import {
  firstTry,
  triageAnswer,
  type CallInFlight,
  type PlanStep,
  type ReleaseAnswer,
} from '../../core/release/release-call.js'
import { runReleasePlan, type ReleaseDriverOptions } from './release-driver.js'

/** What `destroySession` needs: the session, and the driver's client, scheduler and jitter. */
export interface DestroySessionOptions extends ReleaseDriverOptions {
  readonly session: string
}

type DestroyStep = PlanStep<CallInFlight, E.Either<ConsulError, void>>

/**
 * Destroys a session that never took part (nothing was written with it), with the retries of
 * every release call (`triageAnswer`): a session whose creation answered after its contender was
 * closed or stopped.
 *
 * ```
 * destroy ─► done      (tried again after a transient failure, up to RELEASE_CALL_TRIES calls)
 * ```
 *
 * @example
 * const result = await destroySession({ client, session })
 * if (E.isLeft(result)) console.error(result.left.message)
 * @returns Right once Consul has no such session (a destroy of one already gone answers true
 *   too); Left with the error that stopped it (the session then expires by its TTL).
 */
export function destroySession(
  options: DestroySessionOptions,
): Promise<E.Either<ConsulError, void>> {
  const call = { type: 'destroy', session: options.session } as const
  return runReleasePlan({ type: 'call', call, state: firstTry(call) }, destroyNext, options)
}

function destroyNext(inFlight: CallInFlight, answer: ReleaseAnswer): DestroyStep {
  const triage = triageAnswer(inFlight, answer)
  switch (triage.type) {
    case 'retry':
    case 'resend':
      return { type: 'call', call: triage.call, state: triage.inFlight }
    case 'failed':
      return { type: 'done', result: E.left(triage.error) }
    case 'answered':
      return { type: 'done', result: E.right(undefined) }
  }
}
