import type { KVSnapshot } from '../../base/kv-snapshot.js'
import type { PrefixProblem } from '../events.js'
import { decide } from './decide.js'

/** One semaphore of an all-or-nothing contender: its prefix and its limit. */
export interface AllSlotsTarget {
  readonly prefix: string
  readonly limit: number
}

/** The write of one `.lock` in an all-or-nothing grant: its new body, at the index it must have. */
export interface LockWrite {
  readonly prefix: string
  readonly body: Uint8Array
  readonly cas: bigint
}

/**
 * What a contender for a slot of every one of several semaphores does next, from one snapshot of
 * each prefix (`decideAll`).
 *
 * - `Held`: every `.lock` lists its session, live: it holds a slot of each.
 * - `Unconfirmed`: it was granted its slots at an index that some listing has not reached yet: it
 *   holds them (the grant was one transaction), and that listing decides nothing.
 * - `Partial`: some list it and some do not (an operator took it out of one `.lock`, or one
 *   listing is older than the grant): it holds none of them, and gives back what it has.
 * - `Join`: its key is missing from these prefixes (not yet made, or deleted): make it.
 * - `TryAcquire`: it is first in line in every prefix and each has a free slot: write every
 *   `.lock` in one transaction.
 * - `Wait`: not first in line somewhere, or no free slot somewhere.
 * - `Problem`: a prefix that no contender may write (see `PrefixProblem`).
 */
export type AllDecision =
  | { readonly type: 'Held' }
  | { readonly type: 'Unconfirmed' }
  | { readonly type: 'Partial'; readonly listedIn: readonly string[] }
  | { readonly type: 'Join'; readonly prefixes: readonly string[] }
  | { readonly type: 'TryAcquire'; readonly writes: readonly LockWrite[] }
  | {
      readonly type: 'Wait'
      /** Its place in each prefix's queue (0: next), in the targets' order. */
      readonly ranks: readonly (number | undefined)[]
    }
  | { readonly type: 'Problem'; readonly prefix: string; readonly problem: PrefixProblem }

/**
 * Decides, for an all-or-nothing contender, on one snapshot of each of its prefixes (in the
 * targets' order): each prefix's semaphore decision (`decide`, as any contender of it would make
 * it), combined so that it never holds some slots while it waits for others. Its keys in every
 * prefix are made in one transaction, so they share one CreateIndex: two such contenders are in
 * the same order in every queue they share, and the one ahead in all of them is never waiting for
 * the other.
 *
 * @example
 * ```ts
 * const targets = [{ prefix: 'db/lock', limit: 2 }, { prefix: 'cache/lock', limit: 1 }]
 * const decision = decideAll([dbSnapshot, cacheSnapshot], targets, session)
 * if (decision.type === 'TryAcquire') await grantAll(decision.writes)
 * ```
 * @param snapshots - The last snapshot of each prefix, in the targets' order.
 * @param targets - The semaphores, in the order the caller listed them.
 * @param session - The contender's session.
 * @param grantedAt - The index of the transaction that granted its slots, while it holds them.
 * @returns The decision.
 */
export function decideAll(
  snapshots: readonly KVSnapshot[],
  targets: readonly AllSlotsTarget[],
  session: string,
  grantedAt?: bigint,
): AllDecision {
  if (grantedAt !== undefined && snapshots.some((snapshot) => snapshot.index < grantedAt)) {
    return { type: 'Unconfirmed' }
  }
  const decisions = targets.map((target, i) => {
    const snapshot = snapshots[i]
    if (snapshot === undefined) throw new RangeError(`no snapshot of ${target.prefix}`)
    return decide(snapshot, { prefix: target.prefix, limit: target.limit, session })
  })
  const listedIn: string[] = []
  const missing: string[] = []
  const writes: LockWrite[] = []
  const ranks: (number | undefined)[] = []
  decisions.forEach((decision, i) => {
    const prefix = targets[i]?.prefix ?? ''
    if (decision.type === 'Held') listedIn.push(prefix)
    else if (decision.type === 'NotContending') missing.push(prefix)
    else if (decision.type === 'TryAcquire') {
      writes.push({ prefix, body: decision.body, cas: decision.cas })
    }
    ranks.push(decision.type === 'Wait' || decision.type === 'TryAcquire' ? decision.rank : 0)
  })
  for (const [i, decision] of decisions.entries()) {
    if (decision.view === undefined) {
      return { type: 'Problem', prefix: targets[i]?.prefix ?? '', problem: decision }
    }
  }
  if (listedIn.length === targets.length) return { type: 'Held' }
  if (listedIn.length > 0) return { type: 'Partial', listedIn }
  if (missing.length > 0) return { type: 'Join', prefixes: missing }
  if (writes.length === targets.length) return { type: 'TryAcquire', writes }
  return { type: 'Wait', ranks }
}
