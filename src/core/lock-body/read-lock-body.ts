import * as E from 'fp-ts/lib/Either.js'
import { pipe } from 'fp-ts/lib/function.js'
import { SEMAPHORE_FLAGS } from '../../base/flags.js'
import type { KVEntry } from '../../base/kv-snapshot.js'
import { decodeLockBody } from './decode-lock-body.js'
import type { PrefixProblem } from '../events.js'
import type { LockBodyRecord } from './lock-body-record.js'

/** A `.lock` that passed every check: its record (undefined: none yet) and its ModifyIndex. */
export interface ReadLockBody {
  readonly record: LockBodyRecord | undefined
  /** ModifyIndex of `.lock`, 0n when the key does not exist: the `cas` of the next write. */
  readonly lockIndex: bigint
}

/**
 * Checks the `.lock` entry of a snapshot the way Go's `Semaphore.Acquire` does, in its order:
 * flags (0 or SEMAPHORE_FLAGS, anything else is another tool's key: Conflict), body (CorruptLock),
 * limit agreement (LimitConflict, only when `localLimit` is given). A missing key or an empty value
 * means no holders yet.
 *
 * @example
 * readLockBody(undefined, 'svc/.lock', 3) // right({ record: undefined, lockIndex: 0n })
 * @param entry - The `.lock` entry of the snapshot, if any.
 * @param key - The `.lock` key, named in problems.
 * @param localLimit - This contender's limit; omitted, any limit `.lock` states is accepted (a
 *   release, a contender that follows the limit, an operator changing it).
 * @returns The usable lock, or the problem that forbids any write.
 */
export function readLockBody(
  entry: KVEntry | undefined,
  key: string,
  localLimit?: number,
): E.Either<PrefixProblem, ReadLockBody> {
  if (entry === undefined) return E.right({ record: undefined, lockIndex: 0n })
  // Flags 0: a `.lock` written by a client that sets none (the guides' curl, the Java post).
  if (entry.flags !== 0n && entry.flags !== SEMAPHORE_FLAGS) {
    return E.left({ type: 'Conflict', key, flags: entry.flags })
  }
  return pipe(
    decodeLockBody(entry.value, key),
    E.flatMap((record): E.Either<PrefixProblem, ReadLockBody> =>
      record !== undefined && localLimit !== undefined && record.limit !== localLimit
        ? E.left({ type: 'LimitConflict', key, lockLimit: record.limit, localLimit })
        : E.right({ record, lockIndex: entry.modifyIndex }),
    ),
  )
}
