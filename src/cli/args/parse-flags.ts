/**
 * Command-line parsing on `node:util` parseArgs, with the messages turned into UsageErrors that
 * say which flag is wrong and how to see the right ones.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util'

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
 * Parses `argv` strictly against `spec`; every flag is long-form (`--name value` or `--name=value`).
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
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      options: spec,
      strict: true,
      allowPositionals: true,
    })
    return { values: values as ParsedValues, positionals }
  } catch (error) {
    throw new UsageError(plainParseError(error), command)
  }
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

/** parseArgs messages, without Node's error-code boilerplate. */
function plainParseError(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error)
  return message
    .replace(/\. To specify a positional argument starting with a '-'.*$/s, '.')
    .replace(/^Unknown option '(.*?)'\.?$/, 'unknown flag $1.')
}
