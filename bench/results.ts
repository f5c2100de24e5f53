// The shape of one bench run's results, shared by the runner and the report.
import type { AnatomyRun } from './anatomy.js'
import type { ReplicasConfig } from './config.js'
import type { ContentionRun, ContentionSetup } from './contention.js'
import type { DecideRow } from './decide.js'
import type { DefaultClientResult } from './default-client.js'
import type { ExclusiveKeysResult } from './exclusive-keys.js'
import type { FloorResult } from './floor.js'
import type { HandoverRun } from './handover.js'
import type { ImportCostResult } from './import-cost.js'
import type { JobsFairRun, JobsFleetRun, JobsRun } from './jobs.js'
import type { PartitionTrial } from './partition.js'
import type { ReplicasRun } from './replicas.js'
import type { ScaleResult } from './scale.js'
import type { TelemetryCostResult } from './telemetry-cost.js'

/** A figure that was not measured, and why (never a made-up number). */
export interface NotMeasured {
  readonly implementation: string
  readonly limit?: number
  readonly notMeasured: string
}

/** A replicas run (figure 6) that was not measured, with the setup it would have had. */
export interface ReplicasNotMeasured extends NotMeasured {
  readonly topology: string
  readonly replicas: number
}

export interface PartitionRun {
  readonly implementation: string
  readonly ttl: string
  readonly trials: readonly PartitionTrial[]
}

export interface Machine {
  readonly cpu: string
  readonly cores: number
  readonly memoryGb: number
  readonly node: string
  readonly consul: string
  readonly os: string
  readonly date: string
  readonly loadAverage: readonly number[]
}

export interface BenchResults {
  readonly machine: Machine
  readonly quick: boolean
  /** BENCH_ONLY's steps, when only some ran; undefined for a full run. */
  readonly only: readonly string[] | undefined
  readonly durationS: number
  /** Median ms from spawning the built `rxsem run --help` to its exit. */
  readonly rxsemStartupMs: number | undefined
  /** The same for a bare `node -e 0`, measured in turns with it. */
  readonly nodeStartupMs: number | undefined
  /**
   * Median CPU and peak RSS of one uncontended acquisition's process (`rxsem run`, `consul lock
   * -n`) and of a bare node, from GNU time; undefined without it.
   */
  readonly processCost?: readonly {
    readonly implementation: string
    readonly cpuMs: number
    readonly rssMb: number
  }[]
  /** Table 3c; undefined in results written before it existed. */
  readonly importCost?: ImportCostResult | NotMeasured
  readonly floor: FloorResult | NotMeasured
  readonly handover: readonly (HandoverRun | NotMeasured)[]
  /** Table 2b, each CLI's handover split at the agent; undefined in results written before it existed. */
  readonly anatomy?: readonly (AnatomyRun | NotMeasured)[]
  readonly contention: readonly (ContentionRun | NotMeasured)[]
  readonly contentionSetup: {
    readonly contenders: number
    readonly limit: number
    readonly holdMs: number
    readonly acquisitions: number
  }
  /** Table 3d, the single-key lock under contention; undefined in results written before it existed. */
  readonly leaderContention?: readonly (ContentionRun | NotMeasured)[]
  readonly leaderContentionSetup?: ContentionSetup
  readonly partition: readonly (PartitionRun | NotMeasured)[]
  readonly scale: readonly (ScaleResult | NotMeasured)[]
  readonly defaultClient: DefaultClientResult | NotMeasured
  readonly exclusiveKeys: ExclusiveKeysResult | NotMeasured
  /** Figure 5e; undefined in results written before it existed. */
  readonly telemetryCost?: TelemetryCostResult | NotMeasured
  readonly replicas: readonly (ReplicasRun | ReplicasNotMeasured)[]
  readonly replicasSetup: ReplicasConfig
  readonly decide: readonly DecideRow[]
  /** Figure 7, one run per size; undefined in results written before it existed. */
  readonly jobs?: readonly (JobsRun | JobsNotMeasured)[]
  /** Figure 7b; undefined in results written before it existed. */
  readonly jobsFair?: JobsFairRun | NotMeasured
  /** Figure 7c, one run per setup; undefined in results written before it existed. */
  readonly jobsFleet?: readonly (JobsFleetRun | JobsFleetNotMeasured)[]
}

/** A size of figure 7 that was not measured. */
export interface JobsNotMeasured extends NotMeasured {
  readonly jobs: number
  readonly v8Flags?: readonly string[] | undefined
  readonly floor?: boolean | undefined
}

/** A setup of figure 7c that was not measured. */
export interface JobsFleetNotMeasured extends NotMeasured {
  readonly processes: number
  readonly jobsPerProcess: number
  readonly holdMs: number
  readonly apart?: boolean | undefined
}

export function measured<T extends object>(x: T | NotMeasured): x is T {
  return !('notMeasured' in x)
}
