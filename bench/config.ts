// How big each figure's run is. BENCH_QUICK=1 shrinks everything to a smoke run of about a
// minute; single counts can be overridden (BENCH_HANDOVERS, BENCH_ANATOMY_HANDOVERS,
// BENCH_FLOOR_SAMPLES, BENCH_PARTITION_TRIALS, BENCH_EXCLUSIVE_KEYS, BENCH_IMPORT_RUNS) so that a quiet machine can buy
// tighter percentiles with more time.
//
// Which figures run: BENCH_ONLY, a comma-separated list of steps (all when unset), e.g.
// BENCH_ONLY=scale,exclusive. The scale figure's setups: BENCH_SCALE, a comma-separated list of
// <prefixes>x<contenders per prefix>, e.g. BENCH_SCALE=1x1000. The telemetry figure:
// BENCH_TELEMETRY_ROUNDS rounds of its four variants, at BENCH_TELEMETRY_CONTENDERS contenders on
// one prefix. The pooled-jobs figure: BENCH_JOBS, a comma-separated list of job counts, e.g.
// BENCH_JOBS=1000, and BENCH_JOBS_DEADLINE, seconds each size may run (default 90, 120 at
// 10,000 jobs, 45 quick). The fleet figure: BENCH_JOBS_FLEET, a comma-separated list of
// <processes>x<jobs per process>@<hold ms>, e.g. BENCH_JOBS_FLEET=4x2500@2,1x10000@2, and
// BENCH_JOBS_FLEET_DEADLINE, seconds each setup may run (default 60 for jobs under 10 ms, else 30;
// 30 and 20 quick). The replicas figure: BENCH_REPLICAS, a comma-separated list of replica counts
// on the one agent, e.g. BENCH_REPLICAS=12; when set, the cluster topology is not run. A run with
// BENCH_ONLY prints its tables and leaves bench/results.md (a full run's) as it is. BENCH_CPU_PROFILES=<folder> makes each scale worker write CPU profiles of its start-up and
// of its churn there (bench/scale-worker.ts), and prints the churn's requests by kind.
import type { JobsFairSetup, JobsFleetSetup, JobsSetup } from './jobs.js'
import type { TelemetryCostConfig } from './telemetry-cost.js'

/** The steps of `npm run bench`, in the order they run. */
export const BENCH_STEPS = [
  'startup',
  'process-cost',
  'import',
  'floor',
  'decide',
  'handover',
  'anatomy',
  'contention',
  'partition',
  'scale',
  'telemetry',
  'default-client',
  'replicas',
  'jobs',
  'jobs-fair',
  'jobs-fleet',
  'exclusive',
] as const
export type BenchStep = (typeof BENCH_STEPS)[number]

export interface ScaleSetup {
  readonly prefixes: number
  readonly perPrefix: number
  readonly limit: number
  readonly churnMs: number
  /** Heap snapshots at baseline and steady state (read after the run: costly past 1,000). */
  readonly heapSnapshots: boolean
}

/** Most contenders of a scale setup whose worker writes heap snapshots. */
const HEAP_SNAPSHOTS_UP_TO = 1000

/** Figure 6: replicas, one contender per process (bench/replicas.ts). */
export interface ReplicasConfig {
  /** Replica counts on the one agent. */
  readonly counts: readonly number[]
  /** Replica counts on 3 servers + 2 client agents; empty: the fleet topology is not run. */
  readonly clusterCounts: readonly number[]
  readonly limit: number
  readonly holdMs: number
  readonly warmupMs: number
  readonly steadyMs: number
}

export interface BenchConfig {
  readonly quick: boolean
  /** The steps to run (BENCH_ONLY); all of them by default. */
  readonly steps: ReadonlySet<BenchStep>
  /** Whether only some steps run: then bench/results.md is not written. */
  readonly partial: boolean
  /** Samples of each floor figure (CAS write, wake-up). */
  readonly floorSamples: number
  /** Handovers to collect per implementation and limit. */
  readonly handovers: number
  /** Handovers of each CLI to split in three at the agent (table 2b, bench/anatomy.ts). */
  readonly anatomyHandovers: number
  readonly contention: {
    readonly contenders: number
    readonly limit: number
    readonly holdMs: number
    readonly acquisitions: number
  }
  /** Table 3d: the single-key lock, consul lock -n 1 and rxsem run --leader (one process each). */
  readonly leaderContention: {
    readonly contenders: number
    readonly limit: number
    readonly holdMs: number
    readonly acquisitions: number
  }
  readonly partitionTrials: number
  /** The scale figure's setups: one prefix at growing sizes, and the same total over 10. */
  readonly scale: readonly ScaleSetup[]
  readonly replicas: ReplicasConfig
  /** Figure 5e: the telemetry's CPU at scale (bench/telemetry-cost.ts). */
  readonly telemetryCost: TelemetryCostConfig
  /** Distinct task keys that `exclusive(...)` serves on one long-lived client. */
  readonly exclusiveKeys: number
  /** Rounds of table 3c (bench/import-cost.ts): fresh processes of each kind, in turns. */
  readonly importRuns: number
  /** Whether to run the process-based implementations (rxsem run, consul lock) at all. */
  readonly cli: boolean
  /** Figure 7: pooled withSlot jobs of one process, one run per size (bench/jobs.ts). */
  readonly jobs: readonly JobsSetup[]
  /** Figure 7b: two processes' jobs on one prefix (bench/jobs.ts). */
  readonly jobsFair: JobsFairSetup
  /** Figure 7c: several processes' jobs on one prefix, and one process with the same total. */
  readonly jobsFleet: readonly JobsFleetSetup[]
}

