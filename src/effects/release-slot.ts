import * as E from 'fp-ts/lib/Either.js'
import { setTimeout as sleep } from 'node:timers/promises'
import type { ConsulClient } from '../consul/client-api.js'
import type { ConsulError } from '../consul/errors.js'
import type { KVSnapshot } from '../consul/types.js'
import { SEMAPHORE_FLAGS } from '../consul/flags.js'
import { contenderKey } from '../core/contender-key.js'
import { lockKey } from '../core/lock-key.js'
import { releaseLock, type ReleaseDecision } from '../core/release-lock.js'
import { withTransientRetries } from './call-policy.js'

export interface ReleaseSlotOptions {
  readonly client: ConsulClient
  readonly prefix: string
  readonly session: string
  readonly limit: number
  /** CAS attempts before giving up when other writers keep changing `.lock`. Default 10. */
  readonly attempts?: number
  /**
   * The last snapshot this contender saw, if any. When its `.lock` lists the session, the first
   * attempt CASes on that `.lock` at once instead of reading the prefix first: one round trip
   * less per handover. A stale hint only costs a failed CAS; the CAS on `.lock`'s ModifyIndex is
   * what makes the write safe, whatever snapshot it was computed from.
   */
  readonly hint?: KVSnapshot | undefined
}

/**
 * Gives a slot back and leaves Consul clean, in the order the guides give: CAS this session out of
 * `.lock` (in one transaction with the deletion of the contender key), then destroy the session.
 * A `.lock` that does not list the session (a waiter), or that this library must not write
 * (conflict, corrupt), only loses the contender key.
 *
 * Under heavy churn the CAS can lose again and again; attempts after the first wait a few
 * jittered milliseconds so that writers stop colliding in step. If every attempt loses, the
 * session is destroyed all the same, which is a complete release by other means: Consul deletes
 * the contender key with the session (behavior `delete`), so every acquirer (ours, and Go's
 * `pruneDeadHolders`) prunes the session from `.lock` in its next write.
 *
 * @example
 * const result = await releaseSlot({ client, prefix: 'svc/lock', session, limit: 3 })
 * if (E.isLeft(result)) console.error(result.left.message)
 * @returns Right when the session and its contender key are gone (and `.lock` no longer lists it,
 *   or lists a session every acquirer prunes); Left with the error that stopped it (the session
 *   is still destroyed when Consul lets it be; otherwise it expires by its TTL, and others prune
 *   it).
 */
export async function releaseSlot(
  options: ReleaseSlotOptions,
): Promise<E.Either<ConsulError, void>> {
  const { client, prefix, session, limit } = options
  const ownKey = contenderKey(prefix, session)
  let released = false
  let failed: ConsulError | undefined
  const read = async (): Promise<E.Either<ConsulError, ReleaseDecision>> =>
    E.map((snapshot: KVSnapshot) => releaseLock(snapshot, { prefix, session, limit }))(
      await withTransientRetries(client.kv.list(`${prefix}/`)),
    )
  // Only a hint that says "write" is used: one that says "not listed" may predate our own CAS.
  const hinted = options.hint && releaseLock(options.hint, { prefix, session, limit })
  let first = hinted?.type === 'WriteRelease' ? E.right(hinted) : undefined
  for (let attempt = 0; attempt < (options.attempts ?? 10) && !released; attempt++) {
    if (attempt > 0) await sleep(Math.random() * Math.min(50, 5 * 2 ** (attempt - 1)))
    const decided = first ?? (await read())
    first = undefined
    if (E.isLeft(decided)) {
      failed = decided.left
      break
    }
    const decision = decided.right
    if (decision.type === 'WriteRelease') {
      const txn = await withTransientRetries(
        client.kv.txn([
          {
            verb: 'cas',
            key: lockKey(prefix),
            value: decision.body,
            flags: SEMAPHORE_FLAGS,
            index: decision.cas,
          },
          { verb: 'delete', key: ownKey },
        ]),
      )
      if (E.isLeft(txn)) {
        failed = txn.left
        break
      }
      released = txn.right.committed
    } else {
      const deleted = await withTransientRetries(client.kv.delete(ownKey))
      if (E.isLeft(deleted)) {
        failed = deleted.left
        break
      }
      released = true
    }
  }
  // Destroy the session even when the KV cleanup failed: Consul then deletes the contender key
  // (behavior delete) and others prune the session from `.lock`, without waiting for the TTL.
  const destroyed = await withTransientRetries(client.session.destroy(session))
  if (failed !== undefined) return E.left(failed)
  // Released, or (every CAS lost) destroyed with its key: either way the slot is free.
  return E.isLeft(destroyed) ? destroyed : E.right(undefined)
}
