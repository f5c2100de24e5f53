/**
 * `rxsem status`: the semaphore at a prefix, from one `kv.list`; with `--sample`, from a watch of
 * that long, whose hand-overs give each waiter an estimated wait.
 */
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
import { samplePrefix, withEstimates } from './sample.js'
import { durationFlag } from '../args/flag-values.js'
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
  const sampleMs = durationFlag(values, 'sample', 'status')

  const client = createConsulClient(consulConfigFrom(values))
  try {
    const [listed, denied] = await Promise.all([
      sampleMs === undefined
        ? client.kv
            .list(`${prefix}/`)()
            .then(E.map((snapshot) => ({ snapshot, handOvers: undefined })))
        : samplePrefix(client, prefix, sampleMs, limit),
      unreadableKeys(client, prefix),
    ])
    if (E.isLeft(listed)) {
      const why =
        listed.left === 'no answer'
          ? `Consul did not answer within --sample ${String(values['sample'])}`
          : describeError(listed.left, prefix)
      process.stderr.write(`rxsem: ${why}\n`)
      return ExitCode.Error
    }
    const read = prefixStatus(listed.right.snapshot, prefix, limit)
    if (E.isLeft(read)) throw problemError(read.left)
    const { handOvers } = listed.right
    const status =
      handOvers === undefined ? read.right : withEstimates(read.right, handOvers, Date.now())
    const names = new Map<string, string | null>()
    await learnSessionNames(client, sessionsOf(status), names)
    const named = withNames(status, names)
    if (denied.length > 0) process.stderr.write(`rxsem: ${filteredWarning(prefix, denied)}\n`)
    process.stdout.write(
      values['json'] === true ? `${JSON.stringify(named)}\n` : formatStatus(named),
    )
    return denied.length > 0 ? ExitCode.Filtered : ExitCode.Ok
  } finally {
    await client.close()
  }
}
