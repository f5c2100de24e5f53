/** `rxsem status`: the semaphore at a prefix, from one `kv.list`. */
import * as E from 'fp-ts/lib/Either.js'
import { createConsulClient } from '../../consul/client.js'
import { problemError } from '../../base/semaphore-error.js'
import { consulConfigFrom } from '../args/consul-flags.js'
import { describeError, ExitCode } from '../report.js'
import { readPrefixCommand } from '../args/prefix-command.js'
import { prefixStatus } from './prefix-status.js'
import { learnSessionNames, sessionsOf, withNames } from './session-names.js'
import { filteredWarning, unreadableKeys } from './listing-access.js'
import { formatStatus } from './text.js'
import { statusUsage } from '../args/usage.js'

/**
 * Runs `rxsem status` with the arguments after `status`: prints the status on stdout.
 *
 * @returns 0; 77 when the ACL token may not read the prefix (the status printed may be
 *   incomplete, a warning on stderr says why); 1 when Consul failed. Throws what `main` reports
 *   as one line and exit 1.
 */
export async function statusCommand(argv: readonly string[]): Promise<number> {
  const args = readPrefixCommand(argv, 'status')
  if (args.help) {
    process.stdout.write(statusUsage)
    return ExitCode.Ok
  }
  const { prefix, limit, values } = args

  const client = createConsulClient(consulConfigFrom(values))
  try {
    const [listed, denied] = await Promise.all([
      client.kv.list(`${prefix}/`)(),
      unreadableKeys(client, prefix),
    ])
    if (E.isLeft(listed)) {
      process.stderr.write(`rxsem: ${describeError(listed.left, prefix)}\n`)
      return ExitCode.Error
    }
    const status = prefixStatus(listed.right, prefix, limit)
    if (E.isLeft(status)) throw problemError(status.left)
    const names = new Map<string, string | null>()
    await learnSessionNames(client, sessionsOf(status.right), names)
    const named = withNames(status.right, names)
    if (denied.length > 0) process.stderr.write(`rxsem: ${filteredWarning(prefix, denied)}\n`)
    process.stdout.write(
      values['json'] === true ? `${JSON.stringify(named)}\n` : formatStatus(named),
    )
    return denied.length > 0 ? ExitCode.Filtered : ExitCode.Ok
  } finally {
    await client.close()
  }
}
