/**
 * `rxsem evict`: takes one holder out of a semaphore or leader lock (`evict`), and says what it
 * did and the fencing-token floor after it.
 */
import { createConsulClient } from '../../consul/client.js'
import { evict, type Eviction } from '../../operator/evict.js'
import { consulConfigFrom } from '../args/consul-flags.js'
import { durationFlag, stringFlag } from '../args/flag-values.js'
import { formatGoDuration } from '../../consul/durations.js'
import { UsageError } from '../args/parse-flags.js'
import { readPrefixCommand } from '../args/prefix-command.js'
import { evictUsage } from '../args/usage.js'
import { ExitCode } from '../report.js'

/**
 * Runs `rxsem evict` with the arguments after `evict`: evicts the holder whose session is
 * `--session` from `--prefix`, and prints what it did and the fencing-token floor on stdout.
 *
 * @returns 0 once evicted. Throws what `main` reports as one line and exit 1: bad flags, a
 *   session that does not hold, a `.lock` that cannot be read (never written over), Consul
 *   failures.
 */
export async function evictCommand(argv: readonly string[]): Promise<number> {
  const args = readPrefixCommand(argv, 'evict')
  if (args.help) {
    process.stdout.write(evictUsage)
    return ExitCode.Ok
  }
  const { prefix, limit, values } = args
  if (limit !== undefined) {
    throw new UsageError(
      '--limit does not apply: evict takes out one holder, whatever the limit.',
      'evict',
    )
  }
  const session = stringFlag(values, 'session')
  if (session === undefined || session.trim() === '') {
    throw new UsageError(
      '--session is required: the session id of the holder as `rxsem status` shows it, or its start.',
      'evict',
    )
  }
  const grace = durationFlag(values, 'grace', 'evict')
  const reason = stringFlag(values, 'reason')
  const client = createConsulClient(consulConfigFrom(values))
  try {
    if (grace !== undefined && grace > 0 && values['json'] !== true) {
      process.stderr.write(
        `${prefix}: asked session ${session} to give its slot back within ${formatGoDuration(grace)}...\n`,
      )
    }
    const eviction = await evict({ prefix, session, grace, reason, consul: client })
    process.stdout.write(
      values['json'] === true
        ? `${JSON.stringify(eviction)}\n`
        : describeEviction(eviction, grace !== undefined && grace > 0),
    )
    return ExitCode.Ok
  } finally {
    await client.close()
  }
}

/**
 * What the eviction did, for people; `asked`: it was asked to give the slot back first (a grace).
 *
 * @example
 * describeEviction({ prefix: 'jobs', session: '4ca8…', lock: 'semaphore', how: 'forced', floor: 120n })
 */
export function describeEviction(
  { prefix, session, lock, how, floor }: Eviction,
  asked = false,
): string {
  const forced = asked ? 'not given back within the grace: ' : ''
  const done =
    how === 'given-back'
      ? lock === 'semaphore'
        ? 'it gave its slot back when asked; nothing was forced'
        : 'it stepped down when asked; nothing was forced'
      : lock === 'semaphore'
        ? `${forced}taken out of ${prefix}/.lock's holders, its session destroyed`
        : `${forced}its session destroyed, which released the leader lock ${prefix}/.lock`
  return [
    `${prefix}: evicted session ${session} (${done}).`,
    `fencing-token floor ${floor}: the evicted holder's fencing token is below it, every later`,
    "holder's is above it; a guarded resource can refuse tokens below it from now on.",
    '',
  ].join('\n')
}
