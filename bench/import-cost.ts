// Table 3c, what the library costs a process to load and to hold one slot: the RSS and the CPU
// (user + system, from the process's start) of fresh node processes, each reading its own
// process.memoryUsage().rss and process.cpuUsage() at the moment measured:
//   node -e 0         a bare node, reading them at once
//   rxjs              `await import('rxjs')`: what any process that uses rxjs loads, for scale
//   rxjs and node:net  the same, and Node's sockets, which the library's first connection loads
//                     (src/consul/node-net.cts): the floor of a process that talks to Consul
//                     with the library, before a line of the library runs
//   import            `await import('rx-consul-semaphore')` (the ES module build)
//   require           `require('rx-consul-semaphore')` (the CommonJS build)
//   holding one slot  an ES module replica: semaphore({ prefix, limit: 1 }) without a `consul`
//                     option (the default client), reading 10 s after holding$ turned true, then
//                     close() and exit
// The 10 s: in the first seconds of a tenure V8 compiles the functions the tenure runs most with
// its optimizing compilers, in background threads, and then, the process being idle, its memory
// reducer collects and shrinks the heap; an idle replica's RSS settles within about 10 s.
// The package is the built one (dist/, `npm run bench` builds first), resolved by its name from
// the repository root as a user's `node_modules` would give it; the library's processes import
// nothing else. @opentelemetry/api is installed here (a devDependency), so the replica loads it
// (no SDK: its no-op providers). The processes run in turns, one of each per round, and each
// figure is the median over the rounds, so that a busy moment of the machine falls on all alike.
import { execFile } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { promisify } from 'node:util'
import { repoRoot } from './children.js'
import { percentile } from './stats.js'

const run = promisify(execFile)

/** One process's reading. */
export interface ProcessReading {
  readonly rssMb: number
  readonly cpuMs: number
}

/** The median reading of one kind of process over the rounds. */
export interface ProcessFootprint extends ProcessReading {
  /** Each round's reading, in the order the rounds ran. */
  readonly rounds: readonly ProcessReading[]
}

export interface ImportCostResult {
  readonly runs: number
  readonly bare: ProcessFootprint
  readonly rxjs: ProcessFootprint
  readonly rxjsHttp: ProcessFootprint
  readonly esm: ProcessFootprint
  readonly cjs: ProcessFootprint
  readonly holding: ProcessFootprint
}

/** Prints the reading as JSON on stdout: the last thing each child does before it exits. */
const REPORT =
  'const r=process.memoryUsage().rss,c=process.cpuUsage();' +
  'process.stdout.write(JSON.stringify({rssMb:r/1048576,cpuMs:(c.user+c.system)/1000}))'

/** rxjs, then Node's sockets, as the library's first connection loads them. */
const SOCKETS_AS_THE_CLIENT =
  "await import('rxjs');" +
  "(await import('node:module')).default.createRequire(import.meta.url)('node:net')"

/** How long the replica holds before it reads (see above). */
const HOLD_BEFORE_READING_MS = 10_000

/** The replica: holds one slot of a fresh prefix, reads, gives the slot back and exits. */
const HOLDING = `import { semaphore } from 'rx-consul-semaphore'
const sem = semaphore({ prefix: process.env.BENCH_IMPORT_PREFIX, limit: 1 })
let read = false
sem.holding$.subscribe({
  next: (held) => {
    if (!held || read) return
    read = true
    setTimeout(() => {
      ${REPORT}
      sem.close().then(() => process.exit(0), () => process.exit(1))
    }, ${HOLD_BEFORE_READING_MS})
  },
  error: (error) => {
    console.error(String(error))
    process.exit(1)
  },
})
`

async function reading(
  packageRoot: string,
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
): Promise<ProcessReading> {
  // Without the NODE_OPTIONS a bench run under tsx may have: a plain node, as a user runs it.
  const { NODE_OPTIONS: _, ...inherited } = process.env
  const { stdout } = await run(process.execPath, [...args], {
    cwd: packageRoot,
    env: { ...inherited, ...env },
    timeout: 60_000,
  })
  const parsed = JSON.parse(stdout) as Partial<ProcessReading>
  if (typeof parsed.rssMb !== 'number' || typeof parsed.cpuMs !== 'number') {
    throw new Error(`a child read nothing: ${stdout}`)
  }
  return { rssMb: parsed.rssMb, cpuMs: parsed.cpuMs }
}

function footprint(rounds: readonly ProcessReading[]): ProcessFootprint {
  const median = (values: readonly number[]): number => percentile(values, 50)
  return {
    rssMb: median(rounds.map((r) => r.rssMb)),
    cpuMs: median(rounds.map((r) => r.cpuMs)),
    rounds,
  }
}

/**
 * Measures table 3c against the agent at `agentAddr`, `runs` rounds.
 *
 * @param packageRoot - Where 'rx-consul-semaphore' resolves to the build measured: by default
 *   this repository's (another checkout's root, to compare builds).
 * @returns The median footprints.
 */
export async function measureImportCost(
  agentAddr: string,
  runs: number,
  packageRoot: string = repoRoot,
): Promise<ImportCostResult> {
  const replica = () =>
    reading(packageRoot, ['--input-type=module', '-e', HOLDING], {
      CONSUL_HTTP_ADDR: agentAddr,
      BENCH_IMPORT_PREFIX: `rxsem-bench/import/${randomUUID().slice(0, 8)}`,
    })
  const kinds = {
    bare: () => reading(packageRoot, ['-e', REPORT]),
    rxjs: () =>
      reading(packageRoot, ['--input-type=module', '-e', `await import('rxjs');${REPORT}`]),
    rxjsHttp: () =>
      reading(packageRoot, ['--input-type=module', '-e', `${SOCKETS_AS_THE_CLIENT};${REPORT}`]),
    esm: () =>
      reading(packageRoot, [
        '--input-type=module',
        '-e',
        `await import('rx-consul-semaphore');${REPORT}`,
      ]),
    cjs: () => reading(packageRoot, ['-e', `require('rx-consul-semaphore');${REPORT}`]),
    holding: replica,
  }
  const readings = new Map<keyof typeof kinds, ProcessReading[]>()
  for (let round = 0; round < runs; round++) {
    for (const [kind, measure] of Object.entries(kinds) as [
      keyof typeof kinds,
      () => Promise<ProcessReading>,
    ][]) {
      const done = readings.get(kind) ?? []
      done.push(await measure())
      readings.set(kind, done)
    }
  }
  const of = (kind: keyof typeof kinds): ProcessFootprint => footprint(readings.get(kind) ?? [])
  return {
    runs,
    bare: of('bare'),
    rxjs: of('rxjs'),
    rxjsHttp: of('rxjsHttp'),
    esm: of('esm'),
    cjs: of('cjs'),
    holding: of('holding'),
  }
}
