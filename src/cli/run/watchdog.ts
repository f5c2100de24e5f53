/**
 * The watchdog of `rxsem run`: a small bash script (`rxsem-watchdog.sh`, beside the CLI's entry),
 * not a second Node process, in a session and process group of its own, that stops the command's
 * process group when rxsem can no longer guard it: rxsem ended (its stdin pipe closes) or the lease
 * deadline passed without a renewal (rxsem frozen). See docs/cli.md, "The watchdog".
 *
 * ```
 * rxsem ──stdin: guard <pgid> <deadline> / deadline <ms> / done──► watchdog ──SIGTERM, SIGKILL──► command's group
 *       ◄─stdout: ready / fired <why>───────────────────────────────
 * ```
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process'
import { existsSync, realpathSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { Readable, Writable } from 'node:stream'

/** The script's file name; the build puts it next to every built form of the CLI. */
export const WATCHDOG_SCRIPT = 'rxsem-watchdog.sh'

/**
 * Time between the watchdog's SIGTERM and its SIGKILL. Short on purpose: it acts only when rxsem
 * is gone or frozen. For the lease deadline it sends SIGTERM this long before it, so that the group
 * is gone by the deadline, when `holding` would turn false.
 */
export const WATCHDOG_GRACE_MS = 500

/** The watchdog cannot guard the command (cannot start, or ended): the message says what to do. */
export class WatchdogError extends Error {
  override readonly name = 'WatchdogError'
}

/** Why the watchdog stopped the command, as it said before stopping it. */
export type WatchdogFired = 'rxsem-ended' | 'lease-expired'

/** How the watchdog ended. */
export interface WatchdogEnd {
  /** Set when it stopped the command's group (then it said why before signalling). */
  readonly fired: WatchdogFired | undefined
  /** Exit code or signal of the bash process; `error` when it could not be started. */
  readonly code: number | null
  readonly signal: NodeJS.Signals | null
  readonly error: Error | undefined
}

export interface Watchdog {
  /** The bash process's pid (its own process group), once started. */
  readonly pid: number | undefined
  /**
   * Resolves once the watchdog said it runs (undefined), or with a message saying why it cannot
   * (no bash in PATH, bash too old, missing script). Never rejects.
   */
  readonly ready: Promise<string | undefined>
  /** Resolves when the watchdog has ended, for whatever reason. Never rejects. */
  readonly ended: Promise<WatchdogEnd>
  /** Starts guarding process group `pgid`, which must be gone by `deadlineMs` (epoch ms). */
  guard(pgid: number, deadlineMs: number): void
  /** A later lease deadline (epoch ms), after a renewal. */
  extend(deadlineMs: number): void
  /**
   * Tells the watchdog rxsem has ended the command itself, and resolves once it has exited (it is
   * SIGKILLed if it has not after `withinMs`).
   */
  finish(withinMs?: number): Promise<WatchdogEnd>
}

/**
 * Where the script is: beside the bundled bin (this module's own file, dist/rxsem.cjs), where the
 * build copies it, or else beside the CLI's entry (src/cli/main.ts, run from the sources); the
 * first of them that has it.
 */
export function watchdogScriptPath(): string {
  // The bundled bin is CommonJS (__filename is dist/rxsem.cjs); an ES module run (tsx) has no
  // __filename, and the script is beside its entry.
  const places: string[] = []
  if (typeof __filename === 'string') places.push(dirname(__filename))
  try {
    places.push(dirname(realpathSync(process.argv[1] ?? '.')))
  } catch {
    // No entry file to look beside (`node -e`): only the module's own place is left.
  }
  const scripts = places.map((place) => join(place, WATCHDOG_SCRIPT))
  return scripts.find((script) => existsSync(script)) ?? scripts[0] ?? WATCHDOG_SCRIPT
}

/**
 * Starts the watchdog (`bash <script> <grace ms>` found through PATH), which waits for `guard`.
 *
 * @example
 * const watchdog = startWatchdog()
 * if ((await watchdog.ready) === undefined) watchdog.guard(child.pid, Date.now() + 9000)
 */
