// How big each figure's run is. BENCH_QUICK=1 shrinks everything to a smoke run of about a
// minute; single counts can be overridden (BENCH_HANDOVERS, BENCH_FLOOR_SAMPLES,
// BENCH_PARTITION_TRIALS) so that a quiet machine can buy tighter percentiles with more time.

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
  readonly scale: {
    readonly prefixes: number
    readonly perPrefix: number
    readonly limit: number
    readonly churnMs: number
  }
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
    scale: quick
      ? { prefixes: 10, perPrefix: 20, limit: 10, churnMs: 2000 }
      : { prefixes: 10, perPrefix: 100, limit: 10, churnMs: 5000 },
    cli: process.env['BENCH_NO_CLI'] !== '1',
  }
}
