import type { KVEntry } from '../../base/kv-snapshot.js'
import type { TxnOp } from '../../base/txn.js'
import { CONTENDER_FLAGS, HOLDER_FLAGS, RENEWING_FLAGS, SEMAPHORE_FLAGS } from '../../base/flags.js'
import { lockKey } from '../keys/lock-key.js'
import type { HandOff } from '../semaphore/hand-off.js'
import type { Refencing } from '../semaphore/refencing.js'

/**
 * The plain release transaction: `.lock` without this session, CASed on the ModifyIndex it was
 * computed from, and this contender's key deleted, in one write.
 *
 * @example
 * ```ts
 * const ops = casOutOps('svc/lock', 'svc/lock/me', { body, cas: 40n })
 * ```
 * @param prefix - The semaphore prefix.
 * @param ownKey - This contender's key.
 * @param write - The new `.lock` body and the index `.lock` must still have.
 * @returns The transaction's operations.
 */
export function casOutOps(
  prefix: string,
  ownKey: string,
  write: { readonly body: Uint8Array; readonly cas: bigint },
): TxnOp[] {
  return [
    {
      verb: 'cas',
      key: lockKey(prefix),
      value: write.body,
      flags: SEMAPHORE_FLAGS,
      index: write.cas,
    },
    { verb: 'delete', key: ownKey },
  ]
}

/**
 * The hand-off transaction: the heir still locks its key (op 0, so a rollback there means the heir
 * left), `.lock` moves from this holder to the heir, this holder's key goes, and the heir's key is
 * rewritten (same value, HOLDER_FLAGS; the write keeps its lock) so that the heir learns the
 * hand-off's index from its own key.
 *
 * @example
 * ```ts
 * const ops = handOffOps('svc/lock', 'svc/lock/me', handOff)
 * ```
 * @param prefix - The semaphore prefix.
 * @param ownKey - This holder's key.
 * @param handOff - The hand-off to write.
 * @returns The transaction's operations.
 */
export function handOffOps(prefix: string, ownKey: string, handOff: HandOff): TxnOp[] {
  const heirKey = handOff.heirEntry.key
  return [
    { verb: 'check-session', key: heirKey, session: handOff.heir },
    ...casOutOps(prefix, ownKey, handOff),
    { verb: 'set', key: heirKey, value: handOff.heirEntry.value, flags: HOLDER_FLAGS },
  ]
}

/** Index of the hand-off's heir check: a rollback naming it means the heir no longer waits. */
export const HEIR_CHECK_OP = 0

/**
 * The one transaction of a renewal between two jobs (`Refencing`), for the holder `session` whose
 * key is `ownKey` and holds `value`.
 *
 * - Refence: this session still locks its key; the key is rewritten (the lock stays; to
 *   RENEWING_FLAGS and back, so that Consul does not skip it), and `.lock` is read at the same
 *   index. The key's new ModifyIndex is the next job's fencing token if that `.lock` still lists
 *   this session at the limit decided on (`refenceKept`). `.lock` is read rather than checked at
 *   `cas`: another holder's hand-over changes its index without touching this slot.
 * - Rotate: the release (a hand-off to the first waiter, or a CAS of `.lock` without this session)
 *   deletes the key; it is locked again at once, so its CreateIndex puts it at the tail of the
 *   queue, still with this session (and `rejoinFlags`: the permits it asks for, `waitingFlags`).
 *
 * @example
 * ```ts
 * const ops = refenceOps(prefix, `${prefix}/${session}`, session, utf8.encode(value), write)
 * ```
 * @returns The operations, in order.
 */
export function refenceOps(
  prefix: string,
  ownKey: string,
  session: string,
  value: Uint8Array,
  write: Refencing,
  rejoinFlags: bigint = CONTENDER_FLAGS,
): TxnOp[] {
  if (write.type === 'Refence') {
    return [
      { verb: 'check-session', key: ownKey, session },
      ...rewriteKeyOps(ownKey, value, HOLDER_FLAGS),
      { verb: 'get', key: lockKey(prefix) },
    ]
  }
  const release =
    write.handOff === undefined
      ? casOutOps(prefix, ownKey, write)
      : handOffOps(prefix, ownKey, write.handOff)
  return [...release, { verb: 'lock', key: ownKey, value, flags: rejoinFlags, session }]
}

/**
 * A contender key written again as it is, at the index of the transaction it is part of: to
 * RENEWING_FLAGS and back to `flags` (Consul skips a write that changes nothing; the write keeps
 * the key's lock; the transaction is atomic, so nobody reads the flags in between). Its new
 * ModifyIndex wakes whoever long-polls the key: a renewal's next fencing token (`refenceOps`), a
 * holder asked to give its slot back, a waiter whose slot an eviction freed (`evict`). With
 * `index`, only while the key is still at that ModifyIndex.
 *
 * @example
 * ```ts
 * const ops = rewriteKeyOps('svc/lock/4ca8e74b-…', value, HOLDER_FLAGS, 812n)
 * ```
 * @param key - The contender key.
 * @param value - Its value, as it is.
 * @param flags - Its flags, as they are: HOLDER_FLAGS or CONTENDER_FLAGS.
 * @param index - The ModifyIndex it must still have, if any.
 * @returns The two operations, in order.
 */
export function rewriteKeyOps(
  key: string,
  value: Uint8Array | null,
  flags: bigint,
  index?: bigint,
): TxnOp[] {
  return [
    index === undefined
      ? { verb: 'set', key, value, flags: RENEWING_FLAGS }
      : { verb: 'cas', key, value, flags: RENEWING_FLAGS, index },
    { verb: 'set', key, value, flags },
  ]
}

/**
 * Waiters' keys written again as they are (`rewriteKeyOps`, CONTENDER_FLAGS, each only while at
 * the ModifyIndex it was listed at): added to an operator's write that frees slots for them, so
 * that a waiter long-polling only its own key wakes and takes its slot (`evict`, `setLimit`).
 *
 * @example
 * ```ts
 * const ops = [casOfLock, ...wakeOps(waitersToWake(listing, prefix, 5).slice(0, 31))]
 * ```
 * @param waiters - The waiters' entries, as listed.
 * @returns Two operations per waiter, in order.
 */
export function wakeOps(waiters: readonly KVEntry[]): TxnOp[] {
  return waiters.flatMap((e) => rewriteKeyOps(e.key, e.value, CONTENDER_FLAGS, e.modifyIndex))
}
