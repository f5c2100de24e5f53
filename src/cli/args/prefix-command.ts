/**
 * The arguments `rxsem status`, `watch`, `set-limit`, `evict` and `drain` share: a prefix, a limit (to
 * expect, or to set), help.
 */
import { resolveContenderOptions } from '../../options/contender-options.js'
import { parseFlags, rejectPositionals, type OptionSpec, type ParsedValues } from './parse-flags.js'
import { consulFlagSpec } from './consul-flags.js'
import { countFlag, requiredFlag } from './flag-values.js'

export type PrefixCommand =
  /** `--help` was given: print the usage, nothing else. */
  | { readonly help: true }
  | {
      readonly help: false
      /** The prefix, normalised as contenders normalise it (trailing '/' dropped). */
      readonly prefix: string
      /** `--limit`, the limit to expect, if given. */
      readonly limit: number | undefined
      /** Every flag, for the Consul connection and the command's own flags. */
      readonly values: ParsedValues
    }

/** The commands that read one prefix. */
export type PrefixCommandName = 'status' | 'watch' | 'set-limit' | 'evict' | 'drain'

/** The flags of each prefix command besides the ones they share (`prefixCommandSpec`). */
const ownFlags: Readonly<Record<PrefixCommandName, OptionSpec>> = {
  status: { json: { type: 'boolean' }, sample: { type: 'string' } },
  watch: {},
  'set-limit': { json: { type: 'boolean' }, 'dry-run': { type: 'boolean' } },
  evict: {
    session: { type: 'string' },
    grace: { type: 'string' },
    reason: { type: 'string' },
    json: { type: 'boolean' },
  },
  drain: { lift: { type: 'boolean' }, json: { type: 'boolean' } },
}

/**
 * Every flag `command` takes: `--prefix`, `--limit`, `--help`, the Consul connection flags, and
 * its own.
 *
 * @example
 * Object.keys(prefixCommandSpec('evict')) // ['prefix', 'limit', 'help', 'session', 'json', ...]
 */
export function prefixCommandSpec(command: PrefixCommandName): OptionSpec {
  return {
    prefix: { type: 'string' },
    limit: { type: 'string', short: 'n' },
    help: { type: 'boolean', short: 'h' },
    ...ownFlags[command],
    ...consulFlagSpec,
  }
}

/**
 * Parses the arguments of a command that reads one prefix: `--prefix` (required), `--limit`,
 * `--help`, the Consul connection flags, and the command's own flags; no positionals.
 *
 * @example
 * const args = readPrefixCommand(argv, 'status')
 * if (!args.help) console.log(args.prefix, args.values['json'])
 * @returns The parsed arguments; throws a UsageError naming the command on a bad one.
 */
export function readPrefixCommand(
  argv: readonly string[],
  command: PrefixCommandName,
): PrefixCommand {
  const { values, positionals } = parseFlags(argv, prefixCommandSpec(command), command)
  if (values['help'] === true) return { help: true }
  rejectPositionals(positionals, command)
  const { prefix } = resolveContenderOptions(
    { prefix: requiredFlag(values, 'prefix', command) },
    'rxsem',
  )
  return { help: false, prefix, limit: countFlag(values, 'limit', command), values }
}
