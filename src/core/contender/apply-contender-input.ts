import type { KVSnapshot } from '../../base/kv-snapshot.js'
import type { Decision } from '../events.js'
import type { ContenderInput } from './contender-input.js'
import type { ContenderState, ContenderStateOptions } from './contender-state-model.js'
import { decidePatiently } from './decide-patiently.js'
import { isPrefixProblem } from './is-prefix-problem.js'
import { leaseDeadline } from './lease-deadline.js'
import { unjudgedHolders } from '../semaphore/own-writes.js'
import { keepsSlot, withinQuantum } from '../semaphore/refencing.js'

/** What a tenure (one stretch of being listed in `.lock`) leaves behind when it ends. */
const tenureEnded = {
  listed: false,
  fencingToken: undefined,
  heldInTenure: false,
  casIndex: undefined,
  refencing: false,
  keepSlot: false,
  aheadOut: false,
  aheadToken: undefined,
} as const

/** After a renewal that did not commit: the next snapshot decides again, or this much later. */
export const RENEWAL_RETRY_MS = 100

/**
 * Updates the facts of a contender state from one input (session, lease, connection, listing,
 * decision), without yet deriving `holding`, `reason`, `write` or `wakeAt` (`settleContender`).
 *
 * @example
 * applyContenderInput(state, { type: 'session-gone' }, scheduler.now(), options)
 * @param s - The state before the input.
 * @param input - The input.
 * @param now - Scheduler time of the input.
 * @param options - The contender's options.
 * @returns The state with updated facts.
 */
export function applyContenderInput(
  s: ContenderState,
  input: ContenderInput,
  now: number,
  options: ContenderStateOptions,
): ContenderState {
  switch (input.type) {
    case 'snapshot': {
      // After a reset (agent restart, restore, a recursive delete of the prefix) the indexes of
      // before mean nothing: the snapshot is the truth from now on.
      if (input.reset === true) {
        return redecide(
          { ...s, connected: true, casIndex: undefined },
          input.snapshot,
          now,
          options,
          input.decision,
        )
      }
      if (!isOlderThanOwnCas(s, input.snapshot)) {
        return redecide({ ...s, connected: true }, input.snapshot, now, options, input.decision)
      }
      // Older than our own CAS (or the hand-off that listed us): it cannot vouch that we are
      // still listed, so it neither keeps nor reconnects us. But our own key was written before
      // that CAS, so a snapshot without it is evidence that the key is gone (deleted, or its
      // session ended), whatever its index says.
      const older = redecide(s, input.snapshot, now, options, input.decision)
      return older.decision?.type === 'NotContending' ? older : s
    }
    case 'disconnected':
      return {
        ...s,
        connected: false,
        graceFront: undefined,
        graceSince: undefined,
        patientAt: undefined,
      }
    case 'session-created': {
      const renewed = s.session === input.session
      const fresh: ContenderState = renewed
        ? s
        : {
            ...s,
            ...tenureEnded,
            session: input.session,
            retired: undefined,
            write: undefined,
            retryAt: undefined,
          }
      const leased = { ...fresh, leaseDeadline: leaseDeadline(input.sentAt, input.ttlMs, options) }
      return leased.snapshot === undefined
        ? leased
        : redecide(leased, leased.snapshot, now, options)
    }
    case 'session-renewed': {
      if (s.session === undefined || s.retired !== undefined) return s
      const lapsed = s.leaseDeadline === undefined || now >= s.leaseDeadline
      const leased = { ...s, leaseDeadline: leaseDeadline(input.sentAt, input.ttlMs, options) }
      // A late renewal revives a lapsed lease: decide again, the wait may have missed a slot.
      return lapsed && leased.snapshot !== undefined
        ? redecide(leased, leased.snapshot, now, options)
        : leased
    }
    case 'renewal-failed':
      return s
    case 'session-gone':
      return {
        ...s,
        ...tenureEnded,
        retired: s.retired ?? 'session-gone',
        write: undefined,
        retryAt: undefined,
      }
    case 'release-requested':
      return { ...s, ...tenureEnded, retired: 'released', write: undefined, retryAt: undefined }
    case 'cas-result':
      return casAnswered(s, input.ok, input.holders, input.modifyIndex)
    case 'refence':
      return refenceAsked(s, input.ahead === true, now, options)
    case 'refenced':
      return renewalAnswered(s, input, now)
    case 'retry':
      // The write is over, refused for a reason no snapshot will show: decide again later.
      return s.retired !== undefined
        ? s
        : { ...s, write: undefined, retryAt: now + Math.max(0, input.inMs) }
    case 'wake': {
      const retryDue = s.retryAt !== undefined && now >= s.retryAt
      const graceDue = s.patientAt !== undefined && now >= s.patientAt
      if (!retryDue && !graceDue) return s
      return s.snapshot !== undefined
        ? redecide(s, s.snapshot, now, options)
        : { ...s, retryAt: undefined }
    }
    case 'handed':
      // Its own key says a release handed it a slot, listing it in `.lock` at `index`: it holds
      // from there, with that index as its token (the one its key will show in a listing), and
      // snapshots older than the hand-off can no longer take the slot back.
      if (s.session !== input.session || s.retired !== undefined || s.listed) return s
      if (s.snapshot !== undefined && input.index <= s.snapshot.index) return s
      return { ...s, listed: true, casIndex: input.index, fencingToken: input.index }
    case 'written':
      // A write that completed without news (a contender key acquired: the next snapshot is to
      // show it) is over: a later decision that still asks for it makes it again (an operator
      // deleted the key meanwhile), even if it looks the same.
      return s.write === input.action ? { ...s, write: undefined } : s
  }
}

