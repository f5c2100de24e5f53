// Runs the `rxsem` command line as a real child process, the built bin of package.json (or a
// given entry), and records every process it starts so a test's `after` can kill what is left.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { constants, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { builtFile } from './build.js'
import { consulBin } from './consul-agent.js'
import { groupMembers, killTree } from './processes.js'
import { eventually, holdersOf, readLock } from './observe.js'
import { onEnd, type Scope } from './tracked.js'

const repoRoot = resolve(import.meta.dirname, '../..')

export interface CliRun {
  readonly child: ChildProcess
  readonly pid: number
  /** Everything written to stdout / stderr so far. */
  stdout(): string
  stderr(): string
  /** Resolves with the exit code (or 128+n for a signal) once the process has exited. */
  readonly exited: Promise<number>
}

/**
 * How long a test waits for a started CLI to show something: starting node takes seconds when
 * the whole suite runs at once.
 */
export const CLI_START_MS = 30_000

const started = new Set<ChildProcess>()

export interface CliOptions {
  /** CONSUL_HTTP_ADDR for the child. */
  readonly addr?: string
  /** Run this JS file instead of the package's bin. */
  readonly entry?: string
  readonly env?: Readonly<Record<string, string>>
  readonly cwd?: string
}

/**
 * The `rxsem` of package.json's "bin" (dist/rxsem.cjs, which `npm run build` bundles): the tests
 * run what npm installs, not the sources.
 */
export const rxsemBin = resolve(
  repoRoot,
  (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { bin: { rxsem: string } })
    .bin.rxsem,
)

/**
 * The bin's code cache (src/cli/code-cache.ts) for the rxsem processes of this test process: in a
 * folder of its own, removed when this process exits, and not in the user's temporary folder.
 */
let codeCache: string | undefined
function codeCacheDir(): string {
  if (codeCache === undefined) {
    const dir = mkdtempSync(join(tmpdir(), 'rxsem-test-cache-'))
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }))
    codeCache = dir
  }
  return codeCache
}

/** Starts `rxsem <args>`; stdout and stderr are piped and collected. */
export function startCli(args: readonly string[], options: CliOptions = {}): CliRun {
  const node = [options.entry ?? builtFile(rxsemBin)]
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    NODE_COMPILE_CACHE: codeCacheDir(),
    ...options.env,
  }
  delete env['CONSUL_HTTP_TOKEN']
  delete env['CONSUL_HTTP_TOKEN_FILE']
  if (options.addr !== undefined) env['CONSUL_HTTP_ADDR'] = options.addr
  const child = spawn(process.execPath, [...node, ...args], {
    cwd: options.cwd ?? repoRoot,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  started.add(child)
  return collect(child, `rxsem ${args.join(' ')}`, () => started.delete(child))
}

/**
 * Starts `rxsem <args>` for the test `t`: stopped with SIGTERM at the end of the test, whatever
 * happens in it (a process that ended already is only waited for).
 */
export function startCliFor(
  t: { after: (fn: () => unknown) => void },
  args: readonly string[],
  options: CliOptions = {},
): CliRun {
  const run = startCli(args, options)
  t.after(async () => {
    run.child.kill('SIGTERM')
    await run.exited
  })
  return run
}

/** Collects a started child's output, and its exit status once 'close' says all output is in. */
function collect(child: ChildProcess, what: string, onClose: () => void): CliRun {
  let out = ''
  let err = ''
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()))
  child.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString()))
  const exited = new Promise<number>((done) => {
    child.once('close', (code, signal) => {
      onClose()
      done(code ?? (signal === null ? 0 : 128 + signalNumber(signal)))
    })
  })
  if (child.pid === undefined) throw new Error(`could not start ${what}`)
  return { child, pid: child.pid, stdout: () => out, stderr: () => err, exited }
}

/** Runs `rxsem <args>` to the end. */
export async function runCli(
  args: readonly string[],
  options: CliOptions = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const run = startCli(args, options)
  const code = await run.exited
  return { code, stdout: run.stdout(), stderr: run.stderr() }
}

/**
 * SIGKILLs every CLI process still running, and everything each one started (for `after` hooks):
 * a command `rxsem run` started lives in a process group of its own and would outlive its killed
 * parent, holding the test's pipes open.
 */
export function killAllCli(): void {
  for (const child of started) if (child.pid !== undefined) killTree(child.pid, 'SIGKILL')
}

function signalNumber(signal: NodeJS.Signals): number {
  return (constants.signals as Partial<Record<string, number>>)[signal] ?? 0
}

