import type { LockShape } from './events.js'

/** The decoded body of `<prefix>/.lock`: the slot limit, the listed holders and the shape read. */
export interface LockRecord {
  readonly limit: number
  /** Listed holders in listed order, each once (map shapes: the map's key order). */
  readonly holders: readonly string[]
  /** The shape the body was read in, and is written back in. */
  readonly shape: LockShape
}
