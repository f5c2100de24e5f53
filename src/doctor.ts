/**
 * `doctor`: is this agent, token and prefix set up right for contenders? It asks the agent what a
 * contender would need (an agent that answers as Consul, a supported version, the token's rights
 * on the prefix and on sessions, the checks and lock-delay of the session a contender would make)
 * and reports each finding with what to do. It writes nothing that stays: the one session it
 * makes is destroyed before it returns, and its check of the right to write the prefix is a
 * transaction that cannot commit.
 */
import * as E from 'fp-ts/lib/Either.js'
import type { SessionInfo } from './consul/client-api.js'
import { resolveConfig, type ConsulClientConfig } from './consul/config.js'
import type { ConsulError } from './consul/errors.js'
import { createTransport, type Transport } from './consul/http.js'
import { createKv } from './consul/kv.js'
import { createSessions } from './consul/sessions.js'
import { createTxn } from './consul/txn.js'
import type { KVSnapshot } from './consul/types.js'
import { durationMs, formatGoDuration } from './consul/durations.js'
import {
  agentSelf,
  nodeChecks,
  rawGet,
  tokenPolicies,
  type AgentSelf,
} from './doctor/agent-answers.js'
import { knownIssues, parseRelease } from './doctor/known-versions.js'
import { lockFinding } from './doctor/lock-finding.js'
import { contenderKey } from './core/keys/contender-key.js'
import { lockKey } from './core/keys/lock-key.js'
import { resolveContenderOptions, type Duration } from './options/contender-options.js'

/** How much a finding matters: fine, worth knowing, or in the way of contenders. */
export type DoctorSeverity = 'ok' | 'warning' | 'problem'

/**
 * What a finding is about: the agent answering as Consul (`agent`), its `version`, whether it is
 * a server or a client agent (`agent-role`), the token (`acl`), the ACL default policy
 * (`acl-default-policy`), the token's rights on the prefix (`prefix-read`, `prefix-write`), what
 * `<prefix>/.lock` holds (`lock`), the session a contender would make (`session`), the health
 * checks it would depend on (`checks`) and its lock-delay against its TTL (`lock-delay`).
 */
export type DoctorCheck =
  | 'agent'
  | 'version'
  | 'agent-role'
  | 'acl'
  | 'acl-default-policy'
  | 'prefix-read'
  | 'prefix-write'
  | 'lock'
  | 'session'
  | 'checks'
  | 'lock-delay'

/**
 * One thing `doctor` found.
 *
 * @example
 * ```ts
 * const finding: DoctorFinding = {
 *   check: 'lock-delay',
 *   severity: 'problem',
 *   found: 'lock-delay 30s is longer than the TTL 10s: ...',
 *   action: 'give a lock-delay of at most the TTL',
 * }
 * ```
 */
export interface DoctorFinding {
  /** What the finding is about. */
  readonly check: DoctorCheck
  /** How much it matters. */
  readonly severity: DoctorSeverity
  /** What was found, for people. */
  readonly found: string
  /** What to do about it; empty when nothing needs doing. */
  readonly action: string
}

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

/** Consul's lock-delay when a session is made without one. */
const CONSUL_LOCK_DELAY_MS = 15_000

/** An index no key's ModifyIndex reaches: a CAS at it fails, or is refused for want of rights. */
const UNREACHABLE_INDEX = 2n ** 53n - 1n

/** A session id no contender has, to read "a contender key" that never exists. */
const PROBE_SESSION = '00000000-0000-0000-0000-000000000000'

/**
 * The name of the session `doctor` makes (and destroys before it returns): `rxsem doctor`, and
 * the prefix when one is given, so that an operator who sees it in Consul's UI knows what it is.
 */
export function doctorSessionName(prefix: string | undefined): string {
  return prefix === undefined ? 'rxsem doctor' : `rxsem doctor ${prefix}`
}

const POLICY_HINT = 'see "ACL policy" in docs/operations.md'

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
      serviceChecks: (options.serviceChecks ?? []).map((check) =>
        typeof check === 'string' ? { id: check } : check,
      ),
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

/** The session options a contender would make its session with. */
interface ContenderSession {
  readonly ttlMs: number
  readonly ttl: string
  /** Go duration ('500ms'), or undefined for Consul's default. */
  readonly lockDelay: string | undefined
  readonly checks: readonly string[] | undefined
  readonly serviceChecks: readonly { readonly id: string; readonly namespace?: string }[]
}

/** Thrown inside `examine` when the agent cannot be examined further; its finding is recorded. */
class Stop extends Error {}

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
    add('agent', 'problem', noAgent(result.left), agentAction(result.left))
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

