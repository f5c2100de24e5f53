// The processes a test started, found through /proc, so that hooks can stop all of them: a
// command that outlives its killed parent keeps the test's pipes (and the test file) open.
import { readFileSync, readdirSync } from 'node:fs'

/**
 * A time limit for a suite that runs processes, below the 300 s scripts/run-tests.ts gives a test
 * file: a test that hangs is then named ("did not finish before its parent") and the `after` hooks
 * still stop what it started, instead of the whole file being cancelled without a word.
 */
export const SUITE_TIMEOUT_MS = 150_000

/** Sends `signal` to `pid` and to every process below it, found before the first signal. */
export function killTree(pid: number, signal: NodeJS.Signals): void {
  for (const each of [pid, ...descendants(pid)]) {
    try {
      process.kill(each, signal)
    } catch {
      // Gone already.
    }
  }
}

/** The pids of the living processes below `pid` (children, grandchildren, ...). */
export function descendants(pid: number): number[] {
  const table = processes()
  const found: number[] = []
  for (let next = [pid]; next.length > 0;) {
    next = table.filter((p) => next.includes(p.ppid)).map((p) => p.pid)
    found.push(...next)
  }
  return found
}

/** The living members of process group `pgid`. */
export function groupMembers(pgid: number): number[] {
  return processes()
    .filter((p) => p.pgid === pgid)
    .map((p) => p.pid)
}

/** Every living process with its parent and process group, read from /proc. */
function processes(): { pid: number; ppid: number; pgid: number }[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .flatMap((name) => {
      try {
        const stat = readFileSync(`/proc/${name}/stat`, 'utf8')
        // "pid (comm) state ppid pgrp ...": comm may itself hold spaces and parentheses.
        const [, ppid, pgid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
        return [{ pid: Number(name), ppid: Number(ppid), pgid: Number(pgid) }]
      } catch {
        return [] // ended while we looked
      }
    })
}

/**
 * When `pid` started (clock ticks since boot, as /proc says), or undefined when it is gone. Pids
 * come round again within seconds on a busy machine (pid_max 32768): record this with a pid, and
 * signal the pid later only while it is unchanged.
 */
export function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]
  } catch {
    return undefined
  }
}
