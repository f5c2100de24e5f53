/**
 * `doctor`: is this agent, token and prefix set up right for contenders? It asks the agent what a
 * contender would need (an agent that answers as Consul, a supported version, the token's rights
 * on the prefix and on sessions, the checks and lock-delay of the session a contender would make)
 * and reports each finding with what to do. It writes nothing that stays: the one session it
 * makes is destroyed before it returns, and its check of the right to write the prefix is a
 * transaction that cannot commit.
 */
import * as E from 'fp-ts/lib/Either.js'
import { resolveConfig, type ConsulClientConfig } from '../consul/config.js'
import type { ConsulError } from '../base/consul-error.js'
import { createTransport, type Transport } from '../consul/http.js'
import { agentSelf, rawGet, type AgentSelf } from './doctor/agent-answers.js'
import {
  aclFindings,
  agentAction,
  noAgent,
  roleFindings,
  versionFindings,
} from './doctor/agent-findings.js'
import {
  Stop,
  type DoctorCheck,
  type DoctorFinding,
  type DoctorSeverity,
} from './doctor/finding.js'
import { prefixFindings } from './doctor/prefix-findings.js'
import { sessionFindings, type ContenderSession } from './doctor/session-findings.js'
import {
  resolveContenderOptions,
  validated,
  type Duration,
  type ReportProblem,
} from '../options/contender-options.js'
import { rejectUnknownOptions, type OptionNames } from '../options/known-options.js'

export type { DoctorCheck, DoctorFinding, DoctorSeverity } from './doctor/finding.js'

/**
 * What `doctor` found, in the order it looked.
 *
 * @example
 * ```ts
 * const report: DoctorReport = await doctor({ prefix: 'service/db/lock' })
 * for (const f of report.findings) console.log(f.severity, f.check, f.found)
 * process.exitCode = report.problems > 0 ? 1 : 0
 * ```
 */
export interface DoctorReport {
  /** The agent asked: `http://127.0.0.1:8500` or `unix:///path`. */
  readonly address: string
  /** The prefix looked at, or null when none was given. */
  readonly prefix: string | null
  /** What the agent said of itself; null when it would not say (or is not an agent). */
  readonly agent: {
    readonly version: string
    readonly server: boolean | null
    readonly datacenter: string | null
    readonly node: string | null
  } | null
  /** Every finding, in the order they were made. */
  readonly findings: readonly DoctorFinding[]
  /** How many findings are problems: contenders would fail or be unsafe until they are fixed. */
  readonly problems: number
  /** How many findings are warnings. */
  readonly warnings: number
}

/**
 * Options of `doctor`: the connection, and the session options the contenders use, so that the
 * session checked is the one they would make.
 *
 * @example
 * ```ts
 * const options: DoctorOptions = { prefix: 'service/db/lock', ttl: '20s', lockDelay: '5s' }
 * ```
 */
export interface DoctorOptions {
  /** The connection to check, as `createConsulClient` takes it; default the CONSUL_* variables. */
  readonly consul?: ConsulClientConfig
  /** The contenders' prefix: its rights and its `.lock` are checked too. Default none. */
  readonly prefix?: string
  /** The contenders' session TTL, 10s to 24h. Default '15s', the contenders' default. */
  readonly ttl?: Duration
  /** The contenders' lock-delay, 0 to 60s. Default Consul's, 15s. */
  readonly lockDelay?: Duration
  /** The node checks of the contenders' sessions. Default ['serfHealth']; [] for none. */
  readonly checks?: readonly string[]
  /** The service checks of the contenders' sessions (check IDs). Default none. */
  readonly serviceChecks?: readonly (
    string | { readonly id: string; readonly namespace?: string }
  )[]
}

/** The names of the options `doctor` takes, checked against its options' interface. */
const DOCTOR_OPTION_NAMES = {
  consul: true,
  prefix: true,
  ttl: true,
  lockDelay: true,
  checks: true,
  serviceChecks: true,
} as const satisfies OptionNames<DoctorOptions>

/**
 * Checks the agent, the token and (with `prefix`) the prefix as a contender would use them, and
 * says what it found. It never rejects for what Consul answers (an unreachable agent is a
 * finding); it throws SemaphoreError('InvalidOptions') for options a contender would refuse too,
 * and ConsulConfigError for a connection that cannot be configured.
 *
 * @example
 * ```ts
 * const report = await doctor({ prefix: 'service/db/lock' })
 * for (const { severity, found, action } of report.findings) {
 *   console.log(`${severity}: ${found}${action === '' ? '' : `; ${action}`}`)
 * }
 * ```
 * @param options - The connection and the contenders' prefix and session options.
 * @returns The findings, with how many are problems and warnings.
 */