type Add = (check: DoctorCheck, severity: DoctorSeverity, found: string, action?: string) => void
type Answered = <A>(result: E.Either<ConsulError, A>) => A

function noAgent(error: ConsulError): string {
  return error._tag === 'NotConsul'
    ? error.message.replace(/; set CONSUL_HTTP_ADDR.*$/, '')
    : `no usable answer from the agent: ${error.message}`
}

function agentAction(error: ConsulError): string {
  switch (error._tag) {
    case 'NotConsul':
      return 'set CONSUL_HTTP_ADDR (or the address option) to the HTTP address of a Consul agent, by default http://127.0.0.1:8500'
    case 'Unreachable':
    case 'Timeout':
      return 'start the local Consul agent, or set CONSUL_HTTP_ADDR (or the address option) to where one listens'
    case 'TlsRejected':
      return "check CONSUL_CACERT (the CA that signed the agent's certificate) and CONSUL_TLS_SERVER_NAME (the name in it)"
    default:
      return 'see what the agent answered, above'
  }
}

function versionFindings(agent: AgentSelf | undefined, add: Add): void {
  if (agent === undefined) {
    add(
      'version',
      'warning',
      "the agent's version is unknown: the token may not read /v1/agent/self",
      'run doctor with a token that has `agent_prefix "" { policy = "read" }` (an operator\'s), or check `consul version` on the agent',
    )
    return
  }
  const release = parseRelease(agent.version)
  if (release === undefined) {
    add(
      'version',
      'warning',
      `the agent reports version ${JSON.stringify(agent.version)}, which doctor cannot read`,
      'check `consul version` on the agent',
    )
    return
  }
  const issues = knownIssues(release, agent.server)
  if (issues.length === 0) {
    add(
      'version',
      'ok',
      `Consul ${agent.version}: no known trouble with sessions, KV or blocking queries`,
    )
    return
  }
  for (const issue of issues) {
    add('version', issue.severity, issue.found.replaceAll('{version}', agent.version), issue.action)
  }
}

function roleFindings(agent: AgentSelf | undefined, add: Add): void {
  if (agent?.server === undefined) return
  const where = `node ${agent.node ?? '?'}, datacenter ${agent.datacenter ?? '?'}`
  if (!agent.server) {
    add(
      'agent-role',
      'ok',
      `a client agent (${where}): sessions made through it follow this node's health`,
    )
    return
  }
  const what =
    `a server agent (${where}): the sessions contenders make through it are tied to the ` +
    "server's node and its serfHealth check, not to the host the contenders run on, so a host " +
    'that dies frees its slots only when their TTL runs out, and every long poll loads a server'
  if (agent.devMode === true) {
    add('agent-role', 'ok', `${what}. It is a dev agent (-dev), where that is expected`)
    return
  }
  add(
    'agent-role',
    'warning',
    what,
    'point contenders at the Consul client agent on their own host (the usual 127.0.0.1:8500)',
  )
}

function aclFindings(
  token: { readonly status: number; readonly body: string; readonly json: unknown },
  tokenGiven: boolean,
  agent: AgentSelf | undefined,
  add: Add,
): void {
  const disabled = token.status === 401 || /ACL support disabled/i.test(token.body)
  const aclsOn = disabled ? false : (agent?.aclsEnabled ?? true)
  if (!aclsOn) {
    add(
      'acl',
      'ok',
      'ACLs are off on this agent: any client that reaches it may read and write every key and session',
    )
  } else if (token.status === 200) {
    const policies = tokenPolicies(token.json)
    add(
      'acl',
      'ok',
      `ACLs are on; Consul knows the token${policies.length === 0 ? '' : ` (policies: ${policies.join(', ')})`}`,
    )
  } else if (/ACL not found/i.test(token.body) && tokenGiven) {
    add(
      'acl',
      'problem',
      'ACLs are on and Consul does not know the token (GET /v1/acl/token/self: 403 ACL not found): it was deleted, or never created',
      'give the contenders a token that exists (CONSUL_HTTP_TOKEN, CONSUL_HTTP_TOKEN_FILE or the token option)',
    )
  } else if (!tokenGiven) {
    add(
      'acl',
      'ok',
      "ACLs are on and no token is set: requests are made with the anonymous token (or the agent's default token)",
    )
  } else {
    add(
      'acl',
      'ok',
      `ACLs are on; the token may not read itself (GET /v1/acl/token/self: ${token.status})`,
    )
  }

  const policy = agent?.aclDefaultPolicy
  if (!aclsOn) return
  if (policy === undefined) {
    add(
      'acl-default-policy',
      'ok',
      "the ACL default policy is unknown: the token may not read the agent's configuration (/v1/agent/self)",
    )
  } else if (policy === 'allow') {
    add(
      'acl-default-policy',
      'warning',
      'the ACL default policy is "allow": any token, and clients with none, may take, hold and remove slots of every prefix no rule denies',
      'set acl.default_policy = "deny" once every client has a token (see "ACL policy" in docs/operations.md)',
    )
  } else {
    add('acl-default-policy', 'ok', `the ACL default policy is "${policy}"`)
  }
}

