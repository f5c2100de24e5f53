// How big each figure's run is. BENCH_QUICK=1 shrinks everything to a smoke run of about a
// minute; single counts can be overridden (BENCH_HANDOVERS, BENCH_FLOOR_SAMPLES,
// BENCH_PARTITION_TRIALS) so that a quiet machine can buy tighter percentiles with more time.

export interface ScaleSetup {
  readonly prefixes: number
  readonly perPrefix: number
  readonly limit: number
  readonly churnMs: number
}

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
  /** Samples of each floor figure (CAS write, wake-up). */
  readonly floorSamples: number
  /** Handovers to collect per implementation and limit. */
  readonly handovers: number
  readonly contention: {
    readonly contenders: number
    readonly limit: number
    readonly holdMs: number
    readonly acquisitions: number
  }
  readonly partitionTrials: number
  /** The scale figure's setups: one prefix at growing sizes, and the same total over 10. */
  readonly scale: readonly ScaleSetup[]
  readonly replicas: ReplicasConfig
  /** Whether to run the process-based implementations (rxsem run, consul lock) at all. */
  readonly cli: boolean
}

function count(name: string, fallback: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name}=${raw}: want a count >= 1`)
  return value
}

export function benchConfig(): BenchConfig {
  const quick = process.env['BENCH_QUICK'] === '1'
  return {
    quick,
    floorSamples: count('BENCH_FLOOR_SAMPLES', quick ? 50 : 250),
    handovers: count('BENCH_HANDOVERS', quick ? 10 : 50),
    contention: quick
      ? { contenders: 10, limit: 3, holdMs: 50, acquisitions: 30 }
      : { contenders: 30, limit: 3, holdMs: 50, acquisitions: 150 },
    partitionTrials: count('BENCH_PARTITION_TRIALS', quick ? 1 : 3),
    scale: (quick
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
        ]
    ).map(([prefixes, perPrefix]) => ({
      prefixes: prefixes ?? 1,
      perPrefix: perPrefix ?? 1,
      limit: 10,
      // 10,000 contenders hand slots over slowly: a longer window, so that some releases fall in it.
      churnMs: quick ? 2000 : (perPrefix ?? 1) >= 10_000 ? 15_000 : 5000,
    })),
    replicas: quick
      ? { counts: [4, 8], clusterCounts: [], limit: 3, holdMs: 50, warmupMs: 1000, steadyMs: 4000 }
      : {
          counts: [12, 40],
          // 40 replicas on 5 agents saturate 2 cores (slots stood empty: at most 1 holder at
          // once, for the library and consul lock alike); on a bigger machine add 40.
          clusterCounts: [12],
          limit: 3,
          holdMs: 50,
          warmupMs: 3000,
          steadyMs: 12_000,
        },
    cli: process.env['BENCH_NO_CLI'] !== '1',
  }
}
