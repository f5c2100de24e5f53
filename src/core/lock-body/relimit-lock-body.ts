import * as E from 'fp-ts/lib/Either.js'
import type { KVEntry } from '../../base/kv-snapshot.js'
import type { PrefixProblem } from '../events.js'
import { encodeLockBody } from './encode-lock-body.js'
import { readLockBody, type ReadLockBody } from './read-lock-body.js'

/** The write that changes a semaphore's limit, and what it changes. */
export interface Relimit {
  /** The new `.lock` body: the same holders (dead ones too) and shape, with the new limit. */
  readonly body: Uint8Array
  /** ModifyIndex `.lock` must still have (0n: it must still not exist). */
  readonly cas: bigint
  /** The limit `.lock` stated before; undefined when there was no `.lock`. */
  readonly previous: number | undefined
  /** How many holders `.lock` lists (dead ones included: no listing here to prune them). */
  readonly holders: number
}

/**
 * The write that sets the limit of the semaphore whose `.lock` is `entry`, keeping its holders
 * and its shape (a `.lock` written by Go stays Go's), as a CAS on its ModifyIndex so that no
 * acquisition or release in between is lost. Without a `.lock`, one with no holders (Go's shape)
 * that contenders then find. A `.lock` it cannot read, or of another tool, is never written over.
 *
 * Holders are never removed: a lowered limit lets them finish, and contenders admit no one until
 * they are fewer than it (`decideInView`, `handOffSlot`).
 *
 * @example
 * ```ts
 * const write = relimitLockBody(entry, 'svc/jobs/.lock', 3)
 * if (E.isRight(write)) await client.kv.put(key, write.right.body, { cas: write.right.cas })()
 * ```
 * @param entry - `.lock` as read (undefined: missing).
 * @param key - The `.lock` key, named in problems.
 * @param limit - The new limit, a positive integer.
 * @returns The write, or the problem that forbids it.
 */
export function relimitLockBody(
  entry: KVEntry | undefined,
  key: string,
  limit: number,
): E.Either<PrefixProblem, Relimit> {
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new RangeError(`limit must be a positive integer, got ${limit}`)
  }
  return E.map(({ record, lockIndex }: ReadLockBody): Relimit => ({
    body: encodeLockBody({
      limit,
      holders: record?.holders ?? [],
      shape: record?.shape ?? 'go-map',
    }),
    cas: lockIndex,
    previous: record?.limit,
    holders: record?.holders.length ?? 0,
  }))(readLockBody(entry, key))
}
