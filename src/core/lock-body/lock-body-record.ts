import type { LockBodyShape } from '../events.js'

/**
 * The decoded body of `<prefix>/.lock`: the slot limit, the listed holders and the shape read.
 *
 * @example
 * ```ts
 * const record: LockBodyRecord = { limit: 3, holders: ['4ca8e74b-…'], shape: 'go-map' }
 * const body = encodeLockBody(record) // {"Limit":3,"Holders":{"4ca8e74b-…":true}}
 * ```
 */
export interface LockBodyRecord {
  /** The slot limit the body records (`Limit`, or `limit` in the Java shape). */
  readonly limit: number
  /** Listed holders in listed order, each once (map shapes: the map's key order). */
  readonly holders: readonly string[]
  /** The shape the body was read in, and is written back in. */
  readonly shape: LockBodyShape
}