/** Each running `consul lock`, with its `CliRun.exited`. */
const consulLocks = new Map<ChildProcess, Promise<number>>()

/**
 * Starts `consul lock -http-addr=<addr> <args>` (the real Consul CLI), output collected, as the
 * leader of a process group of its own, which its child joins: stopping it can then reach a
 * child it left behind.
 */
export function startConsulLock(addr: string, args: readonly string[]): CliRun {
  const child = spawn(consulBin(), ['lock', `-http-addr=${addr}`, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  const run = collect(child, `consul lock ${args.join(' ')}`, () => consulLocks.delete(child))
  consulLocks.set(child, run.exited)
  return run
}

/**
 * Starts `consul lock -n <limit> <prefix> <child>` (default 2) whose child prints `started`, and waits until it
 * holds (listed in `.lock` of the agent at `url`) and its child runs; stopped when `scope` ends.
 *
 * @returns The run, and its session as `.lock` lists it.
 */
export async function holdingConsulLock(
  scope: Scope,
  agent: { readonly url: string; readonly addr: string },
  prefix: string,
  limit = 2,
): Promise<{ readonly go: CliRun; readonly session: string }> {
  const go = startConsulLock(agent.addr, [`-n=${limit}`, prefix, 'echo started; exec sleep 300'])
  onEnd(scope, () => stopAllConsulLocks([go]))
  await childStarted(go)
  const session = await eventually(
    `consul lock -n ${limit} holding`,
    async () => {
      const sessions = (await (await fetch(`${agent.url}/v1/session/list`)).json()) as {
        ID: string
        Name: string
      }[]
      const holders = holdersOf((await readLock(agent.url, prefix))?.body)
      return holders.find((h) =>
        sessions.some((s) => s.ID === h && s.Name.startsWith('Consul lock')),
      )
    },
    30_000,
  )
  return { go, session }
}

/** Waits until the child of a `consul lock` (one that prints `started`) runs. */
export function childStarted(go: CliRun): Promise<true> {
  return eventually(
    'its child running',
    () => (go.stdout().includes('started') ? true : undefined),
    30_000,
  )
}

/**
 * How long `consul lock` gets to stop after SIGTERM: it gives its child 5 s (`lockKillGracePeriod`)
 * before a SIGKILL, then releases; a loaded machine needs more.
 */
const CONSUL_LOCK_STOP_MS = 15_000

/**
 * Stops every `consul lock` still running (or `only` those): SIGTERM, which it passes to its child
 * before releasing (a SIGKILL would orphan the child), then SIGKILL to its whole process group
 * after CONSUL_LOCK_STOP_MS. Once it has ended, whatever is left in its group (a child it did not
 * stop) is SIGKILLed too, so its output pipes close and nothing outlives the test.
 */
export async function stopAllConsulLocks(only?: readonly CliRun[]): Promise<void> {
  const chosen = only ?? [...consulLocks].map(([child, exited]) => ({ child, exited }))
  await Promise.all(chosen.map(stopConsulLock))
}

async function stopConsulLock({ child, exited: closed }: Pick<CliRun, 'child' | 'exited'>) {
  const group = child.pid
  if (group === undefined) return
  const killGroup = () => {
    try {
      process.kill(-group, 'SIGKILL')
    } catch {
      // The group is empty.
    }
  }
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((done) => child.once('exit', () => done()))
    const timer = setTimeout(killGroup, CONSUL_LOCK_STOP_MS)
    child.kill('SIGTERM')
    await exited
    clearTimeout(timer)
  }
  const left = groupMembers(group)
  if (left.length > 0) {
    // A child that outlived its `consul lock` (killed, or not waiting for it) holds the pipes open.
    process.stderr.write(
      `# consul lock ${child.spawnargs.slice(2).join(' ')} ended, leaving pid ${left.join(', ')} of its group: killed\n`,
    )
    killGroup()
  }
  await closed
}

/**
 * The tenures a `consul lock` child logged to `log`, one `start <ms>` and one `end <ms>` line
 * around its command, as intervals named `<who>#<n>`; none when the log is not there yet.
 */
export function intervalsIn(log: string, who: string): { who: string; from: number; to: number }[] {
  if (!existsSync(log)) return []
  const out: { who: string; from: number; to: number }[] = []
  let from: number | undefined
  for (const line of readFileSync(log, 'utf8').trim().split('\n')) {
    const [what, at] = line.split(' ')
    if (what === 'start') from = Number(at)
    if (what === 'end' && from !== undefined) {
      out.push({ who: `${who}#${out.length}`, from, to: Number(at) })
      from = undefined
    }
  }
  return out
}
