import * as E from 'fp-ts/lib/Either.js'
import {
  EMPTY,
  asyncScheduler,
  connect,
  defer,
  distinctUntilChanged,
  filter,
  finalize,
  ignoreElements,
  map,
  merge,
  mergeMap,
  of,
  repeat,
  retry,
  Subject,
  switchMap,
  take,
  takeUntil,
  takeWhile,
  tap,
  throwError,
  timer,
  type BehaviorSubject,
  type Observable,
  type SchedulerLike,
} from 'rxjs'
import type { ConsulClient } from '../consul/client-api.js'
import {
  ACL_FAILURES_BEFORE_PERMANENT,
  isAclServerError,
  isTransient,
  persistentAclError,
  type ConsulError,
} from '../consul/errors.js'
import { MAX_RETRY_AFTER_MS, retryDelayMs } from '../consul/retry-after.js'
import type { KVSnapshot, WatchEvent } from '../consul/types.js'
import {
  initialContenderState,
  type ContenderAction,
  type ContenderState,
  type DecideStep,
  type SharedGrace,
} from '../core/contender/contender-state-model.js'
import { contenderState } from '../core/contender/contender-state.js'
import type { ContenderEvent, PrefixProblem } from '../core/events.js'
import { tryOnceRefused } from '../core/contender/try-once-refused.js'
import { waiterSnapshots } from '../core/semaphore/waiter-snapshots.js'
import { problemError, toSemaphoreError, type SemaphoreError } from '../errors.js'
import { unreachableError } from './unreachable-error.js'
import type { ResolvedContenderOptions } from '../options/contender-options.js'
import { afterEach } from './after-each.js'
import { isConsulError } from './call-policy.js'
import { fromCall } from './from-call.js'
import { joinQueue, performAction } from './perform-action.js'
import { releaseSlot } from './release-slot.js'
import { sessionLease } from './session-lease.js'
import { sharedDecide, sharedGrace, sharedView } from './shared-decide.js'
import { queueWatch } from './queue-watch.js'
import { sharedWatch } from './shared-watch.js'

/**
 * What makes a contender a semaphore contender or a leader-election (single-key lock) contender.
 * Everything else (session create and lease, the shared watch, the core's state machine, retries,
 * starting over with a new session, release on finalize) is the same and lives in `contend`.
 */
export interface ContenderProtocol {
  /**
   * Behavior of the sessions: 'delete' for the semaphore (its contender keys go with the session),
   * 'release' for the lock, as Go's `Lock` does (the key and its value stay, the holder is cleared).
   */
  readonly behavior: 'release' | 'delete'
  /** The core's decide step. */
  readonly decide: DecideStep
  /** The fairness grace the process's contenders of the prefix share (see `sharedGrace`). */
  readonly sharedGrace?: SharedGrace | undefined
  /**
   * Makes the writes the core asks for. Called once per session (so it may keep per-session state
   * such as a backoff); each action's Observable is cancelled when the core asks for something
   * else. Its events are fed back into the core.
   */
  readonly performer: (session: string) => (action: ContenderAction) => Observable<ContenderEvent>
  /**
   * Gives the slot back and destroys the session (never rejects: errors are Lefts). `lastSeen` is
   * the last snapshot the contender decided on, a hint that may save a read.
   */
  readonly release: (
    session: string,
    lastSeen: KVSnapshot | undefined,
  ) => Promise<E.Either<ConsulError, void>>
  /** The public error for a prefix problem the core found. */
  readonly problemError: (problem: PrefixProblem) => SemaphoreError
  /**
   * The prefix's watch events this contender's state machine runs on. Default: every event of the
   * prefix watch the process shares (`sharedWatch`). The semaphore's is herd-free across
   * processes (`queueWatch`) and within one (`waiterSnapshots`).
   */
  readonly watch?: (session: string) => Observable<WatchEvent>
}

export interface ContendOptions extends ResolvedContenderOptions {
  readonly client: ConsulClient
  readonly limit: number
  readonly fairness: boolean
  readonly fairnessGraceMs: number | undefined
  /** Becomes true when the user closes the contender: release now, and contend no more. */
  readonly closing: BehaviorSubject<boolean>
  /** Receives each release this contender starts in the background, so close() can await it. */
  readonly onRelease: (release: Promise<E.Either<ConsulError, void>>) => void
  readonly scheduler?: SchedulerLike | undefined
  /**
   * Default: the semaphore's (`decide` shared per prefix, the queue watch, `performAction`,
   * `releaseSlot`, 'delete' sessions).
   */
  readonly protocol?: ContenderProtocol | undefined
  /**
   * Try once (`tryAcquire`, `tryLead`): until it first holds, the contender gives up at the first
   * refusal (`tryOnceRefused`) or failure instead of waiting or retrying: it releases, completes,
   * and starts no new session. Once it has held, it behaves as any contender.
   */
  readonly tryOnce?: boolean | undefined
}

