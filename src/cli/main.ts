#!/usr/bin/env node
/**
 * `rxsem`: the command line of rx-consul-semaphore. Dispatches to `run`, `status`, `watch`,
 * `set-limit`, `evict`, `drain` and `doctor`;
 * every failure ends here as one `rxsem: ...` line on stderr and exit status 1.
 *
 * @packageDocumentation
 */
import { setFlagsFromString } from 'node:v8'
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

/**
 * A CPU and memory saving for short-lived `rxsem` processes (one `rxsem run` per acquisition, from
 * cron on many hosts): undici parses HTTP with llhttp compiled to WebAssembly, and V8 (11.x, in
 * Node 20) moves its hot functions to the optimizing compiler after a small budget of executed
 * bytes, which a single request already spends. That background compile cost an `rxsem run`
 * about 40 ms of CPU and 35 MB of RSS here (150 ms and 93 MB in all, against 95 ms and 57 MB
 * without it), for a parser that reads a few hundred bytes per answer. A larger budget keeps the
 * baseline (Liftoff) code, which is correct and fast enough for that; a long `rxsem watch` still
 * tiers up once it has parsed enough.
 *
 * Only the bin does this (a library must not change its host's V8 flags), and only on the V8
 * versions known to have the flag: V8 prints an error line for a flag it does not know.
 */
const tieringBudget = 2_000_000_000
const v8Major = Number(process.versions.v8.split('.')[0])

/** Raises V8's WebAssembly tier-up budget on V8 11 to 13; elsewhere it does nothing. */
function raiseWasmTieringBudget(): void {
  if (v8Major >= 11 && v8Major <= 13) setFlagsFromString(`--wasm-tiering-budget=${tieringBudget}`)
}

raiseWasmTieringBudget()
main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`rxsem: ${describeError(error)}\n`)
    process.exit(ExitCode.Error)
  },
)