export async function doctor(options: DoctorOptions = {}): Promise<DoctorReport> {
  rejectUnknownOptions(options, 'doctor', DOCTOR_OPTION_NAMES)
  const resolved = resolveContenderOptions(
    {
      prefix: options.prefix ?? 'rxsem-doctor',
      ...(options.ttl === undefined ? {} : { ttl: options.ttl }),
      ...(options.lockDelay === undefined ? {} : { lockDelay: options.lockDelay }),
      ...(options.checks === undefined ? {} : { checks: options.checks }),
    },
    'rxsem doctor',
  )
  const prefix = options.prefix === undefined ? undefined : resolved.prefix
  const config = resolveConfig(options.consul ?? {})
  const transport = createTransport(config)
  const address = config.socketPath === undefined ? config.origin : `unix://${config.socketPath}`
  const findings: DoctorFinding[] = []
  let agent: AgentSelf | undefined
  try {
    const session = {
      ttlMs: resolved.ttlMs,
      ttl: resolved.ttl,
      lockDelay: resolved.lockDelay,
      checks: resolved.checks,
      serviceChecks: validated((report) => serviceChecksOf(options.serviceChecks, report)),
    }
    agent = await examine(transport, config.token !== undefined, prefix, session, findings)
  } finally {
    await transport.close()
  }
  return {
    address,
    prefix: prefix ?? null,
    agent:
      agent === undefined
        ? null
        : {
            version: agent.version,
            server: agent.server ?? null,
            datacenter: agent.datacenter ?? null,
            node: agent.node ?? null,
          },
    findings,
    problems: findings.filter((f) => f.severity === 'problem').length,
    warnings: findings.filter((f) => f.severity === 'warning').length,
  }
}

/**
 * The examination, step by step; each step adds its findings. A step that finds no agent to talk
 * to (unreachable, not Consul) records it and stops the rest.
 *
 * @returns What the agent said of itself, if it did.
 */
async function examine(
  transport: Transport,
  tokenGiven: boolean,
  prefix: string | undefined,
  session: ContenderSession,
  findings: DoctorFinding[],
): Promise<AgentSelf | undefined> {
  const add = (check: DoctorCheck, severity: DoctorSeverity, found: string, action = ''): void => {
    findings.push({ check, severity, found, action })
  }
  /** The answer, or the finding that there is no usable agent, and a stop. */
  const answered = <A>(result: E.Either<ConsulError, A>): A => {
    if (E.isRight(result)) return result.right
    add('agent', 'problem', noAgent(result.left), agentAction(result.left, transport.config.origin))
    throw new Stop()
  }
  let agent: AgentSelf | undefined
  try {
    // 1. The agent answers as Consul, and says what it is.
    const self = answered(await rawGet(transport, '/v1/agent/self'))
    if (self.status === 200) {
      agent = agentSelf(self.json)
      if (agent === undefined) {
        add(
          'agent',
          'problem',
          `${transport.config.origin} answered GET /v1/agent/self without a Consul agent's ` +
            'description (no Config.Version): it is not a Consul agent',
          'set CONSUL_HTTP_ADDR (or the address option) to the HTTP address of a Consul agent, by default http://127.0.0.1:8500',
        )
        throw new Stop()
      }
      add('agent', 'ok', `a Consul agent answers at ${transport.config.origin}`)
    } else if (self.status === 403) {
      add(
        'agent',
        'ok',
        `an agent answers at ${transport.config.origin}, but the token may not read its ` +
          'description (GET /v1/agent/self: 403), so its version, role and ACL default policy are unknown',
      )
    } else {
      add(
        'agent',
        'problem',
        `GET /v1/agent/self answered ${self.status}: ${self.body.slice(0, 200)}`,
        "check the agent's log",
      )
      throw new Stop()
    }

    // 2. Its version against the known troubles; 3. server or client agent.
    versionFindings(agent, add)
    roleFindings(agent, add)

    // 4. The token: ACLs on or off, a token Consul knows; the default policy.
    const token = answered(await rawGet(transport, '/v1/acl/token/self'))
    aclFindings(token, tokenGiven, agent, add)

    // 5. The token's rights on the prefix, and what its `.lock` holds.
    if (prefix !== undefined) await prefixFindings(transport, prefix, answered, add)

    // 6. The session a contender would make: made, read back, destroyed; its checks, its lock-delay.
    await sessionFindings(transport, prefix, agent, session, answered, add)
  } catch (error) {
    if (!(error instanceof Stop)) throw error
  }
  return agent
}

/** The service checks as `{ id, namespace? }`, reporting a list that is not one of check IDs. */
function serviceChecksOf(
  checks: DoctorOptions['serviceChecks'],
  report: ReportProblem,
): ContenderSession['serviceChecks'] {
  const list: unknown = checks ?? []
  const resolved = Array.isArray(list)
    ? list.map((check: unknown) =>
        typeof check === 'string'
          ? { id: check }
          : (check as { id?: unknown; namespace?: unknown }),
      )
    : []
  const valid = (c: {
    id?: unknown
    namespace?: unknown
  }): c is { id: string; namespace?: string } =>
    typeof c.id === 'string' &&
    c.id !== '' &&
    (c.namespace === undefined || typeof c.namespace === 'string')
  if (!Array.isArray(list) || !resolved.every(valid)) {
    report(
      'serviceChecks',
      `${JSON.stringify(checks)} must be a list of service check IDs, e.g. ["service:web-1"], or of { id, namespace }.`,
    )
    return []
  }
  return resolved.filter(valid)
}
