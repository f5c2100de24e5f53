/**
 * The Consul releases `doctor` knows to matter to sessions, KV and blocking queries, in one table:
 * what goes wrong on each and what to do. Each row names the Consul issues it comes from.
 */
import { compareReleases, parseRelease, type Release } from '../../base/consul-version.js'

export { parseRelease, type Release }

/** One known trouble, on the releases from `from` through `through` (both included). */
export interface KnownVersionIssue {
  readonly from: Release
  readonly through: Release
  readonly severity: 'warning' | 'problem'
  /** Only through a client agent (a server agent answers these requests itself). */
  readonly clientAgentOnly: boolean
  /** What goes wrong, for people; `{version}` is replaced by the agent's version. */
  readonly found: string
  /** What to do about it. */
  readonly action: string
}

const LAST = Number.MAX_SAFE_INTEGER

const IO_DEADLINE: Omit<KnownVersionIssue, 'from' | 'through'> = {
  severity: 'warning',
  clientAgentOnly: true,
  found:
    'Consul {version} through a client agent can end a blocking read early with a 500 "rpc error ' +
    'making call: i/o deadline reached" (a client RPC timeout added in 1.11.9, 1.12.1 and 1.13.0 ' +
    'cuts long polls short: hashicorp/consul#13303, #14732, #15246). The library takes such an ' +
    "answer to a long poll as a wait cut short and reads again instead of dropping a holder's " +
    'slot (docs/operations.md), but every watch then costs more requests and the agent logs an ' +
    'error for each',
  action:
    'upgrade the agents to 1.15 or later; until then, expect those 500s in the agent log (a larger ' +
    'rpc_hold_timeout on the client agents makes them rarer)',
}

/** Every known trouble, oldest first. */
export const KNOWN_VERSION_ISSUES: readonly KnownVersionIssue[] = [
  {
    from: [0, 0, 0],
    through: [1, 7, LAST],
    severity: 'problem',
    clientAgentOnly: false,
    found:
      'Consul {version} is older than 1.8, the oldest release this library supports and is tested ' +
      'on: sessions, transactions and blocking queries behave differently there (for one, 1.7.0 ' +
      'and 1.7.1 servers could not renew sessions made before an upgrade: hashicorp/consul#7395)',
    action: 'upgrade the Consul agents and servers to 1.8 or later',
  },
  { from: [1, 11, 9], through: [1, 11, LAST], ...IO_DEADLINE },
  { from: [1, 12, 1], through: [1, 14, LAST], ...IO_DEADLINE },
]

/**
 * The known troubles of `release`, as the agent at hand meets them (`server`: false for a client
 * agent, undefined when unknown, which counts as a client agent).
 *
 * @example
 * knownIssues([1, 13, 2], false) // [the i/o deadline warning]
 */
export function knownIssues(
  release: Release,
  server: boolean | undefined,
): readonly KnownVersionIssue[] {
  return KNOWN_VERSION_ISSUES.filter(
    (issue) =>
      compareReleases(issue.from, release) <= 0 &&
      compareReleases(release, issue.through) <= 0 &&
      !(issue.clientAgentOnly && server === true),
  )
}
