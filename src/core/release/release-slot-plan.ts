import * as E from 'fp-ts/lib/Either.js'
import { BACKOFF, backoffDelay } from '../../base/backoff.js'
import type { ConsulError } from '../../base/consul-error.js'
import type { KVEntry, KVSnapshot } from '../../base/kv-snapshot.js'
import type { PrefixProblem } from '../events.js'
import { contenderKey } from '../keys/contender-key.js'
import { lockKey } from '../keys/lock-key.js'
import { releaseFromLockBody, type ReleaseDecision } from '../lock-body/release-from-lock-body.js'
import { handOffAgain, handOffSlot, type HandOff } from '../semaphore/hand-off.js'
import type { PrefixView } from '../semaphore/prefix-view.js'
import {
  answerValue,
  firstTry,
  releaseStep,
  type CallInFlight,
  type DestroyPhase,
  type ReleaseAnswer,
  type ReleaseCall,
  type ReleasePlan,
  type ReleasePlanStep,
} from './release-call.js'
import { HEIR_CHECK_OP, casOutOps, handOffOps } from './release-ops.js'

/** What a semaphore release starts from. */
export interface ReleaseInput {
  readonly prefix: string
  readonly session: string
  /**
   * The other sessions of a holder of several permits: taken out of `.lock` in the same CAS as
   * `session` (their keys go when the caller destroys them). Such a holder hands no slot on.
   * Default none.
   */
  readonly companions?: readonly string[] | undefined
  readonly limit: number
  /** The holder takes the limit `.lock` states (see `PrefixViewOptions.followLimit`). */
  readonly followLimit?: boolean | undefined
  /** CAS writes of `.lock` (hand-offs and plain) before giving up on a churning `.lock`. Default 10. */
  readonly attempts?: number | undefined
  /**
   * The last snapshot this contender saw. When its `.lock` lists the session, the first CAS is
   * computed from it (no read first); one that does not list it is ignored, since it may predate
   * the contender's own CAS. A stale hint costs one lost CAS, never a wrong write.
   */
  readonly hint?: KVSnapshot | undefined
  /** The hint's view, when the caller's contenders decided on it (saves pruning and ranking). */
  readonly hintView?: E.Either<PrefixProblem, PrefixView> | undefined
  /**
   * List the whole prefix wherever `.lock` alone would be read, and decide on that listing as on a
   * hint: for a holder that long-polled only its own key and `.lock` (`watchTarget`), whose
   * waiters long-poll theirs and learn of a slot only when a release hands it to them. Its hint
   * (the last listing with the newest `.lock` it saw) may miss a waiter's departure or be a CAS
   * behind; then the heir check or the CAS fails, and the listing after it finds whoever is first
   * in line, instead of a plain release that no waiter would see. Default false.
   */
  readonly listReads?: boolean | undefined
  /**
   * Keep the session on a clean outcome (`HandedOff`, `Released`, `NotListed`: the key deleted
   * and `.lock` without it), for another contender of the process: the plan then ends without the
   * destroy, and its outcome says `sessionKept`. Any other outcome, or a failure, still destroys
   * it. Default false.
   */
  readonly keepSession?: boolean | undefined
  /**
   * The session is not the contender's own (`ContenderOptions.session`): the plan never destroys
   * it, whatever the outcome, and ends where the destroy would come (a clean outcome says
   * `sessionKept`). What a failed or given-up release leaves (the key, a place in `.lock`) stays
   * the session's until its owner destroys it. Default false.
   */
  readonly adopted?: boolean | undefined
  /**
   * Consul has ended the session (its key went with it): the plan gives back the slot `.lock`
   * still lists under it, handing it to the first waiter as any release does, and ends where the
   * destroy would come. Default false.
   */
  readonly sessionGone?: boolean | undefined
}

/**
 * How the slot went back (the session destroy follows each, unless `sessionKept`).
 *
 * @example
 * ```ts
 * const outcome: ReleaseOutcome = { type: 'HandedOff', heir: 'a1b2…' }
 * ```
 */
export type ReleaseOutcome =
  /** A hand-off committed: `.lock` names the heir in this session's place. */
  | { readonly type: 'HandedOff'; readonly heir: string; readonly sessionKept?: true }
  /** CASed out of `.lock`, with the contender key, in one transaction. */
  | { readonly type: 'Released'; readonly sessionKept?: true }
  /** `.lock` did not list the session once its key was gone: nothing to give back. */
  | { readonly type: 'NotListed'; readonly sessionKept?: true }
  /** `.lock` must not be written (conflict, limit conflict, corrupt): only the key went. */
  | { readonly type: 'KeyOnly'; readonly problem: PrefixProblem }
  /**
   * Every CAS lost: the session destroy frees the slot instead (Consul deletes the key with the
   * session, and every acquirer prunes the session from `.lock`).
   */
  | { readonly type: 'GaveUp' }

