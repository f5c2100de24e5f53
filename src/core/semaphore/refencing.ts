import type * as E from 'fp-ts/lib/Either.js'
import type { KVEntry, KVSnapshot } from '../../base/kv-snapshot.js'
import { decodeLockBody } from '../lock-body/decode-lock-body.js'
import type { PrefixProblem, SemaphoreView } from '../events.js'
import { releaseFromLockBody } from '../lock-body/release-from-lock-body.js'
import { handOffSlot, type HandOff, type HandOffOptions } from './hand-off.js'
import type { PrefixView } from './prefix-view.js'

/**
 * How long a job pool's worker keeps a slot while other contenders wait (ms, from when it took
 * the slot): a job of its process that ends within the quantum passes the slot to the process's
 * next job (one write), a job that ends after it hands the slot on. A fleet's slots then change
 * process about every quantum rather than after every job, so a hand-over between processes
 * (about six writes and a few milliseconds of idle slot) is paid once per quantum, not per job;
 * and the contenders of a prefix take turns on a slot within a few quanta, so that over a second
 * or two every process has its share. A process that arrives finds the slots held since longer
 * than the quantum and gets its first one as soon as a job of the others ends.
 */
export const SLOT_QUANTUM_MS = 200

/**
 * Whether a holder that took its slot at `slotSince` keeps it at `now` for the next job of its
 * process although others wait.
 *
 * @example
 * withinQuantum(1_000, 1_150, 200) // true: 150 ms on the slot
 * @param slotSince - When it took the slot (undefined: not known to hold one).
 * @param now - Now, on the same clock.
 * @param quantumMs - The quantum; default SLOT_QUANTUM_MS.
 * @returns True while within the quantum.
 */
export function withinQuantum(
  slotSince: number | undefined,
  now: number,
  quantumMs = SLOT_QUANTUM_MS,
): boolean {
  return slotSince !== undefined && now - slotSince < quantumMs
}

/**
 * The one write a holder makes between two jobs of its process, so that the next job runs under
 * a fencing token no earlier job ran under:
 *
 * - `Refence`: nobody else waits, or the holder is within its quantum on the slot
 *   (`SLOT_QUANTUM_MS`), so the holder keeps its slot. One transaction checks that this session
 *   still locks its key, rewrites the key (to RENEWING_FLAGS and back to HOLDER_FLAGS, since
 *   Consul skips a write that changes nothing) and reads `.lock` at the same index: the key's
 *   new ModifyIndex is the next token if that `.lock` still lists the holder (`refenceKept`).
 * - `Rotate`: someone else waits and the quantum is over (or the limit was lowered under the
 *   holders, whatever the quantum), so the holder gives
 *   its slot up as a release does (straight to the first waiter when `handOff` is set, else a CAS
 *   of `.lock` without it) and, in the same transaction, deletes and re-locks its own key, which
 *   puts it at the tail of the queue with the session it has.
 *
 * ```
 * holder, job ends ──► waiters other than itself, and the quantum over? ──no──► Refence (keep, new token)
 *                                 │ yes (or more holders than the limit)
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
      /** ModifyIndex of the `.lock` decided on (the write reads `.lock` anew: `refenceKept`). */
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
 * Whether a committed Refence kept the slot: the `.lock` it read at its own index still lists
 * `session`, at the limit the Refence was decided on. Otherwise (pruned or evicted meanwhile, the
 * limit changed, `.lock` gone or unreadable) its index is no token, and the next snapshot decides.
 *
 * @example
 * refenceKept(write, 'me', results.find((e) => e.key === lockKey(prefix)))
 * @param write - The Refence that committed.
 * @param session - The holder's session.
 * @param lock - `.lock` as the transaction read it, if it exists.
 * @returns True when the slot is still the holder's.
 */