/**
 * A `refence` input. Only a holder's tenure is renewed; a contender that lost its slot meanwhile
 * just waits. Ahead (a job started, another waits), a Refence is written while the holder keeps
 * holding, once per job and only when the slot would be kept. At a job's end, a token written
 * ahead is taken at once when the slot is still kept; otherwise the holder stops holding until the
 * refence's answer (the one written ahead, if still out and still a Refence, is that answer).
 */
function refenceAsked(
  s: ContenderState,
  ahead: boolean,
  now: number,
  options: ContenderStateOptions,
): ContenderState {
  if (!s.listed || s.retired !== undefined || options.refence === undefined) return s
  const keepSlot = withinQuantum(s.slotSince, now, options.quantumMs)
  const kept =
    s.view !== undefined && s.session !== undefined && keepsSlot(s.view, s.session, keepSlot)
  if (ahead) {
    const idle = !s.refencing && !s.aheadOut && s.aheadToken === undefined
    return idle && s.holding && kept ? { ...s, aheadOut: true, keepSlot } : s
  }
  if (s.aheadToken !== undefined && kept) {
    return { ...s, fencingToken: s.aheadToken, aheadToken: undefined }
  }
  return { ...s, refencing: true, keepSlot, aheadToken: undefined }
}

function casAnswered(
  s: ContenderState,
  ok: boolean,
  holders: readonly string[],
  modifyIndex: bigint | undefined,
): ContenderState {
  // Whatever the answer, the write is over: wait for the snapshot it causes.
  const answered = { ...s, write: undefined }
  if (!ok || s.session === undefined || s.retired !== undefined) return answered
  if (!holders.includes(s.session)) return { ...answered, ...tenureEnded }
  if (s.listed && s.heldInTenure) return answered
  return {
    ...answered,
    listed: true,
    heldInTenure: false,
    casIndex: modifyIndex ?? s.casIndex,
    fencingToken: modifyIndex ?? s.fencingToken,
  }
}

function renewalAnswered(
  s: ContenderState,
  answer: Extract<ContenderInput, { type: 'refenced' }>,
  now: number,
): ContenderState {
  const answered = { ...s, write: undefined, aheadOut: false }
  if (s.retired !== undefined || (!s.refencing && !s.aheadOut)) return answered
  const index = answer.modifyIndex
  const fresh = index !== undefined && (s.fencingToken === undefined || index > s.fencingToken)
  if (!s.refencing) {
    // Written ahead: the next job's token, or nothing (the job's end refences as usual).
    const kept = answer.ok && fresh && answer.refencing === 'Refence'
    return kept ? { ...answered, aheadToken: index, casIndex: index } : answered
  }
  // Not committed (or no newer index to vouch for it): still refencing, decided again on the next
  // snapshot, which the change that refused it brings, or on this one a little later.
  if (!answer.ok || !fresh) return { ...answered, retryAt: now + RENEWAL_RETRY_MS }
  if (answer.refencing === 'Rotate') {
    // At the tail of the queue now: snapshots older than that write still list it as a holder.
    return { ...answered, ...tenureEnded, casIndex: index }
  }
  // A new tenure on the same slot: its token is the write's index, never the last job's.
  return {
    ...answered,
    refencing: false,
    keepSlot: false,
    heldInTenure: false,
    casIndex: index,
    fencingToken: index,
  }
}

function isOlderThanOwnCas(s: ContenderState, snapshot: KVSnapshot): boolean {
  return s.session !== undefined && s.casIndex !== undefined && snapshot.index < s.casIndex
}

function redecide(
  s: ContenderState,
  snapshot: KVSnapshot,
  now: number,
  options: ContenderStateOptions,
  given?: Decision,
): ContenderState {
  if (s.session === undefined) return { ...s, snapshot }
  // A decision is taken once: given again (the same snapshot delivered twice), it is made afresh,
  // so that the step tells a new decision from the one it already acted on.
  const { decision, graceFront, graceSince, patientAt } = decidePatiently(
    snapshot,
    s.session,
    now,
    s,
    options,
    given === s.decision ? undefined : given,
  )
  const decided: ContenderState = {
    ...s,
    snapshot,
    decision,
    view: decision.view ?? s.view,
    problem: isPrefixProblem(decision) ? decision : undefined,
    graceFront,
    graceSince,
    patientAt,
    // Any fresh decision supersedes a pending retry: it asks for the write now if still due.
    retryAt: undefined,
  }
  if (s.retired !== undefined) return decided
  if (decision.type !== 'Held') return { ...decided, ...tenureEnded }
  const token = s.fencingToken ?? tokenOfHolder(snapshot, s.session, decision)
  // Listed by a `.lock` newer than the listing under it: held, but by a write the process did not
  // make, whose index (the token) only the listing that shows it tells. Until then, not holding.
  if (token === undefined) return decided
  return { ...decided, listed: true, fencingToken: token }
}

/**
 * The fencing token of a contender first seen holding in `snapshot`: the index on its own key (a
 * hand-off, or its own CAS whose answer was lost) when there is one, otherwise `.lock`'s (a lock
 * the write of `.lock` itself gave, as the single-key lock's). Undefined when `.lock` is newer than
 * the keys beside it (an overlaid snapshot) and lists the contender since then: `.lock`'s index is
 * then the last write of it, maybe another contender's acquisition and token, not this one's.
 */
function tokenOfHolder(
  snapshot: KVSnapshot,
  session: string,
  decision: Extract<Decision, { type: 'Held' }>,
): bigint | undefined {
  if (decision.acquiredAt !== undefined) return decision.acquiredAt
  return unjudgedHolders(snapshot)?.has(session) === true ? undefined : decision.view.lockIndex
}
