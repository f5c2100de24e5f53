/**
 * The vocabulary of the release plans (`releaseStart`/`releaseNext` for a semaphore slot,
 * `leaderKeyReleaseStart`/`leaderKeyReleaseNext` for the single-key lock): the Consul calls a plan asks for,
 * the answers a driver feeds back, and the retry of a call after a transient failure, which every
 * plan shares. Pure: the jitter of a wait comes in with the answer that led to it (`random`).
 *
 * ```
 * releaseStart(input) ──► { call, state } ──► driver runs call ──► releaseNext(state, answer) ──► …
 *                                                                 until { type: 'done', result }
 * ```
 */
import * as E from 'fp-ts/lib/Either.js'
import type { TxnOp, TxnResult } from '../../base/txn.js'
import type { ConsulError } from '../../base/consul-error.js'
import type { KVEntry, KVSnapshot } from '../../base/kv-snapshot.js'
import type { PrefixProblem } from '../events.js'
import type { PrefixView } from '../semaphore/prefix-view.js'
import { BACKOFF, backoffDelay } from '../../base/backoff.js'
import { isTransient } from '../../base/failure-kinds.js'

/**
 * One thing a release plan asks its driver to do: a Consul call, or a wait on the scheduler.
 *
 * @example
 * ```ts
 * const call: ReleaseCall = { type: 'get', key: 'svc/lock/.lock' }
 * ```
 */
export type ReleaseCall =
  /** `PUT /v1/txn` with these operations. */
  | { readonly type: 'txn'; readonly ops: readonly TxnOp[] }
  /** `GET /v1/kv/<key>`: one key, null when missing. */
  | { readonly type: 'get'; readonly key: string }
  /** `GET /v1/kv/<prefix>/?recurse`: every key under the prefix. */
  | { readonly type: 'list'; readonly prefix: string }
  /** `PUT /v1/kv/<key>?release=<session>&flags=<flags>` with the value. */
  | {
      readonly type: 'put'
      readonly key: string
      readonly value: string
      readonly release: string
      readonly flags: bigint
    }
  /** `DELETE /v1/kv/<key>`, unconditional. */
  | { readonly type: 'delete'; readonly key: string }
  /** `PUT /v1/session/destroy/<session>`. */
  | { readonly type: 'destroy'; readonly session: string }
  /** Wait `ms` milliseconds on the driver's scheduler. */
  | { readonly type: 'wait'; readonly ms: number }

/**
 * The answer to a ReleaseCall, with a fresh random number in [0, 1) from the driver: the jitter of
 * any wait the plan decides on next.
 *
 * @example
 * ```ts
 * const answer: ReleaseAnswer = { type: 'get', result: E.right(null), random: Math.random() }
 * ```
 */
export type ReleaseAnswer =
  | {
      readonly type: 'txn'
      readonly result: E.Either<ConsulError, TxnResult>
      readonly random: number
    }
  | {
      readonly type: 'get'
      readonly result: E.Either<ConsulError, KVEntry | null>
      readonly random: number
    }
  | {
      readonly type: 'list'
      readonly result: E.Either<ConsulError, KVSnapshot>
      readonly random: number
    }
  | {
      readonly type: 'put'
      readonly result: E.Either<ConsulError, boolean>
      readonly random: number
    }
  | {
      readonly type: 'delete'
      readonly result: E.Either<ConsulError, boolean>
      readonly random: number
    }
  | {
      readonly type: 'destroy'
      readonly result: E.Either<ConsulError, boolean>
      readonly random: number
    }
  | {
      readonly type: 'wait'
      readonly random: number
      /**
       * The freshest prefix the process knows as the wait ends, when its driver knows one (a
       * semaphore release's: the watch's last listing overlaid with the process's own writes,
       * `freshestPrefix`), with its view when it has one. After a lost CAS, a release whose
       * process has learnt of a newer `.lock` meanwhile builds on it instead of reading `.lock`.
       */
      readonly latest?: LatestPrefix | undefined
    }
  /**
   * The answer to a `txn` that CASes `.lock` on an index older than the `.lock` the process knows
   * (its own writes answered meanwhile): the driver did not send it, since it could only lose, and
   * hands the freshest prefix to build on instead. It counts as a CAS attempt.
   */
  | { readonly type: 'stale'; readonly latest: LatestPrefix; readonly random: number }

/** A snapshot of the prefix that a driver hands a plan, and its view when it has one. */
export interface LatestPrefix {
  readonly snapshot: KVSnapshot
  readonly view?: E.Either<PrefixProblem, PrefixView> | undefined
}

/**
 * One step of a plan: the call to make and the state to hand back with its answer, or the end.
 *
 * @example
 * ```ts
 * let step = releaseStart(input)
 * while (step.type === 'call') step = releaseNext(step.state, await run(step.call))
 * ```
 */
