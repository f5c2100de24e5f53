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

/**
 * Parses the arguments of a command that reads one prefix: `--prefix` (required), `--limit`,
 * `--help`, the Consul connection flags, and the command's own `extra` flags; no positionals.
 *
 * @example
 * const args = readPrefixCommand(argv, { json: { type: 'boolean' } }, 'status')
 * if (!args.help) console.log(args.prefix, args.values['json'])
 * @returns The parsed arguments; throws a UsageError naming the command on a bad one.
 */
export function readPrefixCommand(
  argv: readonly string[],
  extra: OptionSpec,
  command: 'status' | 'watch' | 'set-limit' | 'evict' | 'drain',
): PrefixCommand {
  const spec: OptionSpec = {
    prefix: { type: 'string' },
    limit: { type: 'string', short: 'n' },
    help: { type: 'boolean', short: 'h' },
    ...extra,
    ...consulFlagSpec,
  }
  const { values, positionals } = parseFlags(argv, spec, command)
  if (values['help'] === true) return { help: true }
  rejectPositionals(positionals, command)
  const { prefix } = resolveContenderOptions(
    { prefix: requiredFlag(values, 'prefix', command) },
    'rxsem',
  )
  return { help: false, prefix, limit: countFlag(values, 'limit', command), values }
}
