/**
 * Command-line parsing on `node:util` parseArgs, with the messages turned into UsageErrors that
 * say which flag is wrong and how to see the right ones.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util'
import { nearestName } from '../../base/nearest-name.js'
import { sentences } from '../../base/sentences.js'

/**
 * A command line `rxsem` cannot act on: an unknown command or flag, a missing or malformed value.
 * `main` prints its message on one line with a pointer to `--help`, and exits 1.
 */
export class UsageError extends Error {
  override readonly name = 'UsageError'
  constructor(
    message: string,
    /** The command whose `--help` explains the fix, e.g. 'run'; undefined for `rxsem` itself. */
    readonly command?: string,
  ) {
    super(message)
  }
}

export type OptionSpec = NonNullable<ParseArgsConfig['options']>

/** The values parseArgs returns for a spec: strings, booleans, or undefined when absent. */
export type ParsedValues = Record<string, string | boolean | undefined>

/**
 * Parses `argv` strictly against `spec`: long flags (`--name value` or `--name=value`), and the
 * short aliases the spec gives (`-n 2`, `-h`).
 *
 * @param argv - The arguments after the command name.
 * @param spec - The flags the command accepts.
 * @param command - The command name, for the `--help` pointer in errors.
 * @returns The flag values and the positionals.
 */
export function parseFlags(
  argv: readonly string[],
  spec: OptionSpec,
  command: string,
): { values: ParsedValues; positionals: string[] } {
  rejectRawToken(argv, command)
  rejectSingleDash(argv, spec, command)
  try {
    const { values, positionals } = parseArgs({
      args: splitShortEquals(argv, spec),
      options: spec,
      strict: true,
      allowPositionals: true,
    })
    return { values: values as ParsedValues, positionals }
  } catch (error) {
    throw new UsageError(plainParseError(error, argv, spec), command)
  }
}

/**
 * `-n=2` as `-n 2`: Go's flag package (and so `consul lock -n=2`) takes both, where parseArgs would
 * read the value as "=2".
 */
function splitShortEquals(argv: readonly string[], spec: OptionSpec): string[] {
  const shorts = new Set(
    Object.values(spec).flatMap((o) => (o.type === 'string' && o.short ? [o.short] : [])),
  )
  return argv.flatMap((arg) => {
    const match = /^-([A-Za-z])=(.*)$/s.exec(arg)
    return match?.[1] !== undefined && shorts.has(match[1])
      ? [`-${match[1]}`, match[2] ?? '']
      : [arg]
  })
}

/**
 * Splits `rxsem run` arguments into its own flags and the child command: the command starts after
 * `--`, or at the first word that is not a flag or a flag's value, so that the child's own flags
 * (`ls -l`) are never taken for rxsem's.
 */
export function splitAtCommand(
  argv: readonly string[],
  spec: OptionSpec,
): { flags: string[]; command: string[] } {
  const dashDash = argv.indexOf('--')
  const head = dashDash < 0 ? argv : argv.slice(0, dashDash)
  // Non-strict, to find where the first positional is; the strict parse of the flags comes later.
  const { tokens } = parseArgs({
    args: [...head],
    options: spec,
    strict: false,
    allowPositionals: true,
    tokens: true,
  })
  const first = tokens.find((token) => token.kind === 'positional')
  if (first !== undefined) {
    return { flags: head.slice(0, first.index), command: argv.slice(first.index) }
  }
  return { flags: [...head], command: dashDash < 0 ? [] : argv.slice(dashDash + 1) }
}

/** Commands that take only flags say so when given a stray word. */
export function rejectPositionals(positionals: readonly string[], command: string): void {
  if (positionals.length > 0) {
    throw new UsageError(`unexpected argument ${JSON.stringify(positionals[0])}.`, command)
  }
}

/**
 * `-prefix` or `-http-addr=...`, Go's spelling of a flag that `consul lock` users type: parseArgs
 * would read it as a cluster of one-letter flags (`-h -t -t -p ...`) and name only one of them.
 */
function rejectSingleDash(argv: readonly string[], spec: OptionSpec, command: string): void {
  for (const arg of argv) {
    const bare = /^-([^-][^=]+)/.exec(arg)?.[1]
    if (bare !== undefined && Object.hasOwn(spec, bare)) {
      throw new UsageError(
        `unknown flag -${bare}: rxsem's flags take two dashes, --${bare}.`,
        command,
      )
    }
  }
}

