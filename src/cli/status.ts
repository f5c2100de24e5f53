/** `rxsem status`: the semaphore at a prefix, from one `kv.list`. */
import * as E from 'fp-ts/lib/Either.js'
import { createConsulClient } from '../consul/client.js'
import { problemError } from '../errors.js'
import { resolveContenderOptions } from '../options/contender-options.js'
import { parseFlags, rejectPositionals, type OptionSpec } from './args.js'
import { consulConfigFrom, consulFlagSpec } from './consul-flags.js'
import { describeError } from './describe-error.js'
import { ExitCode } from './exit-codes.js'
import { countFlag, requiredFlag } from './flag-values.js'
import { prefixStatus } from './prefix-status.js'
import { learnSessionNames, sessionsOf, withNames } from './session-names.js'
import { formatStatus } from './status-text.js'
import { statusUsage } from './usage.js'

const statusFlagSpec = {
  prefix: { type: 'string' },
  limit: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  ...consulFlagSpec,
} as const satisfies OptionSpec

/**
 * Runs `rxsem status` with the arguments after `status`: prints the status on stdout.
 *
 * @returns 0; throws what `main` reports as one line and exit 1.
 */
export async function statusCommand(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseFlags(argv, statusFlagSpec, 'status')
  if (values['help'] === true) {
    process.stdout.write(statusUsage)
    return ExitCode.Ok
  }
  rejectPositionals(positionals, 'status')
  const { prefix } = resolveContenderOptions(
    { prefix: requiredFlag(values, 'prefix', 'status') },
    'rxsem',
  )
  const limit = countFlag(values, 'limit', 'status')

  const client = createConsulClient(consulConfigFrom(values))
  try {
    const listed = await client.kv.list(`${prefix}/`)()
    if (E.isLeft(listed)) {
      process.stderr.write(`rxsem: ${describeError(listed.left)}\n`)
      return ExitCode.Error
    }
    const status = prefixStatus(listed.right, prefix, limit)
    if (E.isLeft(status)) throw problemError(status.left)
    const names = new Map<string, string | null>()
    await learnSessionNames(client, sessionsOf(status.right), names)
    const named = withNames(status.right, names)
    process.stdout.write(
      values['json'] === true ? `${JSON.stringify(named)}\n` : formatStatus(named),
    )
    return ExitCode.Ok
  } finally {
    await client.close()
  }
}
