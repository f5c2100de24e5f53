/**
 * The command `rxsem run` guards, started in a process group of its own so that one signal reaches
 * it and everything it started (`sh -c 'worker & ...'`): a slot must not outlive its holder in a
 * grandchild. It keeps the terminal's stdio (inherited), as `consul lock` does.
 */
import { spawn } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
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
  const [file, args] = spec.shell
    ? ['/bin/sh', ['-c', spec.command.join(' ')]]
    : [spec.command[0] ?? '', spec.command.slice(1)]
  const child = spawn(file, args, { stdio: 'inherit', detached: true, env: spec.env })
  const pid = child.pid

  const exited = new Promise<ChildExit>((resolve) => {
    child.once('error', (error) => resolve({ type: 'failed', error }))
    child.once('exit', (code, signal) =>
      resolve(
        signal !== null ? { type: 'signalled', signal } : { type: 'exited', code: code ?? 0 },
      ),
    )
  })

  const signalGroup = (signal: NodeJS.Signals | 0): boolean => {
    if (pid === undefined) return false
    try {
      process.kill(-pid, signal)
      return true
    } catch (error) {
      // EPERM: a member changed its uid; it exists, and there is nothing more this process can do.
      return (error as NodeJS.ErrnoException).code === 'EPERM'
    }
  }

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
