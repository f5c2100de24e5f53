import { constants } from 'node:os'

/**
 * The exit statuses of `rxsem`. They follow the conventions scripts already test for: 124 is
 * `timeout(1)`'s "timed out", 75 is sysexits' EX_TEMPFAIL ("try again later"), 71 its EX_OSERR
 * (the system took something away), 77 its EX_NOPERM (permission denied), 128+n is the shell's
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
