import * as E from 'fp-ts/lib/Either.js'
import type { Decision, PrefixProblem, SemaphoreView } from '../events.js'
import { readRevokeRequest, type RevokeRequest } from '../revoke/revoke-request.js'
import { estimatedWaitMs } from './hand-overs.js'
import { encodeLockBody } from '../lock-body/encode-lock-body.js'
import type { PrefixView } from './prefix-view.js'

/**
 * What `decideInView` needs about the contender that decides.
 *
 * @example
 * ```ts
 * const contender: ContenderDecideOptions = { session, fairness: true }
 * const decision = decideInView(prefixView(snapshot, { prefix, limit: 3 }), contender)
 * ```
 */
export interface ContenderDecideOptions {
  /** This contender's session id. */
  readonly session: string
  /**
   * Rank waiters by arrival and let only the first of them try while a slot is free (default
   * true), so that a release wakes one CAS attempt rather than one per waiter. Two free slots are
   * filled one after the other: two waiters trying at once would CAS on the same ModifyIndex and
   * one of them would lose anyway. false: every waiter tries.
   */
  readonly fairness?: boolean | undefined
  /** Try whenever a slot is free, whatever the rank (set by the liveness guard after the grace). */
  readonly ignoreRank?: boolean | undefined
  /**
   * The other sessions of a contender of several permits (default none: one permit): it holds
   * only while `.lock` lists every one of them beside its own, and it takes them all in one write,
   * when as many slots are free.
   */
  readonly companions?: readonly string[] | undefined
}

/**
 * One contender's decision from the view its prefix shares: O(1) lookups (plus the new `.lock`
 * body for the one contender whose turn it is), so a snapshot costs a prefix of n contenders one
 * `prefixView` and n lookups rather than n full passes. See `decide` for the decisions.
 *
 * @example
 * ```ts
 * const shared = prefixView(snapshot, { prefix: 'service/db/lock', limit: 3 })
 * for (const session of mySessions) console.log(session, decideInView(shared, { session }).type)
 * ```
 * @param shared - The prefix's view of the snapshot, or its prefix problem.
 * @param options - The contender's session and fairness.
 * @param handOverMs - The interval between the prefix's recent hand-overs (`handOverIntervalMs`),
 *   when known: a ranked waiter's decision then carries its estimated wait.
 * @returns The decision.
 */
export function decideInView(
  shared: E.Either<PrefixProblem, PrefixView>,
  options: ContenderDecideOptions,
  handOverMs?: number,
): Decision {
  if (E.isLeft(shared)) return shared.left
  const { view, holders, contenders, ranks, acquired, revokes } = shared.right
  const { session } = options
  const companions = options.companions ?? NO_COMPANIONS
  if (holders.has(session)) {
    // Several permits are held only all together: one gone (its session pruned), none is.
    if (companions.every((companion) => holders.has(companion))) {
      const revoke = revokes.get(session)
      return heldDecision(view, acquired.get(session), revoke && readRevokeRequest(revoke))
    }
    return { type: 'Wait', view, rank: undefined, freeSlots: 0 }
  }
  // A `.lock` whose limit an operator changed keeps its holders (as Go's holders keep theirs); a
  // contender that does not follow the limit only refuses to join or take a slot.
  if (shared.right.limitConflict !== undefined) return shared.right.limitConflict
  if (!contenders.has(session)) return { type: 'NotContending', view }

  const freeSlots = Math.max(0, view.limit - view.liveHolders.length)
  const rank = ranks.get(session)
  const ranked = options.fairness !== false && options.ignoreRank !== true
  if (freeSlots > companions.length && (!ranked || rank === 0)) {
    const body = encodeLockBody({
      limit: view.limit,
      holders: [...view.liveHolders, session, ...companions],
      shape: view.shape ?? 'go-map',
    })
    return { type: 'TryAcquire', view, body, cas: view.lockIndex, rank }
  }
  return handOverMs === undefined || rank === undefined
    ? { type: 'Wait', view, rank, freeSlots }
    : { type: 'Wait', view, rank, freeSlots, estimatedWaitMs: estimatedWaitMs(rank, handOverMs) }
}

const NO_COMPANIONS: readonly string[] = []

/**
 * A `Held` decision, with only the fields that have a value (a holder's decision is made on every
 * snapshot: most carry no revoke request).
 *
 * @example
 * heldDecision(view, 812n, undefined) // { type: 'Held', view, acquiredAt: 812n }
 */
export function heldDecision(
  view: SemaphoreView,
  acquiredAt: bigint | undefined,
  revokeRequested: RevokeRequest | undefined,
): Decision {
  if (revokeRequested !== undefined) return { type: 'Held', view, acquiredAt, revokeRequested }
  return acquiredAt === undefined ? { type: 'Held', view } : { type: 'Held', view, acquiredAt }
}
