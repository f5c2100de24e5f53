import type { ConsulClient } from '../../consul/client-api.js'
import type { ConsulError } from '../../base/consul-error.js'
import { SemaphoreError } from '../../base/semaphore-error.js'
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
