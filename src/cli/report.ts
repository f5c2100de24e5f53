/**
 * How `rxsem` tells what happened, the same for every command: its exit statuses, its messages
 * (all on stderr: stdout belongs to the child of `run` or to the output `status` was asked for, so
 * scripts can pipe it untouched), and the one line it prints for a failure, which says what went
 * wrong and what to do. Those lines come from the library, which already says both and never
 * includes the token; `describeError` only names the cause for a command-line user.
 */
import { constants } from 'node:os'
import { ConsulConfigError } from '../consul/config-error.js'
import type { ConsulError } from '../base/consul-error.js'
import { SemaphoreError, withPermissionHint } from '../base/semaphore-error.js'
import { flagOfSetting } from './args/consul-flags.js'
import { UsageError } from './args/parse-flags.js'
import { WatchdogError } from './run/watchdog.js'
import { sentences } from '../base/sentences.js'
import type { RevokeRequest } from '../core/revoke/revoke-request.js'
import { formatGoDuration } from '../consul/durations.js'

/**
 * The exit statuses of `rxsem`. They follow the conventions scripts already test for: 124 is
 * `timeout(1)`'s "timed out", 75 is sysexits' EX_TEMPFAIL ("try again later"), 71 its EX_OSERR
 * (the system took something away), 77 its EX_NOPERM (permission denied), 78 its EX_CONFIG
 * (a configuration error), 128+n is the shell's
 * "ended by signal n".
 */
export const ExitCode = {
  /** The command succeeded (or, for `run`, the child's own status is passed through instead). */
  Ok: 0,
  /** Bad options or a problem before any slot was held; nothing was started. */
  Error: 1,
  /** The watchdog ended while the child ran (killed): the unguarded child was stopped. */
  WatchdogLost: 71,
  /** `status`: the ACL token may not read the prefix, so the listing may be incomplete. */
  Filtered: 77,
  /** The slot was lost while the child ran; the child was stopped. */
  SlotLost: 75,
  /** `doctor`: a finding is a problem (sysexits' EX_CONFIG: something is not set up right). */
  Problems: 78,
  /** No slot within `--timeout`; nothing was started. */
  Timeout: 124,
  /** The command could not be started (not found, not executable), as in a shell. */
  CannotStart: 127,
  /** Ended by SIGHUP (terminal or ssh connection gone). */
  HungUp: 129,
  /** Ended by SIGINT. */
  Interrupted: 130,
  /** Ended by SIGTERM. */
  Terminated: 143,
} as const

const signalNumbers: Partial<Record<string, number>> = constants.signals

/** 128 + the signal's number, the status a shell reports for a process ended by `signal`. */
export function signalExitCode(signal: NodeJS.Signals): number {
  return 128 + (signalNumbers[signal] ?? 0)
}

/** How much `rxsem` says: only errors, a few key lines, or every transition with its reason. */
export type Verbosity = 'quiet' | 'normal' | 'verbose'

export interface Reporter {
  /** A failure, in sentences (ended with a full stop if it has none): always printed. */
  error(message: string): void
  /** A key step (waiting, acquired, lost, stopping): printed unless quiet. */
  info(message: string): void
  /** Every transition and its reason: printed only when verbose. */
  detail(message: string): void
}

/**
 * A reporter writing `rxsem: <message>` lines to `stream` (default stderr).
 *
 * @example
 * createReporter('verbose').detail('holding slot (acquired, session 1234abcd, fencing token 57)')
 */
export function createReporter(
  verbosity: Verbosity,
  stream: NodeJS.WritableStream = process.stderr,
): Reporter {
  const say = (message: string): void => {
    stream.write(`rxsem: ${message}\n`)
  }
  const nothing = (): void => {}
  return {
    error: (message) => say(sentences(message)),
    info: verbosity === 'quiet' ? nothing : say,
    detail: verbosity === 'verbose' ? say : nothing,
  }
}

/**
 * A revoke request, for people: `asked to give the slot back within 30s: deploy`.
 *
 * @example
 * askedToGiveBack({ graceMs: 30_000, reason: 'deploy' }) // 'asked to give the slot back within 30s: deploy'
 */
export function askedToGiveBack(request: RevokeRequest): string {
  const grace = request.graceMs === undefined ? '' : ` within ${formatGoDuration(request.graceMs)}`
  const why = request.reason === undefined ? '' : `: ${request.reason}`
  return `asked to give the slot back${grace}${why}`
}

