/**
 * The flags each `rxsem` command's parser knows, from the tables the parsers themselves use: what
 * a check of the docs' and doctor's advice ("rxsem run --lock-delay") reads them from.
 */
import { doctorFlagSpec } from '../doctor/command.js'
import { runFlagSpec } from '../run/plan.js'
import type { OptionSpec } from './parse-flags.js'
import { prefixCommandSpec } from './prefix-command.js'

/**
 * Every command of `rxsem` and the flags its parser takes.
 *
 * @example
 * Object.hasOwn(commandFlags().run, 'lock-delay') // true
 */
export function commandFlags(): Readonly<Record<string, OptionSpec>> {
  return {
    run: runFlagSpec,
    doctor: doctorFlagSpec,
    status: prefixCommandSpec('status'),
    watch: prefixCommandSpec('watch'),
    'set-limit': prefixCommandSpec('set-limit'),
    evict: prefixCommandSpec('evict'),
    drain: prefixCommandSpec('drain'),
  }
}
