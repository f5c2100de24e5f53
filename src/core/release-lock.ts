import * as E from 'fp-ts/lib/Either.js'
import type { KVSnapshot } from '../consul/types.js'
import { encodeLock } from './encode-lock.js'
import type { PrefixProblem } from './events.js'
import { lockKey } from './lock-key.js'
import { readLock } from './read-lock.js'

/** What releasing a slot writes to `.lock`. */
export type ReleaseDecision =
  /** PUT `body` (the holders without this session, same shape) to `.lock` with `?cas=<cas>`. */
  | { readonly type: 'WriteRelease'; readonly body: Uint8Array; readonly cas: bigint }
  /** `.lock` does not list this session (or does not exist): nothing to write. */
  | { readonly type: 'NotListed' }
  | PrefixProblem

/**
 * Decides the `.lock` write that releases this session's slot, like Go's `Semaphore.Release`:
 * remove only this session (other holders, even dead ones, are left to the next acquirer's
 * pruning), keep the shape, CAS on `.lock`'s ModifyIndex; retry from a fresh snapshot when the CAS
 * fails. Never writes over a conflicting or corrupt `.lock`.
 *
 * @example
 * const release = releaseLock(snapshot, { prefix: 'svc/lock', session, limit: 2 })
 * if (release.type === 'WriteRelease') kv.put(lockKey(prefix), release.body, { cas: release.cas })
 * @param snapshot - The prefix snapshot (only `.lock` is read).
 * @param options - Prefix, session and limit.
 * @returns The write to make, NotListed, or the problem that forbids writing.
 */
export function releaseLock(
  snapshot: KVSnapshot,
  options: { readonly prefix: string; readonly session: string; readonly limit: number },
): ReleaseDecision {
  const key = lockKey(options.prefix)
  const lock = readLock(
    snapshot.entries.find((entry) => entry.key === key),
    key,
    options.limit,
  )
  if (E.isLeft(lock)) return lock.left
  const { record, lockIndex } = lock.right
  if (record === undefined || !record.holders.includes(options.session)) {
    return { type: 'NotListed' }
  }
  const holders = record.holders.filter((holder) => holder !== options.session)
  return { type: 'WriteRelease', body: encodeLock({ ...record, holders }), cas: lockIndex }
}
