/**
 * Problems with the prefix that no retry fixes: the library never writes over them.
 *
 * @example
 * ```ts
 * const decision = decide(snapshot, { prefix: 'service/db/lock', session, limit: 3 })
 * if (decision.type === 'LimitConflict') {
 *   console.error(`${decision.key}: limit ${decision.lockLimit}, ours ${decision.localLimit}`)
 * }
 * ```
 */
export type PrefixProblem =
  /** `.lock`'s body cannot be read (not UTF-8, not JSON, wrong field types). */
  | {
      /** Discriminant. */
      readonly type: 'CorruptLock'
      /** The `.lock` key. */
      readonly key: string
      /** What is wrong with the body, for people. */
      readonly reason: string
    }
  /** `.lock` carries the flags of another use (e.g. a `consul lock` lock, or a semaphore's). */
  | {
      /** Discriminant. */
      readonly type: 'Conflict'
      /** The `.lock` key. */
      readonly key: string
      /** The flags found on it, uint64 as an exact bigint. */
      readonly flags: bigint
    }
  /** `.lock` records another limit than this contender's. */
  | {
      /** Discriminant. */
      readonly type: 'LimitConflict'
      /** The `.lock` key. */
      readonly key: string
      /** The limit recorded in `.lock`. */
      readonly lockLimit: number
      /** This contender's limit. */
      readonly localLimit: number
    }
