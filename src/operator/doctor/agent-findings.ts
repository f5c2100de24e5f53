/**
 * `doctor`'s findings about the agent itself: why there is no usable agent and what to do, its
 * version against the known troubles, whether it is a server or a client agent, and its ACLs (on
 * or off, a token Consul knows, the default policy).
 */
import type { ConsulError } from '../../base/consul-error.js'
import { mismatchRemedy } from '../../consul/tls-mismatch.js'
import type { AgentSelf } from './agent-answers.js'
import { tokenPolicies } from './agent-answers.js'
import type { Add } from './finding.js'
import { knownIssues, parseRelease } from './known-versions.js'

/** The `agent` problem's words for a failure to reach a usable agent (its remedy is the action's). */
export function noAgent(error: ConsulError): string {
  // These messages end with the remedy, which the finding's action gives instead.
  const remedyLast =
    error._tag === 'NotConsul' || (error._tag === 'TlsRejected' && error.mismatch !== undefined)
  return remedyLast
    ? error.message.replace(/; set CONSUL_HTTP_ADDR.*$/, '')
    : `no usable answer from the agent: ${error.message}`
}

/**
 * What to do about a failure to reach a usable agent; `origin` is the client's address. Only a
 * failure where nothing answered says to start an agent.
 */
export function agentAction(error: ConsulError, origin: string): string {
  switch (error._tag) {
    case 'NotConsul':
      return 'set CONSUL_HTTP_ADDR (or the address option) to the HTTP address of a Consul agent, by default http://127.0.0.1:8500'
    case 'Unreachable':
    case 'Timeout':
      return 'start the local Consul agent, or set CONSUL_HTTP_ADDR (or the address option) to where one listens'
    case 'TlsRejected':
      if (error.mismatch !== undefined) return mismatchRemedy(error.mismatch, origin)
      return "check CONSUL_CACERT (the CA that signed the agent's certificate) and CONSUL_TLS_SERVER_NAME (the name in it)"
    default:
      return 'see what the agent answered, above'
  }
}

/** The version against the known-version table; unknown when the agent would not say. */
export function versionFindings(agent: AgentSelf | undefined, add: Add): void {
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

/** A server or a client agent, and what that means for the sessions made through it. */
export function roleFindings(agent: AgentSelf | undefined, add: Add): void {
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

/** ACLs on or off, the token known or not, and the default policy when it can be read. */
export function aclFindings(
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
