// The shape of one bench run's results, shared by the runner and the report.
import type { ContentionRun } from './contention.js'
import type { DecideRow } from './decide.js'
import type { FloorResult } from './floor.js'
import type { HandoverRun } from './handover.js'
import type { PartitionTrial } from './partition.js'
import type { ScaleResult } from './scale.js'

/** A figure that was not measured, and why (never a made-up number). */
export interface NotMeasured {
  readonly implementation: string
  readonly limit?: number
  readonly notMeasured: string
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
  readonly durationS: number
  readonly rxsemStartupMs: number | undefined
  readonly floor: FloorResult | NotMeasured
  readonly handover: readonly (HandoverRun | NotMeasured)[]
  readonly contention: readonly (ContentionRun | NotMeasured)[]
  readonly contentionSetup: {
    readonly contenders: number
    readonly limit: number
    readonly holdMs: number
    readonly acquisitions: number
  }
  readonly partition: readonly (PartitionRun | NotMeasured)[]
  readonly scale: ScaleResult | NotMeasured
  readonly decide: readonly DecideRow[]
}

export function measured<T extends object>(x: T | NotMeasured): x is T {
  return !('notMeasured' in x)
}
