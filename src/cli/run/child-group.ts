/**
 * The command `rxsem run` guards, started in a process group of its own so that one signal reaches
 * it and everything it started (`sh -c 'worker & ...'`): a slot must not outlive its holder in a
 * grandchild. It keeps the terminal's stdio (inherited), as `consul lock` does.
 *
 * The command's process is made while rxsem waits for its slot (`prepareChildGroup`): a small
 * `/bin/sh` that waits on a pipe and `exec`s the command when told to. Forking the Node process
 * (tens of MB of page tables to copy, the event loop blocked until the `exec`) then costs the
 * handover nothing: once the slot is held, starting the command is one write on that pipe.
 *
 * ```
 * prepare ─► /bin/sh (own group, stdio inherited) ── waits on fd 3 ──┐
 * held ─► guard <pid> to the watchdog ─► "NAME=value"…, "go" on fd 3 ─► exec the command (same pid)
 * not held (timeout, signal, error) or rxsem dead ─► fd 3 closes ─► the shell exits, nothing ran
 * ```
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { accessSync, constants, statSync } from 'node:fs'
import { delimiter, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Writable } from 'node:stream'
import { signalExitCode } from '../report.js'

/** How the child ended. */
export type ChildExit =
  | { readonly type: 'exited'; readonly code: number }
  | { readonly type: 'signalled'; readonly signal: NodeJS.Signals }
  /** It never started (ENOENT, EACCES...). */
  | { readonly type: 'failed'; readonly error: Error }

/** The exit status a shell would give for `exit`. */
export function exitStatusOf(exit: ChildExit, cannotStart: number): number {
  switch (exit.type) {
    case 'exited':
      return exit.code
    case 'signalled':
      return signalExitCode(exit.signal)
    case 'failed':
      return cannotStart
  }
}

export interface ChildGroup {
  /** The child's pid, which is also its process group id; undefined if it failed to start. */
  readonly pid: number | undefined
  /** Resolves once the child (the group leader) has ended. Never rejects. */
  readonly exited: Promise<ChildExit>
  /** Sends `signal` to every process of the group (0: none, a test); false when the group is gone. */
  signal(signal: NodeJS.Signals | 0): boolean
  /**
   * Sends `signal` to the group, waits until the child has ended and the group is empty, or until
   * `graceMs` passed, then SIGKILLs whatever is left of the group.
   */
  stop(signal: NodeJS.Signals, graceMs: number): Promise<ChildExit>
}

export interface ChildSpec {
  /** The command and its arguments. */
  readonly command: readonly string[]
  /** Run `/bin/sh -c "<command joined by spaces>"` instead of the argv itself. */
  readonly shell: boolean
  readonly env: NodeJS.ProcessEnv
}

/**
 * Starts `spec.command` as the leader of a new process group (`detached`), with inherited stdio.
 *
 * @example
 * const child = startChildGroup({ command: ['sleep', '30'], shell: false, env: process.env })
 * await child.stop('SIGTERM', 5000)
 */
export function startChildGroup(spec: ChildSpec): ChildGroup {
  const [file, args] = argvOf(spec)
  const child = spawn(file, args, { stdio: 'inherit', detached: true, env: spec.env })
  return childGroupOf(child, exitOf(child))
}

/** The file to start and its arguments: the command itself, or `/bin/sh -c` with it. */
function argvOf(spec: ChildSpec): readonly [string, string[]] {
  return spec.shell
    ? ['/bin/sh', ['-c', spec.command.join(' ')]]
    : [spec.command[0] ?? '', spec.command.slice(1)]
}

/** How `child` ends, once it has: never rejects. */
function exitOf(child: ChildProcess): Promise<ChildExit> {
  return new Promise<ChildExit>((resolve) => {
    child.once('error', (error) => resolve({ type: 'failed', error }))
    child.once('exit', (code, signal) =>
      resolve(
        signal !== null ? { type: 'signalled', signal } : { type: 'exited', code: code ?? 0 },
      ),
    )
  })
}