/**
 * V8's own parts of a process's RSS, held down by flags in control runs of figure 7's largest
 * size, each alone and both together: the young generation (its semi-spaces, which a busy process
 * grows to their maximum) and the optimising compilers (Maglev and TurboFan, whose working memory
 * their background threads allocate).
 */
export const JOBS_V8_CONTROLS: readonly (readonly string[])[] = [
  ['--max-semi-space-size=1'],
  ['--max-opt=1'],
  ['--max-semi-space-size=1', '--max-opt=1'],
]

/**
 * The floor of a fleet's 20 ms jobs: the same processes and jobs, each process on a prefix of its
 * own with its share of the limit (rounded down), so that they share nothing but the agent and
 * the cores. None for one process, nor for jobs short enough to be bound by the library's cost.
 */
function apartOf(setup: JobsFleetSetup): JobsFleetSetup[] {
  if (setup.processes < 2 || setup.holdMs < 10) return []
  const limit = Math.max(1, Math.floor(setup.limit / setup.processes))
  // Fewer slots in all: the deadline grows with them.
  const deadlineMs = Math.ceil((setup.deadlineMs * setup.limit) / (limit * setup.processes))
  return [{ ...setup, limit, deadlineMs, apart: true }]
}

/**
 * Figure 7's runs: each size, then the largest again under each of `JOBS_V8_CONTROLS`, and as the
 * floor (a limit kept in the process).
 */
function jobsSetups(sizes: readonly number[], quick: boolean): JobsSetup[] {
  const setups = sizes.map((jobs) => ({
    jobs,
    limit: 10,
    holdMs: 2,
    deadlineMs: 1000 * count('BENCH_JOBS_DEADLINE', quick ? 45 : jobs >= 10_000 ? 120 : 90),
  }))
  const largest = setups.reduce<JobsSetup | undefined>(
    (most, setup) => (most === undefined || setup.jobs > most.jobs ? setup : most),
    undefined,
  )
  if (largest === undefined) return setups
  return [
    ...setups,
    ...JOBS_V8_CONTROLS.map((v8Flags) => ({ ...largest, v8Flags })),
    { ...largest, floor: true },
  ]
}

/**
 * A comma-separated list of counts >= 1 in the environment variable `name` (BENCH_JOBS,
 * BENCH_REPLICAS), or undefined when unset. `what` and `example` word the error.
 */
export function countList(name: string, what: string, example: string): number[] | undefined {
  const raw = process.env[name]
  if (raw === undefined || raw.trim() === '') return undefined
  return raw.split(',').map((n) => {
    const value = Number(n.trim())
    if (!Number.isInteger(value) || value < 1)
      throw new Error(`${name}=${raw}: want ${what} >= 1, e.g. ${example}`)
    return value
  })
}

/** BENCH_JOBS_FLEET's setups as [processes, jobs per process, hold ms], or undefined when unset. */
function fleetSetups(): [number, number, number][] | undefined {
  const raw = process.env['BENCH_JOBS_FLEET']
  if (raw === undefined || raw.trim() === '') return undefined
  return raw.split(',').map((setup) => {
    const match = /^\s*(\d+)x(\d+)@(\d+)\s*$/.exec(setup)
    const [processes, jobs, holdMs] = [match?.[1], match?.[2], match?.[3]].map(Number)
    if (!match || !processes || !jobs || !holdMs) {
      throw new Error(
        `BENCH_JOBS_FLEET=${raw}: want <processes>x<jobs per process>@<hold ms>, e.g. 4x2500@2`,
      )
    }
    return [processes, jobs, holdMs]
  })
}