/** What the release is doing now; the call in flight is in `ReleaseState.inFlight`. */
type Phase = KvPhase | DestroyPhase<ReleaseOutcome>

/** The phases before the destroy: giving the slot back. */
type KvPhase =
  | { readonly type: 'HandOff'; readonly handOff: HandOff }
  | { readonly type: 'PauseForHandOff'; readonly handOff: HandOff }
  | { readonly type: 'ReadForHandOff'; readonly handOff: HandOff }
  | { readonly type: 'PauseForRead'; readonly cas: bigint }
  | { readonly type: 'Read' }
  | { readonly type: 'List' }
  | { readonly type: 'CasOut'; readonly cas: bigint }
  | { readonly type: 'DeleteKey'; readonly decision: Exclude<ReleaseDecision, WriteRelease> }

type WriteRelease = Extract<ReleaseDecision, { type: 'WriteRelease' }>

/** The release between two calls; hand it back to `releaseNext` with the answer. */
export interface ReleaseState {
  readonly prefix: string
  readonly session: string
  /** The holder's other sessions (`ReleaseInput.companions`). */
  readonly companions: readonly string[]
  readonly limit: number
  readonly followLimit: boolean | undefined
  readonly attempts: number
  /** Every read lists the prefix (`ReleaseInput.listReads`). */
  readonly listReads: boolean
  readonly phase: Phase
  readonly inFlight: CallInFlight
  /** CAS writes of `.lock` sent so far. */
  readonly casSent: number
  /** The contender key was deleted (by this release's own delete). */
  readonly keyGone: boolean
  /** Keep the session on a clean outcome (`ReleaseInput.keepSession`). */
  readonly keepSession: boolean
  /** Never destroy the session (`ReleaseInput.adopted`). */
  readonly adopted: boolean
  /** Nothing to destroy (`ReleaseInput.sessionGone`). */
  readonly sessionGone: boolean
}

/** What the release has done so far, besides the call in flight. */
type Progress = Omit<ReleaseState, 'phase' | 'inFlight'>

/** A step of the semaphore release: a call to make, or the result. */
export type ReleaseStep = ReleasePlanStep<ReleaseState, ReleaseOutcome>

/**
 * The first step of giving a semaphore slot back, as a pure plan that a driver runs
 * (`releaseNext` takes each answer). The order is the guides': CAS this session out of `.lock`
 * with the deletion of its key, then destroy the session.
 *
 * ```
 * hint lists us, ours first in line:  txn hand-off ─► destroy
 * hint lists us:                      txn cas-out ─► destroy
 * no usable hint:                     get .lock ─► txn cas-out ─► destroy
 * listReads:                          … as above, every read of .lock a listing of the prefix,
 *                                     and a hint that offers no heir listed first
 * not listed (a waiter):              get .lock ─► delete key ─► get .lock ─► destroy
 * CAS lost:                           … ─► wait 0-5 ms ─► get .lock ─► txn again (at most `attempts`)
 * CAS lost, a newer .lock known:      … ─► wait 0-5 ms ─► txn again from what the process knows
 * keepSession, a clean outcome:       … ─► done (no destroy; the outcome says `sessionKept`)
 * ```
 *
 * - Hand-off: when the hint lists the session and the first waiter runs this library, the
 *   transaction names that waiter in `.lock` instead (`handOffSlot`). A lost CAS is tried again,
 *   to the same heir, from `.lock` as read after it (`handOffAgain`); a heir that left (the check
 *   of its key rolled back) or was served meanwhile turns it into the plain release.
 * - A lost CAS after which the driver knows a newer `.lock` than the one it was built on (the
 *   answer of another write of the process, `ReleaseAnswer`'s `latest`) is decided again on that,
 *   as from a hint (a hand-off to whoever is first in line now), with no read.
 * - A waiter deletes its key before its last read of `.lock`: a hand-off can name it until the key
 *   is gone (its transaction checks the key), so a "not listed" read before the delete proves
 *   nothing.
 * - A `.lock` that must not be written (conflict, corrupt) only loses the key.
 * - Every Consul call is tried again after a transient failure (`triageAnswer`); a failure that
 *   stays ends the KV part, and the session is destroyed all the same.
 * - After `attempts` lost CAS writes the release gives up and destroys the session, which frees
 *   the slot too.
 *
 * @example
 * ```ts
 * let step = releaseStart({ prefix: 'svc/lock', session, limit: 3, hint })
 * while (step.type === 'call') step = releaseNext(step.state, await run(step.call))
 * if (E.isLeft(step.result)) console.error(step.result.left.message)
 * ```
 * @param input - Prefix, session, limit, and optionally the hint, its view and the CAS attempts.
 * @returns The first call to make.
 */
