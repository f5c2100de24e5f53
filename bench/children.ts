// The processes a figure starts (`rxsem run`, `consul lock`, and the shell child each of them
// runs while holding), tracked so that `killAll` in a finally leaves nothing behind.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { buildSync } from 'esbuild'
import { consulBin } from '../test/support/consul-agent.js'
import type { HoldEvent } from './pair-handovers.js'

export const repoRoot = resolve(import.meta.dirname, '..')

/**
 * The command a holder runs. It writes its own timestamps with `date +%s%N`, so that start and
 * end are measured by the process that holds, not by whoever watches it:
 *   S <id> <ns> <pids>   first thing after start (the slot is held from here on)
 *   R <id> <ns>          last thing before a normal exit (BENCH_HOLD seconds later)
 *   T <id> <ns>          on SIGTERM (BENCH_HOLD=forever: it holds until stopped)
 * The pids let killAll reach a child whose parent was SIGKILLed.
 */
const childScript = `#!/bin/sh
id=$1
ev=$BENCH_EVENTS
if [ "$BENCH_HOLD" = forever ]; then
  s=
  trap 'echo "T $id $(date +%s%N)" >> "$ev"; [ -n "$s" ] && kill $s 2>/dev/null; exit 0' TERM INT
  echo "S $id $(date +%s%N) $$" >> "$ev"
  # sleep in the background + wait: a trapped signal interrupts wait at once (not after sleep).
  sleep 300 & s=$!
  echo "P $id $s" >> "$ev"
  wait $s
  exit 0
fi
echo "S $id $(date +%s%N) $$" >> "$ev"
sleep "$BENCH_HOLD"
echo "R $id $(date +%s%N)" >> "$ev"
`

export interface ChildEvent {
  readonly kind: 'S' | 'R' | 'T'
  readonly who: string
  /** Wall-clock milliseconds (from the child's nanoseconds, exact to the microsecond). */
  readonly at: number
}

/** A scratch folder with the child script and one events file. */
export class Workspace {
  readonly dir = mkdtempSync(join(tmpdir(), 'rxsem-bench-'))
  readonly script = join(this.dir, 'child.sh')
  readonly events = join(this.dir, 'events.log')
  private readonly processes = new Set<ChildProcess>()

  constructor() {
    writeFileSync(this.script, childScript)
    chmodSync(this.script, 0o755)
    writeFileSync(this.events, '')
  }

  /** Parses the events file; lines still being written are skipped. */
  readEvents(): ChildEvent[] {
    const out: ChildEvent[] = []
    for (const line of readFileSync(this.events, 'utf8').split('\n')) {
      const [kind, who, ns] = line.split(' ')
      if ((kind !== 'S' && kind !== 'R' && kind !== 'T') || who === undefined) continue
      if (ns === undefined || !/^\d{19}$/.test(ns)) continue
      // ns does not fit a double; µs does (2^53 µs is 285 years).
      out.push({ kind, who, at: Number(BigInt(ns) / 1000n) / 1000 })
    }
    return out
  }

  /** Pids the children reported (shell and its sleep). */
  private childPids(): number[] {
    const pids: number[] = []
    for (const line of readFileSync(this.events, 'utf8').split('\n')) {
      const parts = line.split(' ')
      if (parts[0] === 'S' && parts[3] !== undefined) pids.push(Number(parts[3]))
      if (parts[0] === 'P' && parts[2] !== undefined) pids.push(Number(parts[2]))
    }
    return pids.filter((pid) => Number.isInteger(pid) && pid > 1)
  }

  /**
   * Runs one contender of a process implementation once: logs when it was wanted and when it was
   * up and contending into `wants`, and SIGTERMs it at `deadline` so that a contender that never
   * gets a slot cannot hold a figure's loop past its time. False when the implementation gave no
   * command (nothing ran).
   */
  async runContender(
    implementation: CliImplementation,
    contender: {
      readonly addr: string
      readonly prefix: string
      readonly limit: number
      readonly who: string
      readonly holdMs: number
      readonly deadline: number
    },
    wants: HoldEvent[],
  ): Promise<boolean> {
    const { who } = contender
    const [command, ...args] = implementation.argv({ ...contender, script: this.script })
    if (command === undefined) return false
    wants.push({ kind: 'want', who, at: Date.now() })
    const run = this.start(
      command,
      args,
      { BENCH_HOLD: String(contender.holdMs / 1000) },
      {
        pattern: implementation.ready,
        onReady: () => wants.push({ kind: 'ready', who, at: Date.now() }),
      },
    )
    const timer = setTimeout(
      () => run.child.kill('SIGTERM'),
      Math.max(0, contender.deadline - Date.now()),
    )
    await run.exited
    clearTimeout(timer)
    return true
  }

