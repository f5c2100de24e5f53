/**
 * `rxsem run`'s command line, checked: everything the run needs, or a UsageError /
 * SemaphoreError('InvalidOptions') before anything is sent to Consul.
 */
import type { ConsulClientConfig } from '../../consul/config.js'
import { resolveContenderOptions, resolveLimit } from '../../options/contender-options.js'
import { parseFlags, splitAtCommand, type OptionSpec } from '../args/parse-flags.js'
import { consulConfigFrom, consulFlagSpec } from '../args/consul-flags.js'
import {
  countFlag,
  durationFlag,
  listFlag,
  requiredFlag,
  shown,
  stringFlag,
} from '../args/flag-values.js'
import { durationMs } from '../../consul/durations.js'
import type { Verbosity } from '../report.js'
import { badValue, UsageError } from '../args/parse-flags.js'
import { parseHealthAddr, type HealthAddress } from './health-server.js'

export interface RunPlan {
  readonly help: boolean
  readonly leader: boolean
  readonly prefix: string
  readonly limit: number
  /** `--follow-limit`: take the limit `.lock` states (`SemaphoreOptions.followLimit`). */
  readonly followLimit: boolean
  /** `--permits`: slots held at once (`SemaphoreOptions.permits`); 1 by default. */
  readonly permits: number
  readonly ttl: string | undefined
  /** `--lock-delay`: the session's lock-delay (`ContenderOptions.lockDelay`); undefined: Consul's. */
  readonly lockDelay: string | undefined
  readonly sessionName: string
  readonly value: string | undefined
  /** undefined: wait for ever; 0: try once. */
  readonly timeoutMs: number | undefined
  readonly graceMs: number
  /** `--ride-through`: keep the command running through a Consul outage up to the lease. */
  readonly rideThrough: boolean
  readonly shell: boolean
  /** `--health-addr`: where the readiness and liveness endpoint listens, if anywhere. */
  readonly healthAddr: HealthAddress | undefined
  /**
   * `--node-check` (repeatable), or `[]` for `--no-node-checks`: the node checks the session
   * depends on (`ContenderOptions.checks`); undefined: the library's default, serfHealth.
   */
  readonly nodeChecks: readonly string[] | undefined
  /** `--service-check` (repeatable): service check IDs the session depends on. */
  readonly serviceChecks: readonly string[] | undefined
  readonly verbosity: Verbosity
  readonly command: readonly string[]
  readonly consul: ConsulClientConfig
}

const DEFAULT_GRACE_MS = 5000

export const runFlagSpec = {
  prefix: { type: 'string' },
  limit: { type: 'string', short: 'n' },
  leader: { type: 'boolean' },
  'follow-limit': { type: 'boolean' },
  permits: { type: 'string' },
  ttl: { type: 'string' },
  'lock-delay': { type: 'string' },
  name: { type: 'string' },
  value: { type: 'string' },
  timeout: { type: 'string' },
  grace: { type: 'string' },
  'ride-through': { type: 'boolean' },
  'health-addr': { type: 'string' },
  'service-check': { type: 'string', multiple: true },
  'node-check': { type: 'string', multiple: true },
  'no-node-checks': { type: 'boolean' },
  shell: { type: 'boolean' },
  verbose: { type: 'boolean' },
  quiet: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  ...consulFlagSpec,
} as const satisfies OptionSpec

/**
 * Parses and checks `rxsem run` arguments.
 *
 * @param argv - The arguments after `run`.
 * @returns The plan; `help` set means only the usage is wanted.
 */
