/**
 * Every failure `rxsem` reports, as the one line it prints: what went wrong and what to do. The
 * messages come from the library, which already says both and never includes the token; this only
 * names the cause for a command-line user and keeps it on one line.
 */
import { ConsulConfigError } from '../consul/config-error.js'
import type { ConsulError } from '../consul/errors.js'
import { PERMISSION_HINT, SemaphoreError } from '../errors.js'
import { flagOfSetting } from './consul-flags.js'
import { UsageError } from './usage-error.js'
import { WatchdogError } from './watchdog.js'

const isConsulError = (value: unknown): value is ConsulError =>
  typeof value === 'object' && value !== null && '_tag' in value && 'message' in value

/** One line for `error`, without the `rxsem: ` prefix. */
export function describeError(error: unknown): string {
  return oneLine(describe(error))
}

function describe(error: unknown): string {
  if (error instanceof UsageError) {
    const help = error.command === undefined ? 'rxsem --help' : `rxsem ${error.command} --help`
    return `${error.message} See \`${help}\`.`
  }
  if (error instanceof ConsulConfigError) {
    const flag = flagOfSetting[error.setting]
    return flag === undefined
      ? `bad Consul setting ${error.message}`
      : `bad Consul setting ${flag}${error.message.slice(error.setting.length)}`
  }
  if (error instanceof SemaphoreError) {
    switch (error.kind) {
      case 'InvalidOptions':
        return `bad options: ${error.message.replace(/^option (\w+)/, (_, name: string) => `--${kebab(name)}`)}`
      case 'PermissionDenied':
        return `permission denied: ${error.message}`
      case 'Conflict':
        return `conflict: ${error.message}`
      case 'LimitConflict':
        return `limit conflict: ${error.message}`
      case 'CorruptLock':
        return `corrupt lock: ${error.message}`
      case 'ReleaseFailed':
        return `release failed: ${error.message}`
      case 'Unreachable':
        return `Consul is unreachable: ${error.message}`
      case 'NotConsul':
        return `no Consul agent at the address: ${error.message}`
      case 'Consul':
        return `Consul error: ${error.message}`
    }
  }
  if (isConsulError(error)) {
    return error._tag === 'PermissionDenied'
      ? `${error.message}. ${PERMISSION_HINT}`
      : error.message
  }
  if (error instanceof WatchdogError) return error.message
  return `unexpected failure: ${error instanceof Error ? error.message : String(error)}`
}

/** `sessionName` → `session-name`, the flag spelling of an option. */
function kebab(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ')
}