  /** Starts a tracked process; its exit code (or -1 on a signal) resolves `exited`. */
  start(
    command: string,
    args: readonly string[],
    env: Readonly<Record<string, string>>,
    ready?: { readonly pattern: RegExp; readonly onReady: () => void },
  ): { readonly child: ChildProcess; readonly exited: Promise<number> } {
    const child = spawn(command, args, {
      cwd: repoRoot,
      env: { ...process.env, SHELL: '/bin/sh', BENCH_EVENTS: this.events, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    this.processes.add(child)
    let stderr = ''
    let output = ''
    let isReady = false
    const watch = (d: Buffer): void => {
      if (isReady || ready === undefined) return
      output = (output + d.toString()).slice(-4000)
      if (ready.pattern.test(output)) {
        isReady = true
        ready.onReady()
      }
    }
    child.stdout?.on('data', watch)
    child.stderr?.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-2000)
      watch(d)
    })
    const exited = new Promise<number>((done) => {
      child.once('error', () => done(-1))
      child.once('close', (code) => {
        this.processes.delete(child)
        if (code !== 0 && code !== null && process.env['BENCH_DEBUG'] === '1') {
          process.stderr.write(`[bench] ${command} exited ${code}: ${stderr}\n`)
        }
        done(code ?? -1)
      })
    })
    return { child, exited }
  }

  /** SIGTERM to every tracked process (they stop their children), for an orderly end. */
  terminateAll(): void {
    for (const child of this.processes) child.kill('SIGTERM')
  }

  /** SIGKILLs every tracked process and every child pid reported, then removes the folder. */
  async killAll(): Promise<void> {
    for (const child of this.processes) child.kill('SIGKILL')
    for (const pid of this.childPids()) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // already gone
      }
    }
    const deadline = Date.now() + 5000
    while (this.processes.size > 0 && Date.now() < deadline) {
      await new Promise((done) => setTimeout(done, 50))
    }
    rmSync(this.dir, { recursive: true, force: true })
  }
}

/** How to start one contender of an implementation that runs as a process. */
export interface CliImplementation {
  readonly name: string
  /**
   * Output that tells the process is up and contending (its start-up is over). Under load a
   * node start takes a second or more, which must not pass for handover or queue time.
   */
  readonly ready: RegExp
  /** Argv (command first) of one contender that runs the child script with id `who`. */
  argv(options: {
    readonly addr: string
    readonly prefix: string
    readonly limit: number
    readonly who: string
    readonly script: string
    readonly ttl?: string
  }): readonly string[]
}

/** The built `rxsem` bin of package.json, as `npx rxsem` runs it (`npm run bench` builds first). */
export const rxsemBinPath = (
  JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { bin: { rxsem: string } }
).bin.rxsem
export const rxsemBin = [process.execPath, join(repoRoot, rxsemBinPath)] as const

/**
 * Argv of one `rxsem run` contender: `mode` says which lock (`--limit n`, or `--leader`), the
 * rest is the same for both.
 */
const rxsemRunArgv = (
  mode: readonly string[],
  { addr, prefix, who, script, ttl }: Parameters<CliImplementation['argv']>[0],
): readonly string[] => [
  ...rxsemBin,
  'run',
  ...mode,
  '--prefix',
  prefix,
  '--http-addr',
  addr,
  '--verbose',
  ...(ttl === undefined ? [] : ['--ttl', ttl]),
  '--',
  '/bin/sh',
  script,
  who,
]

export const rxsemRun: CliImplementation = {
  name: 'rxsem run',
  ready: /watch connected|waiting for a slot|a slot is free|holding slot/,
  argv: (options) => rxsemRunArgv(['--limit', String(options.limit)], options),
}

/** `rxsem run --leader`: the single-key lock of `consul lock` (without -n), one holder. */
export const rxsemRunLeader: CliImplementation = {
  name: 'rxsem run --leader',
  ready: rxsemRun.ready,
  argv: (options) => rxsemRunArgv(['--leader'], options),
}

export const consulLock: CliImplementation = {
  name: 'consul lock -n',
  // Printed right before the session and the contender key are created.
  ready: /Attempting lock acquisition/,
  // -shell is true by default: the one string is run by $SHELL -c (set to /bin/sh above).
  // consul lock has no TTL flag: its sessions always have 15 s.
  argv: ({ addr, prefix, limit, who, script }) => [
    consulBin(),
    'lock',
    '-verbose',
    `-n=${limit}`,
    `-http-addr=${addr}`,
    prefix,
    `/bin/sh ${script} ${who}`,
  ],
}

/** Whether the built `rxsem` runs: its `run --help` must answer with the run usage. */
export function rxsemAvailable(): boolean {
  const [node, ...bin] = rxsemBin
  const result = spawnSync(node, [...bin, 'run', '--help'], {
    cwd: repoRoot,
    encoding: 'utf8',
    timeout: 30_000,
  })
  return result.status === 0 && result.stdout.includes('rxsem run')
}

/** Median wall time of starting a process to its exit, e.g. `rxsem run --help` (start-up). */
export function startupMs(argv: readonly string[], runs = 3): number {
  return startupsMs([argv], runs)[0] ?? Number.NaN
}

/**
 * startupMs of several commands measured in turns, one run of each per round, so that a busy
 * moment of the machine slows them alike (e.g. rxsem against a bare `node -e 0`).
 */
