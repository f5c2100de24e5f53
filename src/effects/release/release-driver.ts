import type { SchedulerLike } from 'rxjs'
import type { TxnOp } from '../../base/txn.js'
import {
  EMPTY,
  asyncScheduler,
  defer,
  expand,
  filter,
  finalize,
  lastValueFrom,
  map,
  mergeMap,
  Observable,
  of,
  tap,
  timer,
} from 'rxjs'
import type { ConsulClient } from '../../consul/client-api.js'
import type {
  LatestPrefix,
  PlanStep,
  ReleaseAnswer,
  ReleaseCall,
} from '../../core/release/release-call.js'
import { fromCall } from '../call-policy.js'

/** What a release driver runs a plan's calls with. */
export interface ReleaseDriverOptions {
  readonly client: ConsulClient
  /** The scheduler of the plan's waits (retry backoff, the pause after a lost CAS); default async. */
  readonly scheduler?: SchedulerLike | undefined
  /** Source of the jitter handed to the plan with each answer, in [0, 1); default Math.random. */
  readonly random?: (() => number) | undefined
  /** The writes of `.lock` of the process, which a semaphore release takes turns with. */
  readonly writes?: ReleaseWrites | undefined
}

/**
 * What a semaphore release's driver shares with the other writers of `.lock` of its process
 * (`FreshLock`): what they know, and the turn to write.
 *
 * ```
 * txn call:  take the turn ─► stale? ─yes─► answer `stale` with `latest` (the turn kept: the plan
 *                               │ no                 builds the next CAS on it at once)
 *                               ▼
 *                             send ─► answer told ─► turn given back
 * ```
 */
export interface ReleaseWrites {
  /** Told of each call as it is made; the function it returns, if any, is told the answer. */
  readonly observe: (call: ReleaseCall) => ((answer: ReleaseAnswer) => void) | undefined
  /** The freshest prefix known now, handed to the plan after a wait or instead of a stale CAS. */
  readonly latest: () => LatestPrefix | undefined
  /** Asks for the turn to write `.lock` (`FreshLock.request`); the function returned gives it back. */
  readonly request: (granted: () => void) => () => void
  /** Whether a transaction's CAS of `.lock` is known to lose (`FreshLock.stale`). */
  readonly stale: (ops: readonly TxnOp[]) => boolean
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
  const { writes } = options
  if (writes === undefined) {
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
  return defer(() => {
    const turn = new HeldTurn(writes)
    return of(first).pipe(
      expand((step) =>
        step.type === 'call'
          ? inTurn(step.call, options, writes, turn).pipe(map((a) => next(step.state, a)))
          : EMPTY,
      ),
      filter((step) => step.type === 'done'),
      map((step) => step.result),
      finalize(() => turn.giveBack()),
    )
  })
}

/** The turn of one release: taken for a CAS, kept through a stale answer and a read after it. */
class HeldTurn {
  private giveBackFn: (() => void) | undefined = undefined
  private held = false
  /** Given back before the request returned the way to (an answer that came at once). */
  private givenBack = false

  constructor(private readonly writes: ReleaseWrites) {}

  /** Emits once the turn is this release's (at once when it is already). */
  take(): Observable<void> {
    if (this.held) return of(undefined)
    return new Observable<void>((subscriber) => {
      this.givenBack = false
      const giveBack = this.writes.request(() => {
        this.held = true
        subscriber.next()
        subscriber.complete()
      })
      if (this.givenBack) giveBack()
      else this.giveBackFn = giveBack
      // Unsubscribed before it was granted: the request is withdrawn.
      return () => {
        if (!this.held) this.giveBack()
      }
    })
  }

  giveBack(): void {
    const giveBack = this.giveBackFn
    this.giveBackFn = undefined
    this.held = false
    if (giveBack === undefined) this.givenBack = true
    else giveBack()
  }
}

/**
 * A call of a semaphore release among the process's writers of `.lock`: a transaction waits for
 * the turn, and is answered `stale` instead of sent when its CAS is known to lose; its answer is
 * told (`observe`) before the turn goes to the next writer. A read of `.lock` or of the prefix
 * keeps the turn (a CAS is built on it next); any other call gives it back.
 */
function inTurn(
  call: ReleaseCall,
  options: ReleaseDriverOptions,
  writes: ReleaseWrites,
  turn: HeldTurn,
): Observable<ReleaseAnswer> {
  if (call.type !== 'txn') {
    if (call.type !== 'get' && call.type !== 'list') turn.giveBack()
    return observed(call, options, writes)
  }
  return turn.take().pipe(
    mergeMap(() => {
      const latest = writes.stale(call.ops) ? writes.latest() : undefined
      if (latest !== undefined) {
        const random = options.random ?? Math.random
        return of<ReleaseAnswer>({ type: 'stale', latest, random: random() })
      }
      return observed(call, options, writes).pipe(tap(() => turn.giveBack()))
    }),
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

/** A call and its answer, told to `writes.observe`. */
function observed(
  call: ReleaseCall,
  options: ReleaseDriverOptions,
  writes: ReleaseWrites,
): Observable<ReleaseAnswer> {
  return defer(() => {
    const told = writes.observe(call)
    const answers = perform(call, options)
    return told === undefined ? answers : answers.pipe(tap(told))
  })
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
    case 'list':
      return fromCall((signal) => client.kv.list(`${call.prefix}/`, { signal })).pipe(
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
        map(() => {
          const latest = options.writes?.latest()
          return latest === undefined
            ? { type: call.type, random: random() }
            : { type: call.type, random: random(), latest }
        }),
      )
  }
}