export function refenceKept(
  write: Extract<Refencing, { readonly type: 'Refence' }>,
  session: string,
  lock: KVEntry | undefined,
  companions: readonly string[] = [],
): boolean {
  if (lock === undefined) return false
  const body = decodeLockBody(lock.value, lock.key)
  return (
    body._tag === 'Right' &&
    body.right !== undefined &&
    body.right.limit === write.view.limit &&
    body.right.holders.includes(session) &&
    companions.every((companion) => body.right?.holders.includes(companion) === true)
  )
}

/**
 * Whether a holder keeps its slot for the next job of its process in `view`: nobody else waits,
 * or it is within its quantum (`keepSlot`) unless the first in line is of a process that holds at
 * least two slots fewer than the holder's (its turn, `nextTurn`, is less than the slots of the
 * holder's process less one: a process that arrives, or a Go contender, gets its first slot when a
 * job of a process holding several ends, and its next ones while the others hold more, rather than
 * after a quantum each), or the first in line asks for several permits (a writer of a read-write
 * lock waits for every slot: a job that arrived after it does not start on a slot kept for it);
 * and the holders are not more than the limit (an operator may have lowered it).
 *
 * ```
 * A holds 3, B holds 1, B's next waiter first (turn 1): 1 < 3 - 1 ─► A's slot goes to B at its job's end
 * A holds 2, B holds 2, B's next waiter first (turn 2): 2 < 2 - 1 false ─► A keeps it for its quantum
 * ```
 *
 * @example
 * keepsSlot(view, session, withinQuantum(slotSince, now))
 * @param view - The prefix as last decided on.
 * @param session - The holder's session.
 * @param keepSlot - Within the holder's quantum on the slot.
 * @returns True to Refence, false to Rotate.
 */
export function keepsSlot(view: SemaphoreView, session: string, keepSlot: boolean): boolean {
  const othersWait = view.waiting.some((waiter) => waiter.session !== session)
  const head = view.waiting[0]
  const slots = view.sharedHolders.find((holder) => holder.session === session)?.slots ?? 1
  const yields =
    (view.nextTurn !== undefined && view.nextTurn < slots - 1) ||
    (head !== undefined && head.weight > 1)
  return (!othersWait || (keepSlot && !yields)) && view.liveHolders.length <= view.limit
}

/**
 * The renewal a holder makes on `snapshot`, which lists it as a holder.
 *
 * @example
 * ```ts
 * const next = refencing(snapshot, { prefix: 'service/db/lock', session, limit: 3 }, view, false)
 * if (next?.type === 'Refence') console.log(`keep the slot if .lock is still at ${next.cas}`)
 * ```
 * @param snapshot - The holder's last snapshot of the prefix.
 * @param options - Prefix, this holder's session and its limit.
 * @param shared - The snapshot's view for this limit (the one its decision was made on).
 * @param keepSlot - Within the holder's quantum on the slot: keep it even if others wait.
 * @returns The write to make, or undefined when the snapshot does not allow one (`.lock` no longer
 *   lists this session, or cannot be read): the next snapshot decides.
 */
export function refencing(
  snapshot: KVSnapshot,
  options: HandOffOptions & {
    /** The holder's other sessions (several permits): given back with it on a Rotate. */
    readonly companions?: readonly string[] | undefined
  },
  shared: E.Either<PrefixProblem, PrefixView>,
  keepSlot = false,
): Refencing | undefined {
  if (shared._tag === 'Left') return undefined
  const { view } = shared.right
  if (keepsSlot(view, options.session, keepSlot)) {
    return { type: 'Refence', view, cas: view.lockIndex }
  }
  // A holder of several permits hands none on alone: it gives them all back, and rejoins.
  const handOff =
    (options.companions?.length ?? 0) === 0 ? handOffSlot(snapshot, options, shared) : undefined
  if (handOff !== undefined)
    return { type: 'Rotate', view, body: handOff.body, cas: handOff.cas, handOff }
  const release = releaseFromLockBody(snapshot, options)
  return release.type === 'WriteRelease'
    ? { type: 'Rotate', view, body: release.body, cas: release.cas, handOff: undefined }
    : undefined
}