export function startupsMs(argvs: readonly (readonly string[])[], runs: number): number[] {
  const times = argvs.map((): number[] => [])
  for (let i = 0; i < runs; i++) {
    argvs.forEach(([command, ...args], j) => {
      if (command === undefined) return
      const start = performance.now()
      spawnSync(command, args, { cwd: repoRoot, stdio: 'ignore', timeout: 30_000 })
      times[j]?.push(performance.now() - start)
    })
  }
  return times.map((t) => {
    t.sort((a, b) => a - b)
    return t[Math.floor(t.length / 2)] ?? Number.NaN
  })
}

/** What one process cost from start to exit: CPU (user + system) and peak RSS. */
export interface ProcessCost {
  readonly cpuMs: number
  readonly rssMb: number
}

/**
 * The median CPU and peak RSS of each command, measured in turns like startupsMs: the peak RSS
 * through GNU time (`/usr/bin/time`, Debian's `time` package), the CPU through bash's `times`
 * (Node cannot read a child's resource usage). GNU time prints CPU seconds to two decimals, 10 ms
 * steps, as coarse as a bare node's whole start; `times` prints the user and system time of the
 * shell's reaped children to the millisecond, read before and after the command: what the shell
 * reaped before it runs is not the command's (a shell started from a process without a terminal
 * was seen to count some 90 ms there), and what it reaps during it is the command, its own
 * children, and GNU time around it (well under a millisecond). Undefined when GNU time is
 * missing.
 */
export function processCosts(
  argvs: readonly (readonly string[])[],
  runs: number,
): ProcessCost[] | undefined {
  const time = '/usr/bin/time'
  if (!existsSync(time)) return undefined
  const dir = mkdtempSync(join(tmpdir(), 'rxsem-cost-'))
  const out = join(dir, 'time')
  // The command's own output is dropped; each `times` prints the shell's time, then its children's.
  const script = 'times; "$@" </dev/null >/dev/null 2>&1; times'
  try {
    const costs = argvs.map((): ProcessCost[] => [])
    for (let i = 0; i < runs; i++) {
      argvs.forEach((argv, j) => {
        const { stdout } = spawnSync(
          'bash',
          ['-c', script, 'bash', time, '-o', out, '-f', '%M', ...argv],
          { cwd: repoRoot, encoding: 'utf8', timeout: 30_000 },
        )
        const rssKb = readFileSync(out, 'utf8').trim().split('\n').at(-1)
        costs[j]?.push({ cpuMs: childrenCpuMs(stdout), rssMb: Number(rssKb) / 1024 })
      })
    }
    // A reading that failed (NaN) is left out rather than sorted among the others.
    const median = (values: number[]): number => {
      const read = values.filter(Number.isFinite).sort((a, b) => a - b)
      return read[Math.floor(read.length / 2)] ?? Number.NaN
    }
    return costs.map((c) => ({
      cpuMs: median(c.map((x) => x.cpuMs)),
      rssMb: median(c.map((x) => x.rssMb)),
    }))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * The user + system CPU (ms) of the children a shell reaped between two `times`: what bash printed
 * is two pairs of lines of `<m>m<s>s <m>m<s>s`, the shell's own time then its children's, before
 * and after. NaN when it printed something else.
 */
export function childrenCpuMs(printed: string): number {
  const lines = printed.trim().split('\n')
  if (lines.length !== 4) return Number.NaN
  return childrenMs(lines[3] ?? '') - childrenMs(lines[1] ?? '')
}

/** One line of `times` (`<m>m<s>s <m>m<s>s`): user + system, ms; NaN for anything else. */
function childrenMs(line: string): number {
  const parts = [...line.matchAll(/(\d+)m([\d.]+)s/g)]
  if (parts.length !== 2) return Number.NaN
  return parts.reduce(
    (ms, [, minutes, seconds]) => ms + (Number(minutes) * 60 + Number(seconds)) * 1000,
    0,
  )
}

const builtChildren = new Map<string, string>()

/**
 * A bench child (`bench/<name>.ts`) as plain JavaScript in .cache/bench/ (one file, with the bench
 * modules it imports), inside the package's folder, so that its `import 'rx-consul-semaphore'`
 * resolves to the build (dist/esm) by the package's "exports", as in a user's process, and plain
 * node runs it without a loader. Written once per run.
 *
 * @param name - The child's file name without `.ts` (e.g. 'replica-child').
 * @param who - What runs it, for the error when the build is missing (e.g. 'the library replicas').
 * @returns The path of the script.
 */
export function builtChild(name: string, who: string): string {
  const known = builtChildren.get(name)
  if (known !== undefined) return known
  if (!existsSync(join(repoRoot, 'dist/esm/index.js'))) {
    throw new Error(`${who} run the build: dist/esm/index.js is missing (npm run build)`)
  }
  const source = new URL(`./${name}.ts`, import.meta.url).pathname
  const dir = join(repoRoot, '.cache/bench')
  mkdirSync(dir, { recursive: true })
  const out = join(dir, `${name}.mjs`)
  // Bundled with the bench modules it imports; the package and node's own modules stay imports.
  buildSync({
    entryPoints: [source],
    outfile: out,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    external: ['rx-consul-semaphore', 'rx-consul-semaphore/*'],
  })
  builtChildren.set(name, out)
  return out
}