/** A token on the command line is visible to every user in `ps`: refuse it before anything else. */
function rejectRawToken(argv: readonly string[], command: string): void {
  const flag = argv.find((arg) => arg === '--token' || arg.startsWith('--token='))
  if (flag !== undefined) {
    throw new UsageError(
      '--token is not accepted: a token on the command line is visible to other users in `ps`. ' +
        'Use --token-file <path>, CONSUL_HTTP_TOKEN_FILE or CONSUL_HTTP_TOKEN.',
      command,
    )
  }
}

/**
 * What a flag's value must be, in the words its error gives: `--ttl must be <this>; got -5s`.
 * Flags not named here take any text.
 */
const valueRules: Readonly<Record<string, string>> = {
  ttl: 'a positive duration such as 15s or 1m (10s to 24h)',
  'lock-delay': 'a duration such as 1s, or 0 to turn it off (0 to 60s)',
  timeout: 'a positive duration such as 30s or 5m, or 0 to try once',
  grace: 'a positive duration such as 5s, or 0',
  limit: 'a whole number of at least 1, such as 3',
  'health-addr': 'HOST:PORT, such as 127.0.0.1:8080, or :8080 for every interface',
  'service-check': 'the ID of a health check registered on the agent, such as service:web',
  'node-check': 'the ID of a node health check of the agent, such as serfHealth',
}

/** `--ttl must be a positive duration such as 15s or 1m (10s to 24h); got -5s.` */
export function badValue(name: string, value: string): string {
  const rule = valueRules[name] ?? 'a value'
  return sentences(`--${name} must be ${rule}; got ${value}`)
}

/**
 * parseArgs' failures in plain words: an unknown flag with the nearest known one, a value that
 * starts with '-' (a negative duration or number, or a forgotten value), a missing value.
 */
function plainParseError(error: unknown, argv: readonly string[], spec: OptionSpec): string {
  const message = error instanceof Error ? error.message : String(error)
  const code = (error as { code?: unknown }).code
  const flagIn = (pattern: RegExp): string | undefined => pattern.exec(message)?.[1]
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
    const flag = flagIn(/^Unknown option '(.*?)'/) ?? ''
    return unknownFlag(flag, argv, spec)
  }
  const ambiguous = flagIn(/^Option '(?:-\w, )?--([\w-]+)(?: <value>)?' argument is ambiguous/)
  if (ambiguous !== undefined) {
    const value = valueAfter(argv, ambiguous, spec) ?? '-'
    const word = value.split('=')[0] ?? value
    const known = Object.entries(spec).some(
      ([name, option]) => word === `--${name}` || word === `-${option.short ?? ''}`,
    )
    if (known) return `--${ambiguous} needs a value, but the next argument is the flag ${word}.`
    if (valueRules[ambiguous] !== undefined) return badValue(ambiguous, value)
    return `--${ambiguous} needs a value; to give one that starts with '-', write --${ambiguous}=${value}.`
  }
  const missing = flagIn(/^Option '(?:-\w, )?--([\w-]+)(?: <value>)?' argument missing/)
  if (missing !== undefined) {
    const rule = valueRules[missing]
    return `--${missing} needs a value${rule === undefined ? '' : `: ${rule}`}.`
  }
  const noValue = flagIn(/^Option '(?:-\w, )?--([\w-]+)' does not take an argument/)
  if (noValue !== undefined) return `--${noValue} takes no value: give it alone.`
  return message.replace(/\. To specify a positional argument starting with a '-'.*$/s, '.')
}

/** The argument after `--name` (or its short alias) in `argv`: the value parseArgs refused. */
function valueAfter(argv: readonly string[], name: string, spec: OptionSpec): string | undefined {
  const short = spec[name]?.short
  const at = argv.findIndex((arg) => arg === `--${name}` || (short && arg === `-${short}`))
  return at < 0 ? undefined : argv[at + 1]
}

/**
 * `unknown flag --limt. Did you mean --limit?`. parseArgs names only the first letter of a
 * single-dash word (`-prefix` is `-p -r -e ...` to it), so the word itself is looked up in `argv`:
 * `consul lock` users type Go's single-dash flags.
 */
function unknownFlag(flag: string, argv: readonly string[], spec: OptionSpec): string {
  const longNames = Object.keys(spec)
  const word =
    /^-[^-]$/.test(flag) && !longNames.some((name) => spec[name]?.short === flag.slice(1))
      ? argv.find((arg) => arg.startsWith(flag) && /^-[^-]/.test(arg))
      : undefined
  const typed = (word ?? flag).split('=')[0] ?? flag
  const bare = typed.replace(/^--?/, '')
  const near = nearestName(bare, longNames)
  return sentences(
    `unknown flag ${typed}`,
    near === undefined ? undefined : `Did you mean --${near}?`,
  )
}
