import type * as E from 'fp-ts/lib/Either.js'
import type { KVSnapshot } from '../../base/kv-snapshot.js'
import type { PrefixProblem, SemaphoreView } from '../events.js'
import { releaseFromLockBody } from '../lock-body/release-from-lock-body.js'
import { handOffSlot, type HandOff, type HandOffOptions } from './hand-off.js'
import type { PrefixView } from './prefix-view.js'

/**
 * The one write a holder makes between two jobs of its process, so that the next job runs under
 * a fencing token no earlier job ran under:
 *
 * - `Refence`: nobody else waits, so the holder keeps its slot. One transaction checks that
 *   `.lock` is still at `cas` and that this session still locks its key, and rewrites the key
 *   (to RENEWING_FLAGS and back to HOLDER_FLAGS, since Consul skips a write that changes
 *   nothing): the key's new ModifyIndex is the next token.
 * - `Rotate`: someone else waits (or the limit was lowered under the holders), so the holder gives
 *   its slot up as a release does (straight to the first waiter when `handOff` is set, else a CAS
 *   of `.lock` without it) and, in the same transaction, deletes and re-locks its own key, which
 *   puts it at the tail of the queue with the session it has.
 *
 * ```
 * holder, job ends ──► waiters other than itself? ──no──► Refence (keep the slot, new token)
 *                                 │ yes
 *                                 ▼
 *                      Rotate (hand off or release, rejoin at the tail)
 * ```
 */
export type Refencing =
  | {
      /** Discriminant. */
      readonly type: 'Refence'
      /** The prefix as decided on. */
      readonly view: SemaphoreView
      /** ModifyIndex `.lock` must still have. */
      readonly cas: bigint
    }
  | {
      /** Discriminant. */
      readonly type: 'Rotate'
      /** The prefix as decided on. */
      readonly view: SemaphoreView
      /** The `.lock` body without this session (with the heir, when handing off). */
      readonly body: Uint8Array
      /** ModifyIndex `.lock` must still have. */
      readonly cas: bigint
      /** The first waiter, handed the slot in the same write; undefined: a plain release. */
      readonly handOff: HandOff | undefined
    }

/**
 * The renewal a holder makes on `snapshot`, which lists it as a holder.
 *
 * @example
 * ```ts
 * const next = refencing(snapshot, { prefix: 'service/db/lock', session, limit: 3 })
 * if (next?.type === 'Refence') console.log(`keep the slot if .lock is still at ${next.cas}`)
 * ```
 * @param snapshot - The holder's last snapshot of the prefix.
 * @param options - Prefix, this holder's session and its limit.
 * @param shared - The snapshot's view for this limit (the one its decision was made on).
 * @returns The write to make, or undefined when the snapshot does not allow one (`.lock` no longer
 *   lists this session, or cannot be read): the next snapshot decides.
 */
export function refencing(
  snapshot: KVSnapshot,
  options: HandOffOptions,
  shared: E.Either<PrefixProblem, PrefixView>,
): Refencing | undefined {
  if (shared._tag === 'Left') return undefined
  const { view } = shared.right
  const othersWait = view.waiting.some((waiter) => waiter.session !== options.session)
  if (!othersWait && view.liveHolders.length <= view.limit) {
    return { type: 'Refence', view, cas: view.lockIndex }
  }
  const handOff = handOffSlot(snapshot, options, shared)
  if (handOff !== undefined)
    return { type: 'Rotate', view, body: handOff.body, cas: handOff.cas, handOff }
  const release = releaseFromLockBody(snapshot, options)
  return release.type === 'WriteRelease'
    ? { type: 'Rotate', view, body: release.body, cas: release.cas, handOff: undefined }
    : undefined
}