export function planRun(argv: readonly string[]): RunPlan | { readonly help: true } {
  const { flags, command } = splitAtCommand(argv, runFlagSpec)
  const { values } = parseFlags(flags, runFlagSpec, 'run')
  if (values['help'] === true) return { help: true }

  const leader = values['leader'] === true
  const prefix = requiredFlag(values, 'prefix', 'run')
  const limitFlag = countFlag(values, 'limit', 'run')
  if (leader && limitFlag !== undefined && limitFlag !== 1) {
    throw new UsageError('--leader holds a one-holder lock: leave out --limit.', 'run')
  }
  const followLimit = values['follow-limit'] === true
  if (leader && followLimit) {
    throw new UsageError(
      '--leader holds a one-holder lock, whose limit is always 1: leave out --follow-limit.',
      'run',
    )
  }
  const permits = countFlag(values, 'permits', 'run') ?? 1
  if (leader && permits !== 1) {
    throw new UsageError('--leader holds a one-holder lock: leave out --permits.', 'run')
  }
  if (limitFlag !== undefined && permits > limitFlag) {
    throw new UsageError(
      `--permits ${permits} is more than --limit ${limitFlag}: such a request could never be served.`,
      'run',
    )
  }
  if (!leader && limitFlag === undefined) {
    throw new UsageError('--limit is required (or --leader for a one-holder lock).', 'run')
  }
  if (values['verbose'] === true && values['quiet'] === true) {
    throw new UsageError('--verbose and --quiet contradict each other: pick one.', 'run')
  }
  if (command.length === 0 || command[0] === '') {
    throw new UsageError('no command to run: give it after --, e.g. `-- ./backup.sh`.', 'run')
  }

  // The ranges (10s to 24h, 0 to 60s) are the library's to check; a negative or malformed
  // duration is said plainly.
  const [ttl, lockDelay] = (['ttl', 'lock-delay'] as const).map((name) => {
    const text = stringFlag(values, name)
    if (text !== undefined && durationMs(text) === undefined) {
      throw new UsageError(badValue(name, shown(text)), 'run')
    }
    return text
  })
  const value = stringFlag(values, 'value')
  const nameFlag = stringFlag(values, 'name')
  const healthFlag = stringFlag(values, 'health-addr')
  const healthAddr = healthFlag === undefined ? undefined : parseHealthAddr(healthFlag)
  const serviceCheckFlags = listFlag(values, 'service-check')
  const nodeCheckFlags = listFlag(values, 'node-check')
  for (const [name, ids] of [
    ['service-check', serviceCheckFlags],
    ['node-check', nodeCheckFlags],
  ] as const) {
    if (ids?.some((id) => id.trim() === '') === true) {
      throw new UsageError(badValue(name, '""'), 'run')
    }
  }
  if (values['no-node-checks'] === true && nodeCheckFlags !== undefined) {
    throw new UsageError(
      '--no-node-checks and --node-check contradict each other: pick one.',
      'run',
    )
  }
  const serviceChecks = serviceCheckFlags?.length ? serviceCheckFlags : undefined
  const nodeChecks = values['no-node-checks'] === true ? [] : nodeCheckFlags
  // The library's own checks, now, so that a bad option never waits behind a Consul round trip.
  const resolved = resolveContenderOptions(
    {
      prefix,
      ttl,
      lockDelay,
      value,
      sessionName: nameFlag,
      ...(serviceChecks ? { serviceChecks } : {}),
      ...(nodeChecks ? { checks: nodeChecks } : {}),
    },
    'rxsem',
  )
  // Like `consul lock`'s default name: the command and the prefix, so `status` says who it is.
  const sessionName =
    nameFlag ?? `rxsem run '${command.join(' ')}' at ${resolved.prefix}`.slice(0, 200)
  const limit = resolveLimit(limitFlag ?? 1)

  return {
    help: false,
    leader,
    prefix: resolved.prefix,
    limit,
    followLimit,
    permits,
    ttl,
    lockDelay,
    sessionName,
    value,
    timeoutMs: durationFlag(values, 'timeout', 'run'),
    graceMs: durationFlag(values, 'grace', 'run') ?? DEFAULT_GRACE_MS,
    rideThrough: values['ride-through'] === true,
    shell: values['shell'] === true,
    healthAddr,
    serviceChecks,
    nodeChecks,
    verbosity:
      values['verbose'] === true ? 'verbose' : values['quiet'] === true ? 'quiet' : 'normal',
    command,
    consul: consulConfigFrom(values),
  }
}