async function prefixFindings(
  transport: Transport,
  prefix: string,
  answered: Answered,
  add: Add,
): Promise<void> {
  const kv = createKv(transport)
  const txn = createTxn(transport)
  // Read: a listing leaves out what the token may not read (answering 200 or 404), so `.lock`
  // and a contender key are read one by one, which Consul refuses with a 403 instead.
  const keys = [lockKey(prefix), contenderKey(prefix, PROBE_SESSION)]
  const denied: string[] = []
  for (const key of keys) {
    const read = await kv.get(key)()
    if (E.isLeft(read) && read.left._tag === 'PermissionDenied') denied.push(key)
    else answered(read)
  }
  let listing: KVSnapshot | undefined
  if (denied.length > 0) {
    add(
      'prefix-read',
      'problem',
      `the token may not read ${denied.join(' nor ')} (403): contenders cannot see the holders and waiters of ${prefix}/`,
      `give the token \`key_prefix "${prefix}/" { policy = "write" }\`; ${POLICY_HINT}`,
    )
  } else {
    const listed = await kv.list(`${prefix}/`)()
    listing = answered(listed)
    add('prefix-read', 'ok', `the token may read ${prefix}/`)
  }

  // Write, without writing: a CAS at an index no key has fails as "index is stale" when the token
  // may write, and as "Permission denied" when it may not, for a missing key and an existing one.
  const probe = answerOrDenied(
    await txn([{ verb: 'cas', key: lockKey(prefix), value: null, index: UNREACHABLE_INDEX }])(),
  )
  const refused =
    probe === 'denied' ||
    (probe !== undefined &&
      !probe.committed &&
      probe.errors.some((e) => /permission denied/i.test(e.what)))
  if (refused) {
    add(
      'prefix-write',
      'problem',
      `the token may not write ${prefix}/ (a check-and-set of ${lockKey(prefix)} was refused: Permission denied): contenders fail at once with PermissionDenied`,
      `give the token \`key_prefix "${prefix}/" { policy = "write" }\`; ${POLICY_HINT}`,
    )
  } else if (probe !== undefined && !probe.committed) {
    add(
      'prefix-write',
      'ok',
      `the token may write ${prefix}/ (checked with a check-and-set that cannot match, so nothing was written)`,
    )
  } else {
    add(
      'prefix-write',
      'warning',
      `the check of the right to write ${prefix}/ gave no answer doctor can read`,
      'run `rxsem run --timeout 0` on the prefix to see whether a contender is refused',
    )
  }

  if (listing !== undefined) {
    const lock = lockFinding(listing, prefix)
    add('lock', lock.severity, lock.found, lock.action)
  }

  /** A transaction's answer, 'denied' for a 403, or a stop for anything that is no answer. */
  function answerOrDenied<A>(result: E.Either<ConsulError, A>): A | 'denied' | undefined {
    if (E.isLeft(result) && result.left._tag === 'PermissionDenied') return 'denied'
    if (E.isLeft(result) && result.left._tag === 'BadRequest') return undefined
    return answered(result)
  }
}

