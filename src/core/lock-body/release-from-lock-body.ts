import * as E from 'fp-ts/lib/Either.js'
import type { KVSnapshot } from '../../base/kv-snapshot.js'
import { encodeLockBody } from './encode-lock-body.js'
import type { PrefixProblem } from '../events.js'
import { lockKey } from '../keys/lock-key.js'
import { readLockBody } from './read-lock-body.js'

/**
 * What releasing a slot writes to `.lock`.
 *
 * @example
 * ```ts
 * const release: ReleaseDecision = releaseFromLockBody(snapshot, { prefix, session })
 * if (release.type === 'NotListed') console.log('nothing to give back')
 * ```
 */
export type ReleaseDecision =
  /** PUT `body` (the holders without this session, same shape) to `.lock` with `?cas=<cas>`. */
  | {
      /** Discriminant. */
      readonly type: 'WriteRelease'
      /** The new `.lock` body: the listed holders without this session, in the shape read. */
      readonly body: Uint8Array
      /** ModifyIndex `.lock` must still have (uint64 as bigint); a failed CAS means re-read. */
      readonly cas: bigint
    }
  /** `.lock` does not list this session (or does not exist): nothing to write. */
  | {
      /** Discriminant. */
      readonly type: 'NotListed'
    }
  /** `.lock` conflicts or is corrupt: never written over. */
  | PrefixProblem

/**
 * Decides the `.lock` write that releases this session's slot, like Go's `Semaphore.Release`:
 * remove only this session (other holders, even dead ones, are left to the next acquirer's
 * pruning), keep the shape, CAS on `.lock`'s ModifyIndex; retry from a fresh snapshot when the CAS
 * fails. Never writes over a conflicting or corrupt `.lock`.
 *
 * @example
 * ```ts
 * const prefix = 'service/db/lock'
 * const release = releaseFromLockBody(snapshot, { prefix, session })
 * if (release.type === 'WriteRelease') {
 *   const options = { cas: release.cas, flags: SEMAPHORE_FLAGS }
 *   await consul.kv.put(lockKey(prefix), release.body, options)()
 * }
 * ```
 * @param snapshot - The prefix snapshot (only `.lock` is read).
 * @param options - Prefix and session.
 * @returns The write to make, NotListed, or the problem that forbids writing.
 */
export function releaseFromLockBody(
  snapshot: KVSnapshot,
  options: {
    readonly prefix: string
    readonly session: string
    /** The other sessions of a holder of several permits, released with it. */
    readonly companions?: readonly string[] | undefined
  },
): ReleaseDecision {
  const key = lockKey(options.prefix)
  // Whatever limit `.lock` states now (an operator may have changed it), a holder may leave it.
  const lock = readLockBody(
    snapshot.entries.find((entry) => entry.key === key),
    key,
  )
  if (E.isLeft(lock)) return lock.left
  const { record, lockIndex } = lock.right
  if (record === undefined || !record.holders.includes(options.session)) {
    return { type: 'NotListed' }
  }
  const companions = options.companions ?? []
  const holders = record.holders.filter(
    (holder) => holder !== options.session && !companions.includes(holder),
  )
  return { type: 'WriteRelease', body: encodeLockBody({ ...record, holders }), cas: lockIndex }
}