/** How often a waiter far back in the queue gets a snapshot that changes nothing for it (ms). */
const WAITER_REFRESH_MS = 1000

/** The semaphore's protocol: Consul's semaphore algorithm, as `consul lock -n <limit>` runs it. */
function semaphoreProtocol(options: ContendOptions): ContenderProtocol {
  const { client, prefix, limit } = options
  const decide = sharedDecide(client, prefix)
  const view = sharedView(client, prefix)
  const grace = sharedGrace(client, prefix)
  const watchOptions = { waitMs: options.watchWaitMs, scheduler: options.scheduler, decide }
  return {
    behavior: 'delete',
    decide,
    sharedGrace: grace,
    watch: (session) => {
      const local = { session, limit, fairness: options.fairness }
      const join = () => joinQueue({ client, prefix, session, value: options.value })
      return queueWatch(client, prefix, local, watchOptions, join).pipe(
        waiterSnapshots({
          prefix,
          ...local,
          decide,
          // 1 to 2 s, so that a thousand waiters of a process do not all refresh on one snapshot.
          refreshMs: WAITER_REFRESH_MS * (1 + Math.random()),
          scheduler: options.scheduler,
        }),
      )
    },
    performer: (session) => (action) =>
      performAction(action, {
        client,
        prefix,
        session,
        value: options.value,
        scheduler: options.scheduler ?? asyncScheduler,
      }),
    release: (session, lastSeen) =>
      releaseSlot({
        client,
        prefix,
        session,
        limit,
        hint: lastSeen,
        hintView: lastSeen && view(lastSeen, { prefix, limit }),
      }),
    problemError,
  }
}

const backoffMs = (attempt: number): number =>
  Math.min(10_000, 250 * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2)

/**
 * One contender (of a semaphore, or of a leader election given `options.protocol`), from session
 * to slot and back, for as long as it is subscribed: creates a session, keeps it alive, feeds the
 * shared prefix watch, the lease and the answers of its own writes into the pure core, and makes
 * the writes the core asks for (the protocol's performer). When the session is lost it starts
 * over with a new one; transient failures are retried with backoff; a prefix problem (conflict,
 * limit conflict, corrupt `.lock`) or a permanent Consul error ends it with a SemaphoreError.
 * Unsubscribing or closing releases the slot in the background (the protocol's release).
 *
 * ```
 * session ─► key ─► CAS ─► holding        session gone ─► new session ─► ...
 * --s0----------s1-----s2(t)---------------s3(f)-----------s0---...
 * ```
 *
 * @returns The core's state after each event, across sessions.
 */
export function contend(options: ContendOptions): Observable<ContenderState> {
  return defer(() => contendOnce(options))
}

