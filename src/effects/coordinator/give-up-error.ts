import type { ConsulClient } from '../../consul/client-api.js'
import type { ConsulError } from '../../base/consul-error.js'
import type { GiveUp } from '../../core/contender/contender-life.js'
import type { CheckRefusal } from '../../core/contender/check-refusal.js'
import { SemaphoreError, toSemaphoreError } from '../../base/semaphore-error.js'
import type { ResolvedContenderOptions } from '../../options/contender-options.js'
import type { ContenderProtocol } from '../protocol/contender-protocol.js'
import { sentences } from '../../base/sentences.js'

/** The address of the client's agent, for a client that says it (`createConsulClient`'s). */
function agentAddress(client: ConsulClient): string {
  const config = (client as { config?: { origin?: string; socketPath?: string } }).config
  return config?.socketPath === undefined
    ? (config?.origin ?? 'the configured address')
    : `unix://${config.socketPath}`
}

/**
 * The SemaphoreError('Unreachable') of a contender that found no usable agent within its start-up
 * timeout: the address, the last failure (or none: the first request never answered), and what to
 * do.
 *
 * @example
 * unreachableError(client, 15_000, lastFailure) // "no Consul agent answered at http://…"
 */
export function unreachableError(
  client: ConsulClient,
  timeoutMs: number,
  last: ConsulError | undefined,
): SemaphoreError {
  const address = agentAddress(client)
  const within = `within ${timeoutMs / 1000} s (the option startupTimeout)`
  // A Consul agent that answered with a server failure runs: say what to look at, not to start one.
  const answered = last?._tag === 'ServerError'
  const what =
    last === undefined
      ? `no answer from a Consul agent at ${address} ${within}`
      : answered
        ? `the Consul agent at ${address} did not accept a session ${within}; last: ${last.message}`
        : `no Consul agent answered at ${address} ${within}; last: ${last.message}`
  const todo = answered
    ? 'Check that its servers have a leader (`consul operator raft list-peers`) and read the ' +
      "agent's log"
    : 'Start a Consul agent there (`consul agent -dev` to try), or set CONSUL_HTTP_ADDR to the ' +
      'address of a running one'
  return new SemaphoreError(
    'Unreachable',
    sentences(what, `${todo}; startupTimeout: Infinity waits for ever`),
    ...(last === undefined ? [] : [{ cause: last }]),
  )
}

/**
 * The error of a contender that gave up, in words: what went wrong and what to do.
 *
 * @example
 * observer.error(giveUpError({ why: 'unreachable', last }, options, protocol))
 * @returns The SemaphoreError its observer gets.
 */
export function giveUpError(
  giveUp: GiveUp,
  options: Pick<ResolvedContenderOptions, 'prefix' | 'startupTimeoutMs' | 'leaseMarginMs'> & {
    readonly client: ConsulClient
  },
  protocol: Pick<ContenderProtocol, 'problemError'>,
): SemaphoreError {
  switch (giveUp.why) {
    case 'failed':
      return toSemaphoreError(giveUp.error, options.prefix)
    case 'unreachable':
      return unreachableError(options.client, options.startupTimeoutMs, giveUp.last)
    case 'problem':
      return protocol.problemError(giveUp.problem)
    case 'check-refused':
      return checkRefused(giveUp.refusal)
    case 'adopted-gone':
      return adoptedSessionGone(giveUp.session, 'ended while the contender used it')
    case 'lease-margin':
      return new SemaphoreError(
        'InvalidOptions',
        `option leaseMargin: ${options.leaseMarginMs} ms is not less than the TTL of ` +
          `session ${giveUp.session} (${giveUp.ttlMs} ms): give a shorter margin, or a fraction ` +
          'of the TTL.',
      )
  }
}

/**
 * The error of a contender whose adopted session is gone (`ContenderOptions.session`): it cannot
 * make another in its place.
 *
 * @example
 * adoptedSessionGone(session, 'does not exist')
 * @returns SemaphoreError('SessionGone').
 */
export function adoptedSessionGone(session: string, what: string): SemaphoreError {
  return new SemaphoreError(
    'SessionGone',
    `the session given as option session (${session}) ${what} (destroyed, or expired by its ` +
      'TTL): a contender never makes a session in place of one it was given. Give it a live ' +
      'session, or leave the option out to have it make its own.',
  )
}

/** Consul's refusal of a session for a service check, with what to do. */
function checkRefused({ id, state, error }: CheckRefusal): SemaphoreError {
  const why =
    state === 'critical'
      ? `its service check '${id}' is critical, and Consul makes no session tied to a failing check: ` +
        'the contender can run once the check passes'
      : `no check '${id}' is registered on the agent's node: give the ID of a check ` +
        'the agent has (`consul catalog` or GET /v1/agent/checks lists them), or register it first'
  return new SemaphoreError(
    'Consul',
    `Consul refused to create the session (${error.body}): ${why}.`,
    { cause: error },
  )
}
