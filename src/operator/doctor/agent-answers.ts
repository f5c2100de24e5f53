/**
 * The agent's own endpoints `doctor` reads besides KV and sessions, each answer kept as data (a
 * 403 is a finding, not a failure): `/v1/agent/self`, `/v1/acl/token/self` and
 * `/v1/health/node/<node>`. A 404 or 501 to them, or an HTML page, is no Consul agent's answer.
 */
import * as E from 'fp-ts/lib/Either.js'
import type { ConsulError } from '../../base/consul-error.js'
import type { HttpAnswer, Transport } from '../../consul/http.js'
import { answeredOnlyTls, tlsOnlyAgent } from '../../consul/tls-mismatch.js'
import { isForeignStatus, notConsul } from '../../consul/not-consul.js'
import { agentVersion } from '../../base/consul-version.js'

/** An answer of the agent: its status, its body, and the body as JSON when it is JSON. */
export interface RawAnswer {
  readonly status: number
  readonly body: string
  readonly json: unknown
  /** Consul 1.11+: the listing left out what the token may not read. */
  readonly filteredByAcls: boolean
}

function parsed(body: string): unknown {
  try {
    return JSON.parse(body) as unknown
  } catch {
    return undefined
  }
}

/**
 * GET `path` and keep whatever the agent answered, unless it cannot be a Consul agent, or is one
 * that speaks only TLS to a client that sent plain HTTP.
 */
export function rawGet(
  transport: Transport,
  path: string,
): Promise<E.Either<ConsulError, RawAnswer>> {
  return transport.call({ method: 'GET', path }, (answer: HttpAnswer) =>
    isForeignStatus(answer.status)
      ? E.left(
          notConsul(
            answer,
            `it answered ${answer.status} to GET ${path}, which every Consul agent serves`,
          ),
        )
      : answeredOnlyTls(answer)
        ? E.left(tlsOnlyAgent(answer))
        : E.right({
            status: answer.status,
            body: answer.body.trim(),
            json: parsed(answer.body),
            filteredByAcls: answer.headers['x-consul-results-filtered-by-acls'] === 'true',
          }),
  )()
}

const field = (value: unknown, name: string): unknown =>
  typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[name] : undefined

/** What `/v1/agent/self` says about the agent, as far as `doctor` needs it. */
export interface AgentSelf {
  readonly version: string
  readonly server: boolean | undefined
  readonly datacenter: string | undefined
  readonly node: string | undefined
  readonly devMode: boolean | undefined
  readonly aclsEnabled: boolean | undefined
  readonly aclDefaultPolicy: string | undefined
}

/**
 * The agent's description from a 200 of `/v1/agent/self`, or undefined when the answer has no
 * `Config.Version` (no Consul agent answers so). The ACL settings are in `DebugConfig`: at its top
 * level up to 1.10, under `ACLResolverSettings` from 1.11.
 */
export function agentSelf(json: unknown): AgentSelf | undefined {
  const version = agentVersion(json)
  if (version === undefined) return undefined
  const config = field(json, 'Config')
  const debug = field(json, 'DebugConfig')
  const resolver = field(debug, 'ACLResolverSettings')
  const text = (value: unknown): string | undefined =>
    typeof value === 'string' ? value : undefined
  const flag = (value: unknown): boolean | undefined =>
    typeof value === 'boolean' ? value : undefined
  return {
    version,
    server: flag(field(config, 'Server')),
    datacenter: text(field(config, 'Datacenter')),
    node: text(field(config, 'NodeName')),
    devMode: flag(field(debug, 'DevMode')),
    aclsEnabled: flag(field(debug, 'ACLsEnabled')) ?? flag(field(resolver, 'ACLsEnabled')),
    aclDefaultPolicy:
      text(field(debug, 'ACLDefaultPolicy')) ?? text(field(resolver, 'ACLDefaultPolicy')),
  }
}

/** One health check of a node, from `/v1/health/node/<node>`. */
export interface NodeCheck {
  readonly id: string
  readonly status: string
  readonly serviceId: string
}

/** The checks of a `/v1/health/node/<node>` answer; undefined when it is not a list of checks. */
export function nodeChecks(json: unknown): readonly NodeCheck[] | undefined {
  if (!Array.isArray(json)) return undefined
  return json.flatMap((check: unknown) => {
    const id = field(check, 'CheckID')
    const status = field(check, 'Status')
    const serviceId = field(check, 'ServiceID')
    return typeof id === 'string' && typeof status === 'string'
      ? [{ id, status, serviceId: typeof serviceId === 'string' ? serviceId : '' }]
      : []
  })
}

/** The policy names of a `/v1/acl/token/self` answer (empty when it lists none). */
export function tokenPolicies(json: unknown): readonly string[] {
  const policies = field(json, 'Policies')
  if (!Array.isArray(policies)) return []
  return policies.flatMap((policy: unknown) => {
    const name = field(policy, 'Name')
    return typeof name === 'string' ? [name] : []
  })
}