function count(name: string, fallback: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name}=${raw}: want a count >= 1`)
  return value
}

function steps(): ReadonlySet<BenchStep> {
  const raw = process.env['BENCH_ONLY']
  if (raw === undefined || raw.trim() === '') return new Set(BENCH_STEPS)
  const asked = raw.split(',').map((step) => step.trim())
  const unknown = asked.filter((step) => !(BENCH_STEPS as readonly string[]).includes(step))
  if (unknown.length > 0) {
    throw new Error(
      `BENCH_ONLY=${raw}: no step ${unknown.join(', ')}; the steps: ${BENCH_STEPS.join(', ')}`,
    )
  }
  return new Set(asked as BenchStep[])
}

/** BENCH_SCALE's setups as [prefixes, contenders per prefix], or undefined when unset. */
function scaleSetups(): [number, number][] | undefined {
  const raw = process.env['BENCH_SCALE']
  if (raw === undefined || raw.trim() === '') return undefined
  return raw.split(',').map((setup) => {
    const match = /^\s*(\d+)x(\d+)\s*$/.exec(setup)
    const prefixes = Number(match?.[1])
    const perPrefix = Number(match?.[2])
    if (!match || prefixes < 1 || perPrefix < 1) {
      throw new Error(`BENCH_SCALE=${raw}: want <prefixes>x<contenders per prefix>, e.g. 1x1000`)
    }
    return [prefixes, perPrefix]
  })
}

export function benchConfig(): BenchConfig {
  const quick = process.env['BENCH_QUICK'] === '1'
  const selected = steps()
  const replicaCounts = countList('BENCH_REPLICAS', 'replica counts', '12')
  return {
    quick,
    steps: selected,
    partial: selected.size < BENCH_STEPS.length,
    floorSamples: count('BENCH_FLOOR_SAMPLES', quick ? 50 : 250),
    handovers: count('BENCH_HANDOVERS', quick ? 10 : 50),
    anatomyHandovers: count('BENCH_ANATOMY_HANDOVERS', quick ? 8 : 15),
    contention: quick
      ? { contenders: 10, limit: 3, holdMs: 50, acquisitions: 30 }
      : { contenders: 30, limit: 3, holdMs: 50, acquisitions: 150 },
    leaderContention: quick
      ? { contenders: 4, limit: 1, holdMs: 50, acquisitions: 12 }
      : { contenders: 6, limit: 1, holdMs: 50, acquisitions: 60 },
    partitionTrials: count('BENCH_PARTITION_TRIALS', quick ? 1 : 3),
    scale: (
      scaleSetups() ??
      (quick
        ? [
            [1, 20],
            [1, 200],
            [10, 20],
          ]
        : [
            [1, 100],
            [1, 1000],
            [1, 10_000],
            [10, 100],
          ])
    ).map(([prefixes = 1, perPrefix = 1]) => ({
      prefixes,
      perPrefix,
      limit: 10,
      // 10,000 contenders hand slots over slowly: a longer window, so that some releases fall in it.
      churnMs: quick ? 2000 : perPrefix >= 10_000 ? 15_000 : 5000,
      heapSnapshots: prefixes * perPrefix <= HEAP_SNAPSHOTS_UP_TO,
    })),
    replicas: quick
      ? {
          counts: replicaCounts ?? [4, 8],
          clusterCounts: [],
          limit: 3,
          holdMs: 50,
          warmupMs: 1000,
          steadyMs: 4000,
        }
      : {
          counts: replicaCounts ?? [12, 40],
          // 40 replicas on 5 agents saturate 2 cores (slots stood empty: at most 1 holder at
          // once, for the library and consul lock alike); on a bigger machine add 40.
          clusterCounts: replicaCounts ? [] : [12],
          limit: 3,
          holdMs: 50,
          warmupMs: 3000,
          steadyMs: 12_000,
        },
    telemetryCost: {
      contenders: count('BENCH_TELEMETRY_CONTENDERS', quick ? 200 : 1000),
      limit: 10,
      // Longer than the scale figure's window: the difference sought is a few percent.
      churnMs: quick ? 2000 : 10_000,
      rounds: count('BENCH_TELEMETRY_ROUNDS', quick ? 1 : 3),
    },
    exclusiveKeys: count('BENCH_EXCLUSIVE_KEYS', quick ? 5000 : 100_000),
    importRuns: count('BENCH_IMPORT_RUNS', quick ? 5 : 9),
    cli: process.env['BENCH_NO_CLI'] !== '1',
    // Each size runs until every job settled or its deadline, whichever comes first: a slow
    // implementation is reported as "n of N done in T s".
    jobs: jobsSetups(
      countList('BENCH_JOBS', 'job counts', '1000,10000') ?? (quick ? [100, 500] : [1000, 10_000]),
      quick,
    ),
    jobsFair: {
      bigJobs: quick ? 200 : 1000,
      smallJobs: 40,
      limit: 4,
      holdMs: 20,
      deadlineMs: quick ? 45_000 : 120_000,
    },
    // Each fleet beside one process with the same total and hold, measured the same way.
    jobsFleet: (
      fleetSetups() ??
      (quick
        ? [
            [4, 250, 2],
            [1, 1000, 2],
            [4, 100, 20],
            [1, 400, 20],
          ]
        : [
            [4, 2500, 2],
            [1, 10_000, 2],
            [4, 500, 20],
            [1, 2000, 20],
            // Four times the jobs: the CPU per job at two sizes tells a cost per job from the
            // processes' start-up (their first requests, V8 warming up).
            [4, 2000, 20],
          ])
    )
      .map(([processes = 1, jobsPerProcess = 1, holdMs = 2]): JobsFleetSetup => ({
        processes,
        jobsPerProcess,
        limit: 10,
        holdMs,
        deadlineMs:
          1000 *
          count('BENCH_JOBS_FLEET_DEADLINE', holdMs < 10 ? (quick ? 30 : 60) : quick ? 20 : 30),
      }))
      .flatMap((setup) => [setup, ...apartOf(setup)]),
  }
}
