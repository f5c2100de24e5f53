/**
 * The vocabulary of `doctor`'s findings, shared by the steps that make them: what a finding is
 * about, how much it matters, and the two helpers every step is given (`add` a finding, and
 * `answered`, which turns a failure to reach a usable agent into a finding and a stop).
 */
import type * as E from 'fp-ts/lib/Either.js'
import type { ConsulError } from '../../base/consul-error.js'

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

/** Records a finding. */
export type Add = (
  check: DoctorCheck,
  severity: DoctorSeverity,
  found: string,
  action?: string,
) => void

/** The answer of a call, or (when the agent could not be used) an 'agent' problem and a Stop. */
export type Answered = <A>(result: E.Either<ConsulError, A>) => A

/** Thrown inside `examine` when the agent cannot be examined further; its finding is recorded. */
export class Stop extends Error {}

/** Where the policy a token needs is given. */
export const POLICY_HINT = 'see "ACL policy" in docs/operations.md'