/** `42s`, `3m05s`, `2h07m`: how long a slot has been held. */
export function heldFor(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000))
  if (s < 60) return `${s}s`
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`
  return `${Math.floor(s / 3600)}h${String(Math.floor(s / 60) % 60).padStart(2, '0')}m`
}

/** `0.4s`, `9.5s`, then as `heldFor`: an estimated wait. */
export function waitFor(ms: number): string {
  return ms < 9950 ? `${(ms / 1000).toFixed(1)}s` : heldFor(ms)
}

/** The first 8 characters of a session id, enough to tell sessions apart in a message. */
export const shortSession = (session: string | undefined): string =>
  session === undefined ? 'none' : session.slice(0, 8)

const isConsulError = (value: unknown): value is ConsulError =>
  typeof value === 'object' && value !== null && '_tag' in value && 'message' in value

/**
 * One line for `error`, without the `rxsem: ` prefix.
 *
 * @param error - What went wrong.
 * @param prefix - The prefix the command works on, which a refusal's policy hint names.
 */
export function describeError(error: unknown, prefix?: string): string {
  return oneLine(cliWording(sentences(describe(error, prefix))))
}

/**
 * The library's messages name what a program sets (`the address option`, `startupTimeout`); a
 * command-line user sets flags. Each pair turns one such phrase into the flag and its variable.
 */
const cliPhrases: readonly (readonly [RegExp, string])[] = [
  [/set CONSUL_HTTP_ADDR \(or the address option\)/g, 'set --http-addr (or CONSUL_HTTP_ADDR)'],
  [/\(or the address option\)/g, '(or --http-addr)'],
  [/the address option/g, '--http-addr'],
  [/(check|set) CONSUL_HTTP_ADDR\b/g, '$1 --http-addr (or CONSUL_HTTP_ADDR)'],
  [/CONSUL_HTTP_TOKEN_FILE or the token option/g, 'CONSUL_HTTP_TOKEN_FILE or --token-file'],
  [/the token option/g, '--token-file'],
  [/check CONSUL_CACERT\b/g, 'check --ca-file (CONSUL_CACERT)'],
  [/and CONSUL_TLS_SERVER_NAME\b/g, 'and --tls-server-name (CONSUL_TLS_SERVER_NAME)'],
  [/ or options\.auth\b/g, ''],
  [/ \(the option startupTimeout\)/g, ''],
  [/; startupTimeout: Infinity waits for ever\./g, '.'],
]

/**
 * A library message in the words of the command line: `--http-addr` where the library says
 * "the address option", and so on for the other settings a flag sets.
 *
 * @example
 * cliWording('set CONSUL_HTTP_ADDR (or the address option) to ...') // 'set --http-addr (or CONSUL_HTTP_ADDR) to ...'
 */
export function cliWording(text: string): string {
  return cliPhrases.reduce((out, [phrase, words]) => out.replace(phrase, words), text)
}

function describe(error: unknown, prefix: string | undefined): string {
  if (error instanceof UsageError) {
    const help = error.command === undefined ? 'rxsem --help' : `rxsem ${error.command} --help`
    return sentences(error.message, `See \`${help}\`.`)
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
        return `bad options: ${error.message.replace(/\boption (\w+)/g, (_, name: string) => `--${kebab(name)}`)}`
      case 'PermissionDenied':
        return `permission denied: ${error.message}`
      case 'Conflict':
        return `conflict: ${error.message}`
      case 'LimitConflict':
        return `limit conflict: ${error.message}`
      case 'CorruptLock':
        return `corrupt lock: ${error.message}`
      case 'ReleaseFailed':
        // The library's message starts with what failed: "releasing failed: ...".
        return error.message
      case 'Unreachable':
        return `Consul is unreachable: ${error.message}`
      case 'NotConsul':
        return `no Consul agent at the address: ${error.message}`
      case 'TlsRejected':
        return `the TLS settings do not fit the agent: ${error.message}`
      case 'Consul':
        return `Consul error: ${error.message}`
      case 'NotHolder':
        return error.message
    }
  }
  if (isConsulError(error)) {
    return error._tag === 'PermissionDenied' ? withPermissionHint(error, prefix) : error.message
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