export function releaseStart(input: ReleaseInput): ReleaseStep {
  const { prefix, session, limit, followLimit } = input
  const state: Progress = {
    prefix,
    session,
    companions: input.companions ?? [],
    limit,
    followLimit,
    attempts: input.attempts ?? 10,
    casSent: 0,
    // Consul deleted the key of a session it ended.
    keyGone: input.sessionGone === true,
    keepSession: input.keepSession === true,
    adopted: input.adopted === true,
    sessionGone: input.sessionGone === true,
    listReads: input.listReads === true,
  }
  if (input.hint === undefined) return read(state)
  // A hint of `listReads` that offers no heir may only miss the waiters that joined since it was
  // listed: no plain release from it.
  const plain = !state.listReads
  return fromHint(state, input.hint, input.hintView, undefined, plain) ?? read(state)
}

/**
 * The write a snapshot that lists the session allows: a hand-off when ours is first in line, else
 * the plain release (unless not `plain`); undefined when it does not list the session (or newer
 * than `after`, the index a write that lost was built on), or `.lock` must not be written: then
 * `.lock` is read.
 */
function fromHint(
  state: Progress,
  hint: KVSnapshot,
  view: E.Either<PrefixProblem, PrefixView> | undefined,
  after?: bigint,
  plain = true,
): ReleaseStep | undefined {
  const newer = (cas: bigint): boolean => after === undefined || cas > after
  // A hand-off puts the heir in this session's place: a holder of several permits gives them all back.
  const offered = state.companions.length === 0 ? handOffSlot(hint, state, view) : undefined
  if (offered !== undefined) return newer(offered.cas) ? handOff(state, offered) : undefined
  if (!plain) return undefined
  const hinted = releaseFromLockBody(hint, state)
  return hinted.type === 'WriteRelease' && newer(hinted.cas) ? casOut(state, hinted) : undefined
}

/**
 * After a CAS built on `.lock` at `lost` lost (the pause after it ended) or was not sent (stale):
 * the write a newer `.lock` the driver knows allows, if any.
 */
function afterPause(state: Progress, answer: ReleaseAnswer, lost: bigint): ReleaseStep | undefined {
  // What the process knows is built on its last listing, older than the one this release lists.
  if (state.listReads) return undefined
  const latest = answer.type === 'wait' || answer.type === 'stale' ? answer.latest : undefined
  return latest && fromHint(state, latest.snapshot, latest.view, lost)
}

/** After a hand-off's CAS lost or was not sent: from a newer `.lock` known, or `.lock` as read. */
function afterHandOffLost(state: Progress, answer: ReleaseAnswer, handOff: HandOff): ReleaseStep {
  if (state.listReads) return read(state)
  return (
    afterPause(state, answer, handOff.cas) ??
    ask(state, { type: 'ReadForHandOff', handOff }, readCall(state))
  )
}

/**
 * The next step of a semaphore release, given the answer to the call of the previous one.
 *
 * @example
 * ```ts
 * const next = releaseNext(step.state, { type: 'get', result: E.right(entry), random: Math.random() })
 * ```
 * @param state - The state of the previous step.
 * @param answer - The answer to its call, with a random number for the jitter of a next wait.
 * @returns The next call, or the result.
 * @throws TypeError when the answer is not to the call asked (a driver's bug).
 */
export function releaseNext(state: ReleaseState, answer: ReleaseAnswer): ReleaseStep {
  return releaseStep(state, answer, releaseSlotPlan)
}

/** What a semaphore release does with each answer before its destroy (`releaseStep` does the rest). */
const releaseSlotPlan: ReleasePlan<ReleaseState, KvPhase, ReleaseOutcome> = { answered, destroy }