export type PlanStep<S, R> =
  | { readonly type: 'call'; readonly call: ReleaseCall; readonly state: S }
  | { readonly type: 'done'; readonly result: R }

/**
 * Calls a release makes of each request, the first included, before it gives up on a transient
 * failure: 100, 200 and 400 ms apart (`BACKOFF.release`). One 500 or reset connection must not
 * leave the session to its TTL; a longer outage is left to the TTL, since close() awaits this.
 */
export const RELEASE_CALL_TRIES = 4

/** The call in flight, and the failed tries of the Consul call it is or waits to send again. */
export interface CallInFlight {
  /** What the driver is doing now. */
  readonly asked: ReleaseCall
  /** While `asked` is the wait before another try: the call to send again after it. */
  readonly resend: ReleaseCall | undefined
  /** Transient failures of this Consul call so far. */
  readonly failures: number
}

/** What an answer means for the call in flight. */
export type Triage<A extends ReleaseAnswer> =
  /** The call answered (a success, or the end of a wait the plan asked for). */
  | { readonly type: 'answered'; readonly answer: A }
  /** A transient failure to try again after a wait: this is the step to take. */
  | { readonly type: 'retry'; readonly call: ReleaseCall; readonly inFlight: CallInFlight }
  /** The call failed for good (permanent, or out of tries). */
  | { readonly type: 'failed'; readonly error: ConsulError }
  /** The wait before another try ended: send the call again. */
  | { readonly type: 'resend'; readonly call: ReleaseCall; readonly inFlight: CallInFlight }

/**
 * Sorts an answer out for the call in flight, the retry rule of every release call: a transient
 * failure is tried again after `BACKOFF.release`'s delay (a 429/503 at least its Retry-After, at
 * most 2 s), up to RELEASE_CALL_TRIES calls; any other failure, or the last, is final.
 *
 * @example
 * ```ts
 * const triage = triageAnswer(state.inFlight, answer)
 * if (triage.type === 'retry') return { type: 'call', call: triage.call, state: { ...state, inFlight: triage.inFlight } }
 * ```
 * @param inFlight - The call the answer is to.
 * @param answer - The driver's answer.
 * @returns What to do with it.
 * @throws TypeError when the answer is not to the call in flight (a driver's bug, not Consul's).
 */
export function triageAnswer(inFlight: CallInFlight, answer: ReleaseAnswer): Triage<ReleaseAnswer> {
  // A CAS not sent, since it could only lose: answered, as a rollback would be.
  if (answer.type === 'stale' && inFlight.asked.type === 'txn' && inFlight.resend === undefined) {
    return { type: 'answered', answer }
  }
  if (answer.type !== inFlight.asked.type) {
    throw new TypeError(
      `release plan: a '${answer.type}' answer to a '${inFlight.asked.type}' call`,
    )
  }
  if (inFlight.resend !== undefined) {
    const call = inFlight.resend
    return {
      type: 'resend',
      call,
      inFlight: { asked: call, resend: undefined, failures: inFlight.failures },
    }
  }
  if (answer.type === 'wait') return { type: 'answered', answer }
  const result: E.Either<ConsulError, unknown> = answer.result
  if (E.isRight(result)) return { type: 'answered', answer }
  const error = result.left
  const failures = inFlight.failures + 1
  if (!isTransient(error) || failures >= RELEASE_CALL_TRIES) return { type: 'failed', error }
  const wait: ReleaseCall = {
    type: 'wait',
    ms: backoffDelay(BACKOFF.release, failures, { error, random: () => answer.random }),
  }
  return { type: 'retry', call: wait, inFlight: { asked: wait, resend: inFlight.asked, failures } }
}

/**
 * The last phase of every release plan: the session destroy, with how the KV part before it went.
 *
 * @example
 * ```ts
 * const phase: DestroyPhase<LeaderKeyReleaseOutcome> = { type: 'Destroy', settled: E.right({ type: 'Released' }) }
 * ```
 */
export interface DestroyPhase<O> {
  readonly type: 'Destroy'
  /** The outcome (or first failure) of the KV part. */
  readonly settled: E.Either<ConsulError, O>
}

/** A phase of a release plan, told apart by `type`. */
type Phased = { readonly type: string }

/** The state of a release plan between two calls: its phase (P before the destroy), and the call in flight. */
export interface ReleasePlanState<P extends Phased, O> {
  readonly phase: P | DestroyPhase<O>
  readonly inFlight: CallInFlight
}

/** A step of a release plan whose KV part ends with an `O` (or a failure). */
export type ReleasePlanStep<S, O> = PlanStep<S, E.Either<ConsulError, O>>

/** What a release plan adds to `releaseStep`: its phases before the destroy (P). */
export interface ReleasePlan<S, P extends Phased, O> {
  /** The next step after a successful answer (or the end of a wait) in a phase before the destroy. */
  readonly answered: (state: S, phase: P, answer: ReleaseAnswer) => ReleasePlanStep<S, O>
  /** The step that destroys the session, the KV part ended as `settled`. */
  readonly destroy: (state: S, settled: E.Either<ConsulError, O>) => ReleasePlanStep<S, O>
}