/** Sends `signal` to process group `pgid` (0: none, a test); false when the group is gone. */
function signalGroupOf(pgid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(-pgid, signal)
    return true
  } catch (error) {
    // EPERM: a member changed its uid; it exists, and there is nothing more this process can do.
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** The group led by `child` (its pid is the group's id), which ends as `exited` says. */
function childGroupOf(child: ChildProcess, exited: Promise<ChildExit>): ChildGroup {
  const pid = child.pid

  const signalGroup = (signal: NodeJS.Signals | 0): boolean =>
    pid !== undefined && signalGroupOf(pid, signal)

  let ended = false
  void exited.then(() => (ended = true))

  return {
    pid,
    exited,
    signal: signalGroup,
    async stop(signal, graceMs) {
      signalGroup(signal)
      const deadline = Date.now() + graceMs
      // The leader may end first while a grandchild still shuts down: wait for the whole group.
      while (Date.now() < deadline && (!ended || signalGroup(0))) {
        const tick = sleep(Math.min(50, Math.max(0, deadline - Date.now())))
        await (ended ? tick : Promise.race([exited, tick]))
      }
      if (!ended || signalGroup(0)) signalGroup('SIGKILL')
      return exited
    },
  }
}

/** A command made ready to start while rxsem waits for its slot: see `prepareChildGroup`. */
export interface PreparedChild {
  /** The process waiting to become the command (its own group); undefined when none could be. */
  readonly pid: number | undefined
  /** Whether that process still waits (false once started, discarded, or gone). */
  waiting(): boolean
  /**
   * Starts the command with `held` added to its environment (the tenure's variables). `guard`
   * receives the group's id before the command can run when it can (the prepared process), else
   * right after it was started; it is not called when the command could not be started.
   */
  start(held: Readonly<Record<string, string>>, guard: (pgid: number) => void): ChildGroup
  /** The command will not run: the waiting process ends without starting it. */
  discard(): void
}

/**
 * What the prepared process runs (`/bin/sh -c`, the command as its arguments): it reads lines from
 * fd 3, exports each `NAME=value`, and on `go` closes fd 3 and becomes the command. When fd 3
 * closes first (rxsem discarded it, or died), it exits without running anything.
 */
export const LAUNCHER_SCRIPT =
  'while IFS= read -r line <&3; do case $line in go) exec 3<&-; exec "$@" ;; *=*) export "$line" ;; esac; done; exit 0'

/**
 * Prepares `spec.command` (see the top of this file): the process that will become the command,
 * in its own group, waits for `start`. A command this cannot prepare faithfully (one not found in
 * PATH or not executable, whose spawn error `startChildGroup` reports) is started by `start` with
 * `startChildGroup`, as is one whose prepared process is gone by then.
 *
 * @example
 * const prepared = prepareChildGroup({ command: ['./backup.sh'], shell: false, env: process.env })
 * // ... once the slot is held:
 * const child = prepared.start({ RXSEM_SESSION: session }, (pgid) => watchdog.guard(pgid, deadline))
 */
export function prepareChildGroup(spec: ChildSpec): PreparedChild {
  const direct: PreparedChild = {
    pid: undefined,
    waiting: () => false,
    start: (held, guard) => {
      const child = startChildGroup({ ...spec, env: { ...spec.env, ...held } })
      if (child.pid !== undefined) guard(child.pid)
      return child
    },
    discard: () => {},
  }
  const [file, args] = argvOf(spec)
  if (!spec.shell && !startsAsIs(file, spec.env['PATH'])) return direct

  let launcher: ChildProcess
  try {
    launcher = spawn('/bin/sh', ['-c', LAUNCHER_SCRIPT, 'sh', file, ...args], {
      stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
      detached: true,
      env: spec.env,
    })
  } catch {
    return direct
  }
  // Listens for its 'error' too: a shell that cannot start must not crash rxsem.
  const exited = exitOf(launcher)
  const control = launcher.stdio[3] as Writable | null | undefined
  const pid = launcher.pid
  if (control == null || pid === undefined) {
    launcher.kill('SIGKILL')
    return direct
  }
  // Writes after the shell is gone fail with EPIPE; `exited` tells what became of it.
  control.on('error', () => {})
  warmGroupCheck()
  let gone = false
  void exited.then(() => (gone = true))
  let used = false

  return {
    pid,
    waiting: () => !used && !gone,
    start: (held, guard) => {
      if (used) throw new Error('a prepared command starts once')
      used = true
      const lines = Object.entries(held).map(([name, value]) => `${name}=${value}`)
      // Only our own names and values (ids, numbers); a line break would split one.
      if (gone || lines.some((line) => /[\r\n]/.test(line))) {
        control.destroy()
        return direct.start(held, guard)
      }
      guard(pid)
      // One write: the shell reads the whole of it, then is the command.
      control.end([...lines, 'go', ''].join('\n'))
      return childGroupOf(launcher, exited)
    },
    discard: () => {
      if (used) return
      used = true
      control.destroy()
    },
  }
}

/** A process group id that no process has: Linux's pids stay below 2^22, macOS's below 100,000. */
const NO_GROUP = 2 ** 22 + 1

/**
 * Runs the group check once, while the slot is awaited, on a group that cannot exist. The check
 * that the command's group is gone, once the command has exited, fails with ESRCH, and the first
 * failed system call of a Node process builds Node's table of error names and runs its error's
 * code for the first time: about half a millisecond that the release of the slot, and so the next
 * holder, would wait for. Signal 0 only asks: nothing is sent to any process.
 */
function warmGroupCheck(): void {
  signalGroupOf(NO_GROUP, 0)
}

/**
 * Whether `exec` will find `file` as a spawn would: a path (with a `/`) to an executable regular
 * file, or a name found so in PATH. Anything else is left to spawn, whose error names the cause.
 */
function startsAsIs(file: string, path: string | undefined): boolean {
  if (file === '' || file.startsWith('-')) return false
  const candidates = file.includes('/')
    ? [file]
    : path === undefined
      ? []
      : path.split(delimiter).map((dir) => join(dir === '' ? '.' : dir, file))
  return candidates.some((candidate) => {
    try {
      accessSync(candidate, constants.X_OK)
      return statSync(candidate).isFile()
    } catch {
      return false
    }
  })
}
