/**
 * `rxsem set-limit`: changes the limit of a semaphore live (`setLimit`), and says first what the
 * change does to the contenders it can see.
 */
import * as E from 'fp-ts/lib/Either.js'
import type { ConsulClient } from '../../consul/client-api.js'
import { createConsulClient } from '../../consul/client.js'
import { setLimit, type LimitChange } from '../../operator/set-limit.js'
import { consulConfigFrom } from '../args/consul-flags.js'
import { UsageError } from '../args/parse-flags.js'
import { readPrefixCommand } from '../args/prefix-command.js'
import { setLimitUsage } from '../args/usage.js'
import { ExitCode } from '../report.js'
import { prefixStatus } from '../status/prefix-status.js'

/** What one read of the prefix just before the write showed. */
export interface SeenContenders {
  /** The limit `.lock` stated; undefined without a `.lock`. */
  readonly limit: number | undefined
  /** Live holders. */
  readonly holders: number
  /** Contenders waiting in the queue. */
  readonly waiting: number
}

/**
 * Runs `rxsem set-limit` with the arguments after `set-limit`: reads the prefix, prints what the
 * new limit will do to the holders and waiters it sees, then writes the new limit to
 * `<prefix>/.lock` (not with `--dry-run`) and prints what changed, all on stdout.
 *
 * @returns 0 once written (or already so, or shown with `--dry-run`). Throws what `main` reports
 *   as one line and exit 1: bad flags, a `.lock` of another tool or unreadable, Consul failures.
 */
export async function setLimitCommand(argv: readonly string[]): Promise<number> {
  const args = readPrefixCommand(argv, 'set-limit')
  if (args.help) {
    process.stdout.write(setLimitUsage)
    return ExitCode.Ok
  }
  const { prefix, limit, values } = args
  if (limit === undefined) throw new UsageError('--limit is required: the new limit.', 'set-limit')
  const json = values['json'] === true
  const dryRun = values['dry-run'] === true
  const client = createConsulClient(consulConfigFrom(values))
  try {
    const seen = await seeContenders(client, prefix)
    if (!json && seen !== undefined)
      process.stdout.write(describeEffect(prefix, seen, limit, dryRun))
    if (dryRun) {
      // setLimit would refuse what the read could not make sense of; say so without writing.
      if (seen === undefined) {
        throw new UsageError(
          `cannot read ${prefix}/ as a semaphore, so a write would be refused too: run without --dry-run to see why.`,
          'set-limit',
        )
      }
      if (json) process.stdout.write(`${JSON.stringify(effectJson(prefix, seen, limit))}\n`)
      return ExitCode.Ok
    }
    const change = await setLimit({ prefix, limit, consul: client })
    process.stdout.write(
      json
        ? `${JSON.stringify(changeJson(change, seen))}\n`
        : describeChange(change) + (seen === undefined ? UNSEEN_EFFECT : ''),
    )
    return ExitCode.Ok
  } finally {
    await client.close()
  }
}

/**
 * The holders and waiters of the prefix now; undefined when it cannot be read as a semaphore
 * (no answer, a leader lock, a corrupt `.lock`), which `setLimit` then reports as it refuses.
 */
async function seeContenders(
  client: Pick<ConsulClient, 'kv'>,
  prefix: string,
): Promise<SeenContenders | undefined> {
  const listed = await client.kv.list(`${prefix}/`)()
  if (E.isLeft(listed)) return undefined
  const status = prefixStatus(listed.right, prefix)
  if (E.isLeft(status) || status.right.shape === 'lock' || status.right.waiting === null) {
    return undefined
  }
  return {
    limit: status.right.shape === null ? undefined : (status.right.limit ?? undefined),
    holders: status.right.holders.filter((h) => h.alive).length,
    waiting: status.right.waiting.length,
  }
}

/** The effect in general, when the read before the write showed no contenders to count. */
const UNSEEN_EFFECT = [
  'Contenders with --follow-limit (followLimit) use the new limit from their next read. Others',
  '(and `consul lock -n` with another limit) stop with a limit conflict when they next try for',
  'a slot, waiters at once; holders keep theirs until they release.',
  '',
].join('\n')

const count = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`

/**
 * What setting `limit` does to the contenders seen, for people: who is admitted, who stops with
 * a limit conflict. Whether a contender follows the limit is not in Consul, so both are said.
 *
 * @example
 * describeEffect('jobs/encode', { limit: 1, holders: 1, waiting: 2 }, 2, false)
 */
export function describeEffect(
  prefix: string,
  seen: SeenContenders,
  limit: number,
  dryRun: boolean,
): string {
  const { holders, waiting } = seen
  const now = `${prefix} now: ${count(holders, 'holder', 'holders')}, ${count(waiting, 'waiting contender', 'waiting contenders')}, limit ${seen.limit ?? 'none yet (no .lock)'}.`
  if (seen.limit === limit) return `${now}\n`
  const lines = [
    now,
    dryRun ? `Setting the limit to ${limit} would:` : `Setting the limit to ${limit}:`,
  ]
  const free = Math.max(0, limit - holders)
  if (waiting > 0) {
    const admitted = Math.min(free, waiting)
    lines.push(
      ...(admitted > 0
        ? [
            `- admit ${admitted} of the ${waiting} waiting at once, if ${admitted === 1 ? 'it follows' : 'they follow'} the limit`,
            '  (rxsem run --follow-limit, followLimit in code);',
          ]
        : [`- admit none of the ${waiting} waiting until fewer than ${limit} hold;`]),
      `- stop each waiting contender that does not follow the limit (rxsem run without`,
      `  --follow-limit, followLimit unset, \`consul lock -n\`) with a limit conflict, at once and`,
      `  without a slot: rxsem run exits 1. Consul does not record which contenders follow the`,
      `  limit, so up to ${waiting} of the ${waiting} waiting may stop;`,
    )
  }
  if (holders > 0) {
    lines.push(
      `- leave ${holders === 1 ? 'the holder its slot until it releases' : `the ${holders} holders their slots until they release`}, whether ${holders === 1 ? 'it follows' : 'they follow'} the limit or not.`,
    )
  }
  if (waiting === 0 && holders === 0) {
    lines.push('- affect no one now: contenders find the new limit at their next read.')
  }
  if (dryRun) lines.push('Nothing was written (--dry-run).')
  return `${lines.join('\n')}\n`
}

function effectJson(prefix: string, seen: SeenContenders, limit: number): Record<string, unknown> {
  return {
    prefix,
    previous: seen.limit ?? null,
    limit,
    holders: seen.holders,
    waiting: seen.waiting,
    written: false,
  }
}

function changeJson(
  change: LimitChange,
  seen: SeenContenders | undefined,
): Record<string, unknown> {
  return {
    prefix: change.prefix,
    previous: change.previous ?? null,
    limit: change.limit,
    holders: change.holders,
    waiting: seen?.waiting ?? null,
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
  return `${lines.join('\n')}\n`
}
