/**
 * `rxsem`: the command line of rx-consul-semaphore. Dispatches to `run`, `status`, `watch`,
 * `set-limit`, `evict`, `drain` and `doctor`;
 * every failure ends here as one `rxsem: ...` line on stderr and exit status 1.
 *
 * @packageDocumentation
 */
import { describeError, ExitCode } from './report.js'
import { drainCommand } from './drain/command.js'
import { evictCommand } from './evict/command.js'
import { doctorCommand } from './doctor/command.js'
import { runCommand } from './run/command.js'
import { setLimitCommand } from './set-limit/command.js'
import { statusCommand } from './status/command.js'
import { mainUsage } from './args/usage.js'
import { UsageError } from './args/parse-flags.js'
import { watchCommand } from './watch/command.js'

const commands: Readonly<Record<string, (argv: readonly string[]) => Promise<number>>> = {
  doctor: doctorCommand,
  drain: drainCommand,
  evict: evictCommand,
  run: runCommand,
  'set-limit': setLimitCommand,
  status: statusCommand,
  watch: watchCommand,
}

async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv
  if (name === undefined) {
    process.stderr.write(mainUsage)
    return ExitCode.Error
  }
  if (name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(mainUsage)
    return ExitCode.Ok
  }
  const command = commands[name]
  if (command === undefined) {
    throw new UsageError(
      name.startsWith('-')
        ? `unknown flag ${name} before the command; the commands are run, status, watch, set-limit, evict, drain and doctor.`
        : `unknown command ${JSON.stringify(name)}; the commands are run, status, watch, set-limit, evict, drain and doctor.`,
    )
  }
  return command(rest)
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`rxsem: ${describeError(error)}\n`)
    process.exit(ExitCode.Error)
  },
)