export function startWatchdog(script: string = watchdogScriptPath()): Watchdog {
  const fail = (why: string): Watchdog => {
    const end: WatchdogEnd = { fired: undefined, code: null, signal: null, error: new Error(why) }
    return {
      pid: undefined,
      ready: Promise.resolve(why),
      ended: Promise.resolve(end),
      guard: () => {},
      extend: () => {},
      finish: () => Promise.resolve(end),
    }
  }
  if (!existsSync(script)) {
    return fail(
      `the watchdog script ${script} is missing: reinstall rx-consul-semaphore (or run \`npm run build\`)`,
    )
  }

  let child: ChildProcessByStdio<Writable, Readable, null>
  try {
    child = spawn('bash', [script, String(WATCHDOG_GRACE_MS)], {
      // Its own session and process group: signals for rxsem's group or the command's miss it.
      detached: true,
      stdio: ['pipe', 'pipe', 'inherit'],
    })
  } catch (error) {
    return fail(
      `cannot start the watchdog (bash ${script}): ${error instanceof Error ? error.message : String(error)}`,
    )
  }
  // Writes after the watchdog died fail with EPIPE: `ended` reports that, nothing may throw.
  child.stdin.on('error', () => {})
  child.stdout.on('error', () => {})

  let fired: WatchdogFired | undefined
  let unsupported: string | undefined
  let resolveReady: (why: string | undefined) => void = () => {}
  const ready = new Promise<string | undefined>((resolve) => (resolveReady = resolve))
  eachLine(child.stdout, (line) => {
    if (line === 'ready') resolveReady(undefined)
    else if (line === 'fired rxsem-ended' || line === 'fired lease-expired') {
      fired = line.slice('fired '.length) as WatchdogFired
    } else if (line.startsWith('unsupported ')) unsupported = line.slice('unsupported '.length)
  })

  const ended = new Promise<WatchdogEnd>((resolve) => {
    let spawnError: Error | undefined
    child.once('error', (error) => (spawnError = error))
    // 'close': the exit and every line it wrote (the `fired` before its signals) are both in.
    child.once('close', (code, signal) => {
      const error = spawnError
      resolveReady(
        error !== undefined
          ? (error as NodeJS.ErrnoException).code === 'ENOENT'
            ? 'rxsem run needs bash (version 5 or later) in PATH for the watchdog that guards its command, and found none: install bash or add it to PATH'
            : `cannot start the watchdog (bash ${script}): ${error.message}`
          : unsupported !== undefined
            ? `rxsem run needs bash 5 or later for the watchdog that guards its command, but the bash in PATH is ${unsupported}: put bash 5 or later first in PATH (on macOS: brew install bash)`
            : `the watchdog (bash ${script}) ended before it was ready (${signal ?? `exit status ${code}`})`,
      )
      resolve({ fired, code, signal, error })
    })
  })

  let closed = false
  const send = (line: string): void => {
    // One write per line, far below PIPE_BUF: the script never sees half a line.
    if (!closed && child.stdin.writable) child.stdin.write(`${line}\n`)
  }

  return {
    pid: child.pid,
    ready,
    ended,
    guard: (pgid, deadlineMs) => send(`guard ${pgid} ${Math.floor(deadlineMs)}`),
    extend: (deadlineMs) => send(`deadline ${Math.floor(deadlineMs)}`),
    async finish(withinMs = 5000) {
      send('done')
      closed = true
      child.stdin.end()
      const timer = setTimeout(() => {
        try {
          child.kill('SIGKILL')
        } catch {
          // gone already
        }
      }, withinMs)
      try {
        return await ended
      } finally {
        clearTimeout(timer)
      }
    },
  }
}

/**
 * Calls `onLine` with each line of `input` as it comes, without its line break, and with a last
 * line that has none once `input` ends: what node:readline's 'line' events give, for the few lines
 * the watchdog writes, without loading readline (eight modules of Node's) into every `rxsem run`.
 */
function eachLine(input: Readable, onLine: (line: string) => void): void {
  let partial = ''
  input.setEncoding('utf8')
  input.on('data', (chunk: string) => {
    const lines = (partial + chunk).split('\n')
    partial = lines.pop() ?? ''
    for (const line of lines) onLine(line.endsWith('\r') ? line.slice(0, -1) : line)
  })
  input.on('end', () => {
    if (partial !== '') onLine(partial)
  })
}
