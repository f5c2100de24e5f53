import * as E from 'fp-ts/lib/Either.js'
import type { ConsulError } from '../../base/consul-error.js'
import { LOCK_FLAGS } from '../../base/flags.js'
import { lockKey } from '../keys/lock-key.js'
import { waiterKey } from '../keys/waiter-key.js'
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

/** What a single-key lock release starts from. */
export interface LeaderKeyReleaseInput {
  readonly prefix: string
  readonly session: string
  /** The value the lock was acquired with: `?release` rewrites the value, so send it again. */
  readonly value: string
  /**
   * The session is not the contender's own (`ContenderOptions.session`): after the `?release`,
   * the plan ends without destroying it. Default false.
   */
  readonly adopted?: boolean | undefined
  /**
   * The contender waited in line (`DecideLeaderKeyOptions.queued`): a release that did not hold the
   * key deletes its waiter key, `<prefix>/.queue/<session>`, before the destroy. Default false.
   */
  readonly queued?: boolean | undefined
}

/** Whether the key was this session's to give back (`?release` answered true). */
export type LeaderKeyReleaseOutcome = { readonly type: 'Released' } | { readonly type: 'NotHeld' }

/** The lock release between two calls. */
export interface LeaderKeyReleaseState {
  readonly session: string
  /** Never destroy the session (`LeaderKeyReleaseInput.adopted`). */
  readonly adopted?: boolean | undefined
  /** The waiter key to delete when the key was not held, if the contender waited in line. */
  readonly waiterKey?: string | undefined
  readonly phase: ReleasePhase | DestroyPhase<LeaderKeyReleaseOutcome>
  readonly inFlight: CallInFlight
}

/** The phases before the destroy: `?release` of the key, then, for a waiter, out of the line. */
type ReleasePhase = { readonly type: 'Release' } | { readonly type: 'Leave' }

/** A step of the lock release: a call to make, or the result. */
export type LeaderKeyReleaseStep = ReleasePlanStep<LeaderKeyReleaseState, LeaderKeyReleaseOutcome>

/**
 * The first step of giving the single-key lock back, as Go's `Lock.Unlock` does: `?release=` on
 * `<prefix>/.lock` with the same value and LOCK_FLAGS (Consul replaces value and flags on release,
 * so anything else would change what others read), then destroy the session, even when the
 * release failed (Consul then frees the key itself after the lock-delay, not after the TTL).
 *
 * ```
 * put ?release ─► destroy                     true: it held the key
 * put ?release ─► delete waiter key ─► destroy   false: it waited in line (queued)
 * ```
 *
 * (each call tried again after a transient failure.) A contender that held the key has no waiter
 * key: its acquisition deleted it in the same transaction. One that waited deletes its own, so
 * that the waiter behind it (asleep on that key) wakes at once and no dead key is left; the
 * `?release` comes first all the same, since an acquisition whose answer was lost to the close may
 * have made it the holder.
 *
 * The order matters for the handover: an explicit release sets no lock-delay, so a waiter can
 * acquire at once; destroying a session that still holds the key would invalidate it and make
 * Consul refuse the key to everyone for the lock-delay. The key stays, unheld, with this
 * contender's value: deleting it would race a waiter's acquisition.
 *
 * @example
 * ```ts
 * let step = leaderKeyReleaseStart({ prefix: 'svc/leader', session, value: 'node-a' })
 * while (step.type === 'call') step = leaderKeyReleaseNext(step.state, await run(step.call))
 * ```
 * @param input - Prefix, session and the value the lock was taken with.
 * @returns The first call to make.
 */
export function leaderKeyReleaseStart(input: LeaderKeyReleaseInput): LeaderKeyReleaseStep {
  const call: ReleaseCall = {
    type: 'put',
    key: lockKey(input.prefix),
    value: input.value,
    release: input.session,
    flags: LOCK_FLAGS,
  }
  const state: LeaderKeyReleaseState = {
    session: input.session,
    adopted: input.adopted === true,
    waiterKey: input.queued === true ? waiterKey(input.prefix, input.session) : undefined,
    phase: { type: 'Release' },
    inFlight: firstTry(call),
  }
  return { type: 'call', call, state }
}

/**
 * The next step of a lock release, given the answer to the previous call.
 *
 * @example
 * ```ts
 * const next = leaderKeyReleaseNext(step.state, { type: 'put', result: E.right(true), random: 0.5 })
 * ```
 * @param state - The state of the previous step.
 * @param answer - The answer to its call.
 * @returns The next call, or the result.
 * @throws TypeError when the answer is not to the call asked (a driver's bug).
 */
export function leaderKeyReleaseNext(
  state: LeaderKeyReleaseState,
  answer: ReleaseAnswer,
): LeaderKeyReleaseStep {
  return releaseStep(state, answer, leaderKeyReleasePlan)
}

/**
 * The `?release` answered: destroy the session, or, when it did not hold the key and waited in
 * line, delete its waiter key first (`releaseStep` does the rest).
 */
const leaderKeyReleasePlan: ReleasePlan<
  LeaderKeyReleaseState,
  ReleasePhase,
  LeaderKeyReleaseOutcome
> = {
  answered: (state, phase, answer) => {
    if (phase.type === 'Leave') return destroy(state, E.right({ type: 'NotHeld' }))
    if (answerValue(answer, 'put')) return destroy(state, E.right({ type: 'Released' }))
    if (state.waiterKey === undefined) return destroy(state, E.right({ type: 'NotHeld' }))
    const call: ReleaseCall = { type: 'delete', key: state.waiterKey }
    return {
      type: 'call',
      call,
      state: { ...state, phase: { type: 'Leave' }, inFlight: firstTry(call) },
    }
  },
  destroy,
}

function destroy(
  state: LeaderKeyReleaseState,
  settled: E.Either<ConsulError, LeaderKeyReleaseOutcome>,
): LeaderKeyReleaseStep {
  if (state.adopted === true) return { type: 'done', result: settled }
  const call: ReleaseCall = { type: 'destroy', session: state.session }
  return {
    type: 'call',
    call,
    state: { ...state, phase: { type: 'Destroy', settled }, inFlight: firstTry(call) },
  }
}
