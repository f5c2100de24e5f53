import type { Observable, SchedulerLike } from 'rxjs'
import { EMPTY, asyncScheduler, expand, filter, lastValueFrom, map, of, timer } from 'rxjs'
import type { ConsulClient } from '../../consul/client-api.js'
import type { PlanStep, ReleaseAnswer, ReleaseCall } from '../../core/release/release-call.js'
import { fromCall } from '../call-policy.js'

/** What a release driver runs a plan's calls with. */
export interface ReleaseDriverOptions {
  readonly client: ConsulClient
  /** The scheduler of the plan's waits (retry backoff, the pause after a lost CAS); default async. */
  readonly scheduler?: SchedulerLike | undefined
  /** Source of the jitter handed to the plan with each answer, in [0, 1); default Math.random. */
  readonly random?: (() => number) | undefined
}

/**
 * Runs a release plan (`releaseStart`/`releaseNext`, `leaderKeyReleaseStart`/`leaderKeyReleaseNext`): makes
 * each call the plan asks for on the client, or waits on the scheduler, and feeds the answer back,
 * until the plan is done. The driver decides nothing: every choice is the plan's.
 *
 * ```
 * plan:    call ─────► answer ─► call ─► answer ─► done
 * driver:  --txn------(a)--wait 5ms--(w)--get--(a)--(r|)
 * ```
 *
 * Unsubscribing aborts the call in flight and stops the plan where it is.
 *
 * @example
 * ```ts
 * const result = await lastValueFrom(
 *   releasePlan(releaseStart({ prefix, session, limit: 3 }), releaseNext, { client }),
 * )
 * ```
 * @param first - The plan's first step.
 * @param next - The plan's step function.
 * @param options - Client, scheduler and jitter source.
 * @returns The plan's result, then completion.
 */
export function releasePlan<S, R>(
  first: PlanStep<S, R>,
  next: (state: S, answer: ReleaseAnswer) => PlanStep<S, R>,
  options: ReleaseDriverOptions,
): Observable<R> {
  return of(first).pipe(
    expand((step) =>
      step.type === 'call'
        ? perform(step.call, options).pipe(map((answer) => next(step.state, answer)))
        : EMPTY,
    ),
    filter((step) => step.type === 'done'),
    map((step) => step.result),
  )
}

/**
 * The Promise form of `releasePlan`, for close(), which awaits the release.
 *
 * @example
 * ```ts
 * const result = await runReleasePlan(leaderKeyReleaseStart(input), leaderKeyReleaseNext, { client })
 * ```
 * @param first - The plan's first step.
 * @param next - The plan's step function.
 * @param options - Client, scheduler and jitter source.
 * @returns The plan's result.
 */
export function runReleasePlan<S, R>(
  first: PlanStep<S, R>,
  next: (state: S, answer: ReleaseAnswer) => PlanStep<S, R>,
  options: ReleaseDriverOptions,
): Promise<R> {
  return lastValueFrom(releasePlan(first, next, options))
}

/** One call of a plan, as an Observable of its answer (the request aborted on unsubscribe). */
function perform(call: ReleaseCall, options: ReleaseDriverOptions): Observable<ReleaseAnswer> {
  const { client } = options
  const random = options.random ?? Math.random
  switch (call.type) {
    case 'txn':
      return fromCall((signal) => client.kv.txn(call.ops, { signal })).pipe(
        map((result) => ({ type: call.type, result, random: random() })),
      )
    case 'get':
      return fromCall((signal) => client.kv.get(call.key, { signal })).pipe(
        map((result) => ({ type: call.type, result, random: random() })),
      )
    case 'put': {
      const { key, value, release, flags } = call
      return fromCall((signal) => client.kv.put(key, value, { release, flags, signal })).pipe(
        map((result) => ({ type: call.type, result, random: random() })),
      )
    }
    case 'delete':
      return fromCall((signal) => client.kv.delete(call.key, { signal })).pipe(
        map((result) => ({ type: call.type, result, random: random() })),
      )
    case 'destroy':
      return fromCall((signal) => client.session.destroy(call.session, { signal })).pipe(
        map((result) => ({ type: call.type, result, random: random() })),
      )
    case 'wait':
      return timer(call.ms, options.scheduler ?? asyncScheduler).pipe(
        map(() => ({ type: call.type, random: random() })),
      )
  }
}