/**
 * The next step of any release plan, the rule they all share: a transient failure is tried again
 * (`triageAnswer`); a failure that stays ends the KV part, and the session is destroyed all the
 * same; the destroy's answer ends the plan (`settle`: the KV part's failure first, then the
 * destroy's). The plan decides only what a success means in its phases before the destroy
 * (`plan.answered`).
 *
 * ```
 * transient failure:    wait ─► the same call again      (up to RELEASE_CALL_TRIES calls)
 * failure (KV part):    plan.destroy(state, failure)
 * failure (destroy):    done: settle(KV part, failure)
 * destroy answered:     done: settle(KV part, success)
 * any other answer:     plan.answered(state, phase, answer)
 * ```
 *
 * @example
 * ```ts
 * const leaderKeyReleaseNext = (state: LeaderKeyReleaseState, answer: ReleaseAnswer): LeaderKeyReleaseStep =>
 *   releaseStep(state, answer, leaderKeyReleasePlan)
 * ```
 * @param state - The plan's state after its previous step.
 * @param answer - The answer to that step's call.
 * @param plan - The plan's own phases.
 * @returns The next call, or the result.
 * @throws TypeError when the answer is not to the call asked (a driver's bug).
 */
export function releaseStep<S extends ReleasePlanState<P, O>, P extends Phased, O>(
  state: S,
  answer: ReleaseAnswer,
  plan: ReleasePlan<S, P, O>,
): ReleasePlanStep<S, O> {
  const triage = triageAnswer(state.inFlight, answer)
  const phase: P | DestroyPhase<O> = state.phase
  switch (triage.type) {
    case 'retry':
    case 'resend':
      return { type: 'call', call: triage.call, state: { ...state, inFlight: triage.inFlight } }
    case 'failed':
      return destroying(phase)
        ? { type: 'done', result: settle(phase.settled, E.left(triage.error)) }
        : plan.destroy(state, E.left(triage.error))
    case 'answered':
      return destroying(phase)
        ? { type: 'done', result: settle(phase.settled, E.right(answerValue(answer, 'destroy'))) }
        : plan.answered(state, phase, answer)
  }
}

function destroying<P extends Phased, O>(phase: P | DestroyPhase<O>): phase is DestroyPhase<O> {
  return phase.type === 'Destroy'
}

/**
 * The call in flight for a first try of `call`.
 *
 * @example
 * ```ts
 * const inFlight = firstTry({ type: 'destroy', session })
 * ```
 * @param call - The call about to be made.
 * @returns Its in-flight record, no failure yet.
 */
export function firstTry(call: ReleaseCall): CallInFlight {
  return { asked: call, resend: undefined, failures: 0 }
}

/**
 * The success value of an answer that `triageAnswer` said was answered, by the call's type.
 *
 * @example
 * ```ts
 * const entry: KVEntry | null = answerValue(answer, 'get')
 * ```
 * @param answer - An answered (not failed) answer.
 * @param type - The type of the call it answers.
 * @returns Its value.
 * @throws TypeError when the answer is of another type or a failure (a plan's bug).
 */
export function answerValue<T extends 'txn' | 'get' | 'list' | 'put' | 'delete' | 'destroy'>(
  answer: ReleaseAnswer,
  type: T,
): AnswerValue<T> {
  const result: E.Either<ConsulError, unknown> | undefined =
    answer.type === 'wait' || answer.type === 'stale' ? undefined : answer.result
  if (answer.type !== (type as string) || result === undefined || E.isLeft(result)) {
    throw new TypeError(`release plan: expected a '${type}' success, got a '${answer.type}' answer`)
  }
  return result.right as AnswerValue<T>
}

/** The success value of each call type's answer. */
export type AnswerValue<T extends ReleaseAnswer['type']> =
  Extract<ReleaseAnswer, { type: T }> extends {
    readonly result: E.Either<ConsulError, infer A>
  }
    ? A
    : never

/**
 * What a release answers once its session destroy answered: the first failure of the KV part if
 * there was one, else the destroy's failure, else what the KV part did. The destroy is made even
 * after a failure: Consul then cleans up the session's keys without waiting for its TTL.
 *
 * @example
 * ```ts
 * const result = settle(E.right({ type: 'Released' }), E.right(true)) // E.right({ type: 'Released' })
 * ```
 * @param settled - The outcome (or failure) of the KV part.
 * @param destroyed - The answer of the session destroy.
 * @returns The release's result.
 */
export function settle<O>(
  settled: E.Either<ConsulError, O>,
  destroyed: E.Either<ConsulError, unknown>,
): E.Either<ConsulError, O> {
  return E.isLeft(settled) || E.isRight(destroyed) ? settled : destroyed
}
