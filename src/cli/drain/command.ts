/**
 * `rxsem drain`: drains a semaphore (`drain`), or lifts its drain with `--lift` (`liftDrain`).
 * One command with a flag, as `consul maint -enable/-disable`: the two are one switch, and
 * `rxsem drain --help` explains both.
 */
import { createConsulClient } from '../../consul/client.js'
import { drain, liftDrain, type Drain, type DrainLift } from '../../operator/drain.js'
import { consulConfigFrom } from '../args/consul-flags.js'
import { UsageError } from '../args/parse-flags.js'
import { readPrefixCommand } from '../args/prefix-command.js'
import { drainUsage } from '../args/usage.js'
import { ExitCode } from '../report.js'

/**
 * Runs `rxsem drain` with the arguments after `drain`: drains `--prefix` (or lifts its drain with
 * `--lift`) and prints what it did on stdout.
 *
 * @returns 0 once drained or lifted (or already so). Throws what `main` reports as one line and
 *   exit 1: bad flags, a leader lock, a prefix without `.lock` and no `--limit`, a `.lock` that
 *   cannot be read (never written over), Consul failures.
 */
export async function drainCommand(argv: readonly string[]): Promise<number> {
  const args = readPrefixCommand(argv, 'drain')
  if (args.help) {
    process.stdout.write(drainUsage)
    return ExitCode.Ok
  }
  const { prefix, limit, values } = args
  const lift = values['lift'] === true
  if (lift && limit !== undefined) {
    throw new UsageError('--limit does not apply with --lift.', 'drain')
  }
  const json = values['json'] === true
  const client = createConsulClient(consulConfigFrom(values))
  try {
    if (lift) {
      const lifted = await liftDrain({ prefix, consul: client })
      process.stdout.write(json ? `${JSON.stringify(liftJson(lifted))}\n` : describeLift(lifted))
    } else {
      const drained = await drain({ prefix, limit, consul: client })
      process.stdout.write(json ? `${JSON.stringify(drained)}\n` : describeDrain(drained))
    }
    return ExitCode.Ok
  } finally {
    await client.close()
  }
}

const count = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`

/**
 * What the drain did, for people.
 *
 * @example
 * describeDrain({ prefix: 'jobs', limit: 2, sessions: ['a', 'b'], added: 2, holders: 1, index: 9n })
 */
export function describeDrain({ prefix, limit, sessions, added, holders }: Drain): string {
  const lines = [
    added === 0
      ? `${prefix} was drained already (${count(sessions.length, 'drain session', 'drain sessions')}, limit ${limit}); nothing written.`
      : `${prefix} drained: ${count(sessions.length, 'drain session holds', 'drain sessions hold')} the ${count(limit, 'slot', 'slots')} of limit ${limit}.`,
    holders === 0
      ? 'No other holder is left; no one is admitted until the drain is lifted.'
      : `${count(holders, 'holder keeps its slot', 'holders keep their slots')} until ${holders === 1 ? 'it releases' : 'they release'}; no one is admitted until the drain is lifted.`,
    'Waiters (rxsem run, the library, `consul lock -n`) keep waiting. Lift it with',
    `\`rxsem drain --prefix ${prefix} --lift\`.`,
    '',
  ]
  return lines.join('\n')
}

/**
 * What lifting the drain did, for people.
 *
 * @example
 * describeLift({ prefix: 'jobs', sessions: ['a', 'b'], index: 12n })
 */
export function describeLift({ prefix, sessions }: DrainLift): string {
  return sessions.length === 0
    ? `${prefix} is not drained; nothing to lift.\n`
    : `${prefix}: drain lifted (${count(sessions.length, 'drain session', 'drain sessions')} destroyed); waiters are admitted as slots are free.\n`
}

function liftJson(lifted: DrainLift): Record<string, unknown> {
  return {
    prefix: lifted.prefix,
    lifted: lifted.sessions.length > 0,
    sessions: lifted.sessions,
    index: lifted.index === undefined ? null : lifted.index.toString(),
  }
}
