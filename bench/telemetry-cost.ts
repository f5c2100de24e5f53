// Figure 5e, the CPU the telemetry costs: the scale figure's churn (bench/scale.ts) at 1,000
// contenders on one prefix, run with the contenders reporting nowhere (`telemetry: false`: the
// path of a process without @opentelemetry/api), to the API's no-op providers (the API installed,
// no SDK), to an SDK MeterProvider whose reader collects every second, and to that plus an SDK
// TracerProvider. The variants run in turns, round after round, so that a machine's drift falls on
// all of them alike. The CPU is the worker's user + system time during the churn window, per
// acquisition (each follows a release), pooled over the rounds (their CPU / their acquisitions).
// That comparison spreads by more than the few percent sought (the work in a window varies with
// the acquisitions in it, and the machine with its load), so each window is also profiled (V8's
// sampling profiler, 1 ms): the share of busy samples with telemetry code on the stack is the
// telemetry's own CPU in that very run.
import { measureScale, type ScaleResult } from './scale.js'
import type { ScaleSetup } from './config.js'
import { percentile } from './stats.js'

const median = (samples: readonly number[]): number => percentile(samples, 50)

export const TELEMETRY_VARIANTS = ['off', 'api', 'sdk', 'sdk-spans'] as const
export type TelemetryVariant = (typeof TELEMETRY_VARIANTS)[number]

export interface TelemetryCostVariant {
  readonly variant: TelemetryVariant
  /** CPU ms per release of each round, in the order the rounds ran. */
  readonly cpuMsPerRelease: readonly number[]
  readonly medianCpuMsPerRelease: number
  /** CPU of all its rounds' windows / all their acquisitions: the figure compared. */
  readonly pooledCpuMsPerRelease: number
  /** Acquisitions of each round's window. */
  readonly acquisitions: readonly number[]
  /** Pooled CPU per release over the `off` variant's, minus 1 (0.02: 2 % more). */
  readonly overOff: number
  /**
   * The share of the window's busy CPU profile samples that had telemetry code on the stack
   * (itself or what it called), pooled over the rounds: the telemetry's own cost, measured inside
   * the same runs, free of the run-to-run spread of `overOff`.
   */
  readonly profileShare: number
  readonly profileSamples: number
}

export interface TelemetryCostResult {
  readonly contenders: number
  readonly limit: number
  readonly churnMs: number
  readonly rounds: number
  readonly variants: readonly TelemetryCostVariant[]
}

export interface TelemetryCostConfig {
  readonly contenders: number
  readonly limit: number
  readonly churnMs: number
  readonly rounds: number
}

export async function measureTelemetryCost(
  addr: string,
  config: TelemetryCostConfig,
  log: (line: string) => void = () => undefined,
): Promise<TelemetryCostResult> {
  const setup: ScaleSetup = {
    prefixes: 1,
    perPrefix: config.contenders,
    limit: config.limit,
    churnMs: config.churnMs,
    heapSnapshots: false,
  }
  const runs = new Map<TelemetryVariant, ScaleResult[]>(TELEMETRY_VARIANTS.map((v) => [v, []]))
  for (let round = 0; round < config.rounds; round++) {
    // Each round starts with another variant, so that none always runs first or last.
    const order = TELEMETRY_VARIANTS.map(
      (_, i) => TELEMETRY_VARIANTS[(i + round) % TELEMETRY_VARIANTS.length] as TelemetryVariant,
    )
    for (const variant of order) {
      const run = await measureScale(addr, setup, {
        BENCH_TELEMETRY: variant,
        BENCH_PROFILE_TELEMETRY: '1',
      })
      const profile = run.telemetryProfile
      const share = profile ? (100 * profile.telemetrySamples) / profile.busySamples : Number.NaN
      log(
        `telemetry: round ${round + 1}/${config.rounds}, ${variant}: ${run.cpuMsPerRelease.toFixed(1)} ms CPU per release (${run.churnAcquisitions} acquisitions), telemetry ${share.toFixed(2)} % of ${profile?.busySamples ?? 0} profile samples`,
      )
      runs.get(variant)?.push(run)
    }
  }
  const medianOf = (variant: TelemetryVariant): number =>
    median((runs.get(variant) ?? []).map((r) => r.cpuMsPerRelease))
  // Rounds with few acquisitions weigh each one with more background (renewals, refreshes):
  // pooling the windows gives each acquisition the same weight.
  const pooledOf = (variant: TelemetryVariant): number => {
    const done = runs.get(variant) ?? []
    const cpuMs = done.reduce((sum, r) => sum + r.cpuMsPerRelease * r.churnAcquisitions, 0)
    return cpuMs / done.reduce((sum, r) => sum + r.churnAcquisitions, 0)
  }
  const off = pooledOf('off')
  return {
    contenders: config.contenders,
    limit: config.limit,
    churnMs: config.churnMs,
    rounds: config.rounds,
    variants: TELEMETRY_VARIANTS.map((variant) => {
      const done = runs.get(variant) ?? []
      return {
        variant,
        cpuMsPerRelease: done.map((r) => r.cpuMsPerRelease),
        medianCpuMsPerRelease: medianOf(variant),
        pooledCpuMsPerRelease: pooledOf(variant),
        acquisitions: done.map((r) => r.churnAcquisitions),
        overOff: pooledOf(variant) / off - 1,
        profileShare:
          done.reduce((n, r) => n + (r.telemetryProfile?.telemetrySamples ?? 0), 0) /
          done.reduce((n, r) => n + (r.telemetryProfile?.busySamples ?? 0), 0),
        profileSamples: done.reduce((n, r) => n + (r.telemetryProfile?.busySamples ?? 0), 0),
      }
    }),
  }
}