function contendOnce(options: ContendOptions): Observable<ContenderState> {
  const { client, prefix, limit, closing } = options
  // Try-once state of this subscription: still before the first hold, and whether it gave up.
  let trying = options.tryOnce === true
  let gaveUp = false
  const scheduler = options.scheduler ?? asyncScheduler
  const protocol = options.protocol ?? semaphoreProtocol(options)

  const withSession = (session: string, createdAt: number): Observable<ContenderState> =>
    defer(() => {
      const feedback = new Subject<ContenderEvent>()
      const perform = protocol.performer(session)
      let last: ContenderState | undefined
      let released = false
      const releaseOnce = (): Observable<never> => {
        // A session Consul already dropped has nothing left to release.
        if (!released && last?.retired !== 'session-gone') {
          options.onRelease(protocol.release(session, last?.snapshot))
        }
        released = true
        return EMPTY
      }
      const events: Observable<ContenderEvent> = merge(
        of<ContenderEvent>({
          type: 'session-created',
          session,
          ttlMs: options.ttlMs,
          sentAt: createdAt,
        }),
        sessionLease({
          client,
          session,
          ttlMs: options.ttlMs,
          createdAt,
          scheduler,
          leaseMarginMs: options.leaseMarginMs,
        }),
        protocol.watch?.(session) ??
          sharedWatch(client, `${prefix}/`, { waitMs: options.watchWaitMs, scheduler }),
        feedback,
        closing.pipe(
          filter(Boolean),
          take(1),
          map((): ContenderEvent => ({ type: 'release-requested' })),
        ),
      )
      return events.pipe(
        contenderState({
          prefix,
          limit,
          fairness: options.fairness,
          fairnessGraceMs: options.fairnessGraceMs,
          leaseMarginMs: options.leaseMarginMs,
          scheduler,
          decide: protocol.decide,
          sharedGrace: protocol.sharedGrace,
        }),
        connect((states) =>
          merge(
            states,
            states.pipe(
              map((state) => state.next),
              distinctUntilChanged(),
              switchMap((action) => (action ? perform(action) : EMPTY)),
              tap((event) => feedback.next(event)),
              ignoreElements(),
            ),
          ),
        ),
        tap((state) => {
          last = state
          if (state.holding) trying = false
          if (trying && tryOnceRefused(state)) gaveUp = true
        }),
        takeWhile(
          (state) => state.retired === undefined && state.problem === undefined && !gaveUp,
          true,
        ),
        // Each state passes on as it is; the last one of a run then ends it: a prefix problem
        // becomes the error, and a requested release starts right after every subscriber heard
        // holding false, before the teardown of the watch and the lease delays the handover.
        // (An operator rather than mergeMap: no inner subscription per state, which a thousand
        // contenders of a prefix would pay on every snapshot.)
        afterEach((state) => {
          if (state.problem) throw protocol.problemError(state.problem)
          if (state.retired === 'released') releaseOnce()
        }),
        finalize(releaseOnce),
      )
    })

  const closed = closing.pipe(filter(Boolean))
  // The start-up timeout runs until the first session is created: the first contact with a
  // usable agent.
  const contacted = new Subject<void>()
  let lastStartupFailure: ConsulError | undefined
  const generation = defer(() => {
    const createdAt = scheduler.now()
    return fromCall((signal) =>
      client.session.create({
        name: options.sessionName,
        ttl: options.ttl,
        behavior: protocol.behavior,
        ...(options.lockDelay !== undefined ? { lockDelay: options.lockDelay } : {}),
        ...(options.checks !== undefined ? { nodeChecks: options.checks } : {}),
        signal,
      }),
    ).pipe(
      mergeMap((created) => {
        if (E.isLeft(created)) return throwError(() => created.left)
        contacted.next()
        return withSession(created.right, createdAt)
      }),
    )
  })
  const startupTimeout = Number.isFinite(options.startupTimeoutMs)
    ? timer(options.startupTimeoutMs, scheduler).pipe(
        takeUntil(merge(contacted, closed)),
        mergeMap(() =>
          throwError(() => unreachableError(client, options.startupTimeoutMs, lastStartupFailure)),
        ),
      )
    : EMPTY

  // While no session can be made, the core does not run: these states say why it waits.
  const notices = new Subject<ContenderState>()
  let lastState: ContenderState | undefined
  let aclFailuresInRow = 0
  const retryGeneration = (error: unknown, attempt: number): Observable<unknown> => {
    // A closed contender ends quietly: whatever failed, its user no longer listens for it.
    if (closing.value) return EMPTY
    if (!isConsulError(error) || !isTransient(error) || trying) {
      return throwError(() => toSemaphoreError(error))
    }
    lastStartupFailure = error
    aclFailuresInRow = isAclServerError(error) ? aclFailuresInRow + 1 : 0
    if (isAclServerError(error) && aclFailuresInRow >= ACL_FAILURES_BEFORE_PERMANENT) {
      return throwError(() => toSemaphoreError(persistentAclError(error, aclFailuresInRow)))
    }
    if (lastState?.holding !== true) {
      notices.next({
        ...(lastState ?? initialContenderState),
        connected: false,
        next: undefined,
        lastFailure: { during: 'session', error },
      })
    }
    // close() during the wait ends the run at once, rather than after one more failed attempt.
    return timer(retryDelayMs(error, backoffMs(attempt), MAX_RETRY_AFTER_MS), scheduler).pipe(
      takeUntil(closed),
    )
  }
  const runs = generation.pipe(
    tap((state) => {
      lastState = state
      aclFailuresInRow = 0
    }),
    retry({ resetOnSuccess: true, delay: retryGeneration }),
    // The session is gone (or the slot was lost with it): contend again with a new one.
    // A try-once contender that lost its session before it held has its answer: not held.
    repeat({ delay: () => (closing.value || trying ? EMPTY : timer(backoffMs(1), scheduler)) }),
    finalize(() => notices.complete()),
  )
  return merge(notices, runs, startupTimeout)
}
