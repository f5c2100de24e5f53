#!/usr/bin/env node
/**
 * `rxsem`: the command line of rx-consul-semaphore. Dispatches to `run`, `status` and `watch`;
 * every failure ends here as one `rxsem: ...` line on stderr and exit status 1.
 *
 * @packageDocumentation
 */
import { describeError } from './describe-error.js'
import { ExitCode } from './exit-codes.js'
import { runCommand } from './run.js'
import { statusCommand } from './status.js'
import { mainUsage } from './usage.js'
import { UsageError } from './usage-error.js'
import { watchCommand } from './watch.js'
import { raiseWasmTieringBudget } from './wasm-tiering.js'

const commands: Readonly<Record<string, (argv: readonly string[]) => Promise<number>>> = {
  run: runCommand,
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
        ? `unknown flag ${name} before the command; the commands are run, status and watch.`
        : `unknown command ${JSON.stringify(name)}; the commands are run, status and watch.`,
    )
  }
  return command(rest)
}

raiseWasmTieringBudget()
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`rxsem: ${describeError(error)}\n`)
    process.exit(ExitCode.Error)
  },
)