function answered(state: ReleaseState, phase: KvPhase, answer: ReleaseAnswer): ReleaseStep {
  switch (phase.type) {
    case 'HandOff': {
      if (answer.type === 'stale') return afterHandOffLost(state, answer, phase.handOff)
      const txn = answerValue(answer, 'txn')
      if (txn.committed)
        return destroy(state, E.right({ type: 'HandedOff', heir: phase.handOff.heir }))
      if (txn.errors.some((e) => e.opIndex === HEIR_CHECK_OP)) return read(state)
      return lostCas(state, answer.random, { type: 'PauseForHandOff', handOff: phase.handOff })
    }
    case 'PauseForHandOff':
      return afterHandOffLost(state, answer, phase.handOff)
    case 'ReadForHandOff': {
      const entry = answerValue(answer, 'get')
      const again = handOffAgain(entry ?? undefined, state, phase.handOff)
      // The read is as fresh as the plain release's would be: decide on it, no second read.
      return again !== undefined ? handOff(state, again) : decide(state, entry)
    }
    case 'PauseForRead':
      return afterPause(state, answer, phase.cas) ?? read(state)
    case 'Read':
      return decide(state, answerValue(answer, 'get'))
    case 'List': {
      const listing = answerValue(answer, 'list')
      const lock = lockKey(state.prefix)
      return (
        fromHint(state, listing, undefined) ??
        decide(state, listing.entries.find((entry) => entry.key === lock) ?? null)
      )
    }
    case 'CasOut': {
      if (answer.type === 'stale') return afterPause(state, answer, phase.cas) ?? read(state)
      const txn = answerValue(answer, 'txn')
      if (txn.committed) return destroy(state, E.right({ type: 'Released' }))
      return lostCas(state, answer.random, { type: 'PauseForRead', cas: phase.cas })
    }
    case 'DeleteKey': {
      const gone = { ...state, keyGone: true }
      if (phase.decision.type === 'NotListed') return read(gone)
      return destroy(gone, E.right({ type: 'KeyOnly', problem: phase.decision }))
    }
  }
}

/** What to do with `.lock` as read (null: missing). */
function decide(state: Progress, entry: KVEntry | null): ReleaseStep {
  const snapshot = { index: entry?.modifyIndex ?? 0n, entries: entry === null ? [] : [entry] }
  const decision = releaseFromLockBody(snapshot, state)
  if (decision.type === 'WriteRelease') return casOut(state, decision)
  // Not listed once the key was gone: no hand-off can name this session any more.
  if (state.keyGone) {
    const outcome: ReleaseOutcome =
      decision.type === 'NotListed' ? { type: 'NotListed' } : { type: 'KeyOnly', problem: decision }
    return destroy(state, E.right(outcome))
  }
  const key = contenderKey(state.prefix, state.session)
  return ask(state, { type: 'DeleteKey', decision }, { type: 'delete', key })
}

function handOff(state: Progress, offered: HandOff): ReleaseStep {
  const ops = handOffOps(state.prefix, contenderKey(state.prefix, state.session), offered)
  return sendCas(state, { type: 'HandOff', handOff: offered }, { type: 'txn', ops })
}

function casOut(state: Progress, write: WriteRelease): ReleaseStep {
  const ops = casOutOps(state.prefix, contenderKey(state.prefix, state.session), write)
  return sendCas(state, { type: 'CasOut', cas: write.cas }, { type: 'txn', ops })
}

/** Sends a CAS of `.lock`, unless the attempts are used up: then the destroy frees the slot. */
function sendCas(state: Progress, phase: Phase, call: ReleaseCall): ReleaseStep {
  if (state.casSent >= state.attempts) return destroy(state, E.right({ type: 'GaveUp' }))
  return ask({ ...state, casSent: state.casSent + 1 }, phase, call)
}

/** After a lost CAS: a few jittered ms, so that writers stop colliding in step, then read again. */
function lostCas(state: Progress, random: number, pause: Phase): ReleaseStep {
  if (state.casSent >= state.attempts) return destroy(state, E.right({ type: 'GaveUp' }))
  const ms = backoffDelay(BACKOFF.releaseCas, state.casSent, { random: () => random })
  return ask(state, pause, { type: 'wait', ms })
}

function read(state: Progress): ReleaseStep {
  if (state.listReads) return ask(state, { type: 'List' }, { type: 'list', prefix: state.prefix })
  return ask(state, { type: 'Read' }, readCall(state))
}

/** Only `.lock` is read, not the prefix: with a thousand contenders that is a thousand entries. */
const readCall = (state: Progress): ReleaseCall => ({ type: 'get', key: lockKey(state.prefix) })

function destroy(state: Progress, settled: E.Either<ConsulError, ReleaseOutcome>): ReleaseStep {
  if (state.sessionGone) return { type: 'done', result: settled }
  const outcome = E.isRight(settled) ? settled.right : undefined
  // Clean: Consul holds nothing of the session but the session itself.
  if ((state.keepSession || state.adopted) && outcome !== undefined && CLEAN.has(outcome.type)) {
    return { type: 'done', result: E.right({ ...outcome, sessionKept: true }) }
  }
  if (state.adopted) return { type: 'done', result: settled }
  return ask(state, { type: 'Destroy', settled }, { type: 'destroy', session: state.session })
}

/** The outcomes after which the session may outlive the release (`ReleaseInput.keepSession`). */
const CLEAN: ReadonlySet<ReleaseOutcome['type']> = new Set(['HandedOff', 'Released', 'NotListed'])

function ask(state: Progress, phase: Phase, call: ReleaseCall): ReleaseStep {
  return { type: 'call', call, state: { ...state, phase, inFlight: firstTry(call) } }
}