async function sessionFindings(
  transport: Transport,
  prefix: string | undefined,
  agent: AgentSelf | undefined,
  session: ContenderSession,
  answered: Answered,
  add: Add,
): Promise<void> {
  const sessions = createSessions(transport)
  const checkIds = session.checks ?? ['serfHealth']
  const described =
    `TTL ${session.ttl}, lock-delay ${session.lockDelay === undefined ? `${formatGoDuration(CONSUL_LOCK_DELAY_MS)} (Consul's default)` : formatGoDuration(durationMs(session.lockDelay) ?? 0)}, ` +
    `node checks ${checkIds.length === 0 ? 'none' : checkIds.join(', ')}` +
    (session.serviceChecks.length === 0
      ? ''
      : `, service checks ${session.serviceChecks.map((c) => c.id).join(', ')}`)
  const created = await sessions.create({
    name: doctorSessionName(prefix),
    ttl: session.ttl,
    behavior: 'delete',
    ...(session.lockDelay === undefined ? {} : { lockDelay: session.lockDelay }),
    ...(session.checks === undefined ? {} : { nodeChecks: session.checks }),
    ...(session.serviceChecks.length === 0 ? {} : { serviceChecks: session.serviceChecks }),
  })()
  let info: SessionInfo | null | undefined
  if (E.isLeft(created)) {
    const error = created.left
    if (error._tag === 'PermissionDenied') {
      add(
        'session',
        'problem',
        `the token may not create sessions (${described}): ${error.body || 'Permission denied'}; contenders fail at once with PermissionDenied`,
        `give the token \`session_prefix "" { policy = "write" }\` (or one naming this agent's node); ${POLICY_HINT}`,
      )
    } else if (error._tag === 'ServerError' && /check|critical/i.test(error.body)) {
      add(
        'checks',
        'problem',
        `Consul refused a session with the contenders' checks (${described}): ${error.body}; every contender would be refused the same way`,
        "register the check on this agent and make it pass, or leave it out of the contenders' checks (the checks and serviceChecks options; rxsem's --node-check and --service-check)",
      )
    } else {
      answered(created)
    }
  } else {
    try {
      const read = await sessions.info(created.right)()
      info = E.isRight(read) ? read.right : undefined
      if (E.isLeft(read) && read.left._tag !== 'PermissionDenied') answered(read)
      add(
        'session',
        info === undefined ? 'warning' : 'ok',
        info === undefined
          ? `the token may create a session as a contender would (${described}) but not read it back: \`rxsem status\` cannot name holders`
          : `the token may create, read and destroy a session as a contender would (${described}), on node ${info?.node ?? '?'}`,
        info === undefined ? `give the token session read rights; ${POLICY_HINT}` : '',
      )
    } finally {
      const destroyed = await sessions.destroy(created.right)()
      if (E.isLeft(destroyed)) {
        add(
          'session',
          'warning',
          `the session doctor made (${created.right}) could not be destroyed: ${destroyed.left.message}; it ends by its TTL`,
          `destroy it with PUT /v1/session/destroy/${created.right}, or let its TTL end it`,
        )
      }
    }
    await checkFindings(transport, info?.node ?? agent?.node, checkIds, add)
  }

  // The lock-delay Consul gave the session, else the one asked for, else Consul's default.
  const lockDelayMs =
    info?.lockDelayMs ??
    (session.lockDelay === undefined ? undefined : durationMs(session.lockDelay)) ??
    CONSUL_LOCK_DELAY_MS
  lockDelayFinding(lockDelayMs, session.ttlMs, add)
}

async function checkFindings(
  transport: Transport,
  node: string | undefined,
  checkIds: readonly string[],
  add: Add,
): Promise<void> {
  if (checkIds.length === 0) {
    add(
      'checks',
      'ok',
      'no node checks: only the TTL ends a session, whatever happens to its host (see "Riding through a rolling upgrade" in docs/operations.md)',
    )
    return
  }
  const accepted = `Consul accepted a session on ${checkIds.join(', ')}, so ${checkIds.length === 1 ? 'it is' : 'they are'} registered and not critical`
  if (node === undefined) {
    add('checks', 'ok', accepted)
    return
  }
  const health = await rawGet(transport, `/v1/health/node/${encodeURIComponent(node)}`)
  const checks =
    E.isRight(health) && health.right.status === 200 ? nodeChecks(health.right.json) : undefined
  const seen = checkIds.map((id) => checks?.find((c) => c.id === id && c.serviceId === ''))
  if (checks === undefined || seen.some((c) => c === undefined)) {
    add(
      'checks',
      'ok',
      `${accepted} (the token may not read node ${node}'s checks to show their status)`,
    )
    return
  }
  const states = seen.map((c) => `${c?.id} ${c?.status}`).join(', ')
  const warned = seen.filter((c) => c?.status !== 'passing')
  add(
    'checks',
    warned.length === 0 ? 'ok' : 'warning',
    `node checks on ${node}: ${states}`,
    warned.length === 0
      ? ''
      : 'a check that goes critical invalidates every session on it, and its holders lose their slots: find out why it is not passing',
  )
}

function lockDelayFinding(lockDelayMs: number, ttlMs: number, add: Add): void {
  const delay = formatGoDuration(lockDelayMs)
  const ttl = formatGoDuration(ttlMs)
  if (lockDelayMs > ttlMs) {
    add(
      'lock-delay',
      'problem',
      `lock-delay ${delay} is longer than the TTL ${ttl}: when a holder's session ends without a ` +
        'release (its process died, its TTL ran out, a check failed), Consul refuses its lock to ' +
        'everyone for the lock-delay, so a slot freed that way stays unusable for longer than a ' +
        'whole lease, the time the TTL was chosen to bound',
      `give the contenders a lock-delay of at most the TTL (${ttl} or less, 0 turns it off: the lockDelay option, rxsem's --lock-delay), or a longer TTL`,
    )
    return
  }
  add('lock-delay', 'ok', `lock-delay ${delay}, no longer than the TTL ${ttl}`)
}
