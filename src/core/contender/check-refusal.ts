import type { ServerError } from '../../base/consul-error.js'
import { isConsulError } from '../../base/failure-kinds.js'

/** Consul's refusal to tie a session to one of the contender's service checks. */
export interface CheckRefusal {
  /** The check's ID, as the contender gave it (`serviceChecks`). */
  readonly id: string
  /** In critical state, or not registered on the agent's node. */
  readonly state: 'critical' | 'missing'
  /** Consul's answer. */
  readonly error: ServerError
}

/**
 * A session create that Consul refused for one of the contender's service checks: a check in
 * critical state, or one the agent does not know. Consul answers it with a 500 that retrying would
 * only repeat until the application is healthy again (or the ID is fixed). A refusal for a node
 * check (serfHealth critical while the node is cut off) is not one: it passes with the partition.
 *
 * @example
 * serviceCheckRefusal(error, [{ id: 'api' }]) // { id: 'api', state: 'critical', error }
 * @param error - The failure of the session create.
 * @param serviceChecks - The contender's service checks, if any.
 * @returns The refusal, or undefined when the failure is not one.
 */
export function serviceCheckRefusal(
  error: unknown,
  serviceChecks: readonly { readonly id: string }[] | undefined,
): CheckRefusal | undefined {
  if (serviceChecks === undefined) return undefined
  if (!isConsulError(error) || error._tag !== 'ServerError') return undefined
  const critical = /Check '(.*)' is in critical state/.exec(error.body)
  const missing = /Missing (?:service )?check '(.*)' registration/.exec(error.body)
  const id = critical?.[1] ?? missing?.[1]
  if (id === undefined || !serviceChecks.some((check) => check.id === id)) return undefined
  return { id, state: critical !== null ? 'critical' : 'missing', error }
}
