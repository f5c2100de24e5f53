/** `rxsem set-limit`: changes the limit of a semaphore live (`setLimit`). */
import { createConsulClient } from '../../consul/client.js'
import { setLimit, type LimitChange } from '../../set-limit.js'
import { consulConfigFrom } from '../args/consul-flags.js'
import { UsageError } from '../args/parse-flags.js'
import { readPrefixCommand } from '../args/prefix-command.js'
import { setLimitUsage } from '../args/usage.js'
import { ExitCode } from '../report.js'

/**
 * Runs `rxsem set-limit` with the arguments after `set-limit`: writes the new limit to
 * `<prefix>/.lock` and prints what changed on stdout.
 *
 * @returns 0 once written (or already so). Throws what `main` reports as one line and exit 1: bad
 *   flags, a `.lock` of another tool or unreadable, Consul failures.
 */
export async function setLimitCommand(argv: readonly string[]): Promise<number> {
  const args = readPrefixCommand(argv, { json: { type: 'boolean' } }, 'set-limit')
  if (args.help) {
    process.stdout.write(setLimitUsage)
    return ExitCode.Ok
  }
  const { prefix, limit, values } = args
  if (limit === undefined) throw new UsageError('--limit is required: the new limit.', 'set-limit')
  const client = createConsulClient(consulConfigFrom(values))
  try {
    const change = await setLimit({ prefix, limit, consul: client })
    process.stdout.write(
      values['json'] === true ? `${JSON.stringify(changeJson(change))}\n` : describeChange(change),
    )
    return ExitCode.Ok
  } finally {
    await client.close()
  }
}

function changeJson(change: LimitChange): Record<string, unknown> {
  return {
    prefix: change.prefix,
    previous: change.previous ?? null,
    limit: change.limit,
    holders: change.holders,
    index: change.index.toString(),
  }
}

/** What changed, for people: the limit, the holders, and who is affected. */
export function describeChange({ prefix, previous, limit, holders }: LimitChange): string {
  const held = `${holders} ${holders === 1 ? 'holder' : 'holders'}`
  if (previous === limit)
    return `${prefix}: the limit was already ${limit} (${held}); nothing written.\n`
  const lines = [
    previous === undefined
      ? `${prefix}: limit set to ${limit} (there was no .lock; contenders find it at their next read).`
      : `${prefix}: limit ${previous} -> ${limit} (${held}).`,
  ]
  if (holders > limit) {
    const leave = holders - limit + 1
    lines.push(
      `The ${held} keep their slots; no one is admitted until ${leave} of them ` +
        `${leave === 1 ? 'has' : 'have'} released.`,
    )
  }
  lines.push(
    `Contenders with --follow-limit (followLimit) use ${limit} from their next read. Others (and`,
    '`consul lock -n` with another limit) fail with a limit conflict when they next try for a',
    'slot; holders keep theirs until they release.',
  )
  return `${lines.join('\n')}\n`
}
