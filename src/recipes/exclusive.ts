import * as E from 'fp-ts/lib/Either.js'
import {
  asyncScheduler,
  catchError,
  concatMap,
  defer,
  finalize,
  from,
  map,
  merge,
  mergeMap,
  of,
  race,
  reduce,
  type Observable,
  type ObservableInput,
  type OperatorFunction,
} from 'rxjs'
import { borrowDefaultClient, type BorrowedClient } from '../consul/default-client.js'
import { taskLockLoss, type TaskLossReason } from '../core/task-lock/task-lock-loss.js'
import { commonWatch } from '../effects/common-watch.js'
import type { TaskKeyFinish } from '../effects/task-lock/task-lock-finish.js'
import {
  TaskLockSession,
  type TaskAcquisition,
  type TaskLockSessionClosed,
} from '../effects/task-lock/task-lock-session.js'
import { SemaphoreError, fromConsulError } from '../base/semaphore-error.js'
import {
  checkContenderOptions,
  validated,
  type ContenderOptions,
  type ResolvedContenderOptions,
} from '../options/contender-options.js'
import {
  rejectUnknownOptions,
  SESSION_OPTION_NAMES,
  type OptionNames,
} from '../options/known-options.js'

/**
 * Options of `exclusive(...)`. Session options (`ttl`, `lockDelay`, ...) are those of contenders.
 *
 * @example
 * ```ts
 * const options: ExclusiveOptions<Job, void> = {
 *   keyOf: (job) => `service/jobs/task/${job.id}`,
 *   run: (job, signal) => processJob(job, signal),
 *   watchPrefix: 'service/jobs/task',
 *   concurrency: 4,
 * }
 * jobs$.pipe(exclusive(options)).subscribe()
 * ```
 */
export interface ExclusiveOptions<T, R> extends Omit<
  ContenderOptions,
  // A task lock drops at a watch failure (`taskLockLoss`); riding through is for contenders. Its
  // sessions are its own: it makes a new one when Consul invalidates one.
  'prefix' | 'watchWait' | 'value' | 'rideThrough' | 'session'
> {
  /** The task's lock key, e.g. `task => 'service/jobs/task/' + task.id`. */
  readonly keyOf: (task: T) => string
  /**
   * The work, started once the key is held. `signal` aborts when the lock is lost or the
   * subscription ends; stop then. Its last value (an Observable's, or the Promise's) is the
   * result's `value`.
   */
  readonly run: (task: T, signal: AbortSignal) => ObservableInput<R>
  /**
   * Asked while the key is held, before `run`: true skips the task ('already-done'). This is where
   * a done marker is checked (see docs/job-servers.md): checked before acquiring, a server could
   * see "not done", another could finish and let go, and the task would run twice.
   */
  readonly isDone?: (task: T, signal: AbortSignal) => ObservableInput<boolean>
  /** Most tasks held and run at once by this subscription. Default 1. */
  readonly concurrency?: number
  /**
   * What becomes of the key after `run` completes or fails (or `isDone` said true): 'release'
   * (default; the key stays, unheld, as `consul lock` leaves it) or 'delete' (only if still
   * held by this session). A lost or unsubscribed task's key is always released.
   */
  readonly onDone?: TaskKeyFinish
  /** Value written to each held key, for operators. Default '<hostname>:<pid>'. */
  readonly value?: string
  /**
   * A prefix every task key is under: one shared watch of it serves all tasks. Without it each
   * running task watches its own key (at most `concurrency` long polls).
   */
  readonly watchPrefix?: string
  /**
   * Called once everything is given back after unsubscribe (or completion, or error): every key
   * released, every session destroyed. `error` is the first cleanup failure (the sessions then
   * expire by their TTL and Consul releases their keys).
   */
  readonly onClosed?: (closed: ExclusiveClosed) => void
}

/** The names of the options `exclusive` (a task lock's sessions are its own, and it has no prefix of contenders) takes, checked against its options' interface. */
const EXCLUSIVE_OPTION_NAMES = {
  ...SESSION_OPTION_NAMES,
  keyOf: true,
  run: true,
  isDone: true,
  concurrency: true,
  onDone: true,
  watchPrefix: true,
  value: true,
  onClosed: true,
} as const satisfies OptionNames<ExclusiveOptions<unknown, unknown>>

/**
 * What `onClosed` reports once an `exclusive` subscription has given everything back.
 *
 * @example
 * ```ts
 * const onClosed = (closed: ExclusiveClosed) => {
 *   if (closed.error) console.warn(`${closed.error.message}; the sessions expire by their TTL`)
 * }
 * jobs$.pipe(exclusive({ keyOf, run, onClosed })).subscribe()
 * ```
 */
export interface ExclusiveClosed {
  /** Every session the subscription created (more than one if Consul invalidated one). */
  readonly sessions: readonly string[]
  /** The first cleanup failure, or undefined when every key and session was given back. */
  readonly error: SemaphoreError | undefined
}

/**
 * The result of one task, emitted once its key is given back.
 *
 * @example
 * ```ts
 * jobs$.pipe(exclusive({ keyOf, run })).subscribe((result: ExclusiveResult<Job, void>) => {
 *   if (result.outcome === 'skipped') console.log(`${result.key}: ${result.reason}`)
 *   if (result.outcome === 'failed' || result.outcome === 'lost') console.error(result.error)
 * })
 * ```
 */
export type ExclusiveResult<T, R> =
  /** `run` completed; `value` is its last value (undefined if none). */
  | {
      /** Discriminant: the work ran to completion. */
      readonly outcome: 'done'
      /** The task, as it came in. */
      readonly task: T
      /** The task's lock key (`keyOf(task)`). */
      readonly key: string
      /** The session that held the key while `run` worked. */
      readonly session: string
      /** The last value `run` produced, or undefined if it produced none. */
      readonly value: R | undefined
    }
  /** Another session held the key, Consul refused it for a lock-delay, or `isDone` said true. */
  | {
      /** Discriminant: the task was not run here. */
      readonly outcome: 'skipped'
      /** The task, as it came in. */
      readonly task: T
      /** The task's lock key (`keyOf(task)`). */
      readonly key: string
      /** Why: held by another session, refused during a lock-delay, or already done. */
      readonly reason: 'held' | 'lock-delay' | 'already-done'
    }
  /** The lock was lost while `run` worked; its signal was aborted with `error` (SlotLost). */
  | {
      /** Discriminant: the lock was lost mid-run; another server may run the task. */
      readonly outcome: 'lost'
      /** The task, as it came in. */
      readonly task: T
      /** The task's lock key (`keyOf(task)`). */
      readonly key: string
      /** The session that held the key. */
      readonly session: string
      /** Why the lock counts as lost. */
      readonly reason: TaskLossReason
      /** The SemaphoreError('SlotLost') that `run`'s signal was aborted with. */
      readonly error: SemaphoreError
    }
  /** `keyOf`, `isDone` or `run` threw or failed, or Consul could not be asked. */
  | {
      /** Discriminant: something threw or Consul failed. */
      readonly outcome: 'failed'
      /** The task, as it came in. */
      readonly task: T
      /** The task's lock key, or undefined when the attempt itself threw (e.g. `keyOf` did). */
      readonly key: string | undefined
      /** The session that held the key, or undefined when the key was not acquired. */
      readonly session: string | undefined
      /** What was thrown, or a SemaphoreError for a Consul failure. */
      readonly error: unknown
    }

/**
 * Runs each task of a stream at most once across every process that runs the same tasks: for
 * each task, one non-blocking acquisition of its key (`?acquire=` as a txn `lock`, with Consul's
 * lock flags, so `consul lock` recognises it); held by someone else → `skipped`; acquired →
 * `run`, then the key is released or deleted (`onDone`). The pattern of a post on Go job servers
 * with Consul locks (job servers reading the same task list, each skipping the tasks others hold),
 * with one session per subscription instead of one per task.
 *
 * ```
 * tasks:    -a---b---c-------|
 * (b held elsewhere, c's lock lost while it runs)
 * results:  ----A-B-------C--|    A: done, B: skipped, C: lost (c's signal aborted)
 * ```
 *
 * Loss: the key's lock counts as lost, and `run`'s signal is aborted, when the watch shows the key
 * with another session or none, when the watch fails, when the session's lease deadline (last
 * renewal sent + TTL − margin) passes with no renewal (a local timer: this works with Consul
 * unreachable), or when Consul invalidates the session. One session serves every key of the
 * subscription; one lease renews it; a new session is created if Consul invalidates it.
 *
 * Unsubscribing aborts the running tasks' signals, releases their keys, then destroys the
 * session, in the background; `onClosed` says when that is done.
 *
 * @example
 * ```ts
 * tasks$.pipe(
 *   exclusive({
 *     consul,
 *     keyOf: (task) => `service/jobs/task/${task.id}`,
 *     isDone: (task) => isMarkedDone(task.id),
 *     run: async (task, signal) => { await work(task, signal); await markDone(task.id) },
 *     concurrency: 4,
 *     onDone: 'delete',
 *   }),
 * ).subscribe((result) => console.log(result.outcome, result.key))
 * ```
 * @param options - Key, work, concurrency, what to do with a finished key, session options.
 * @returns An operator from tasks to their results, in completion order.
 * @throws SemaphoreError('InvalidOptions') at once when an option is wrong, naming every wrong
 *   one; nothing is sent to Consul then.
 */
export function exclusive<T, R>(
  options: ExclusiveOptions<T, R>,
): OperatorFunction<T, ExclusiveResult<T, R>> {
  rejectUnknownOptions(options, 'exclusive', EXCLUSIVE_OPTION_NAMES)
  const resolved = resolveExclusiveOptions(options)
  return (tasks) =>
    defer(() => {
      const concurrency = options.concurrency ?? 1
      const watchPrefix = options.watchPrefix === undefined ? undefined : resolved.prefix
      const scheduler = options.scheduler ?? asyncScheduler
      // Without a client of its own, the subscription holds the process's default client until its
      // task locks are given back.
      const { client, release }: BorrowedClient =
        options.consul === undefined
          ? borrowDefaultClient()
          : { client: options.consul, release: () => Promise.resolve() }
      const locks = new TaskLockSession({ ...resolved, client, scheduler })
      const onDone = options.onDone ?? 'release'

      const hold = (
        task: T,
        key: string,
        acquired: Extract<TaskAcquisition, { type: 'acquired' }>,
      ): Observable<ExclusiveResult<T, R>> =>
        defer(() => {
          const { session } = acquired
          const controller = new AbortController()
          const { signal } = controller
          const lost$ = merge(
            acquired.lease,
            commonWatch(client, watchPrefix ?? key, { scheduler }),
          ).pipe(
            taskLockLoss({ key, session, acquiredIndex: acquired.modifyIndex, scheduler }),
            // A watch that fails for good (403 ...) can no longer vouch for the key.
            catchError(() => of<TaskLossReason>('watch-failed')),
            map((reason): ExclusiveResult<T, R> => {
              const error = new SemaphoreError(
                'SlotLost',
                `the lock of ${key} was lost (${reason}) while its task ran: another server may ` +
                  'take the task now.',
              )
              controller.abort(error)
              return { outcome: 'lost', task, key, session, reason, error }
            }),
          )
          const isDone$ = options.isDone ? defer(() => options.isDone!(task, signal)) : of(false)
          const worked$ = from(isDone$).pipe(
            mergeMap((done) =>
              done
                ? of<ExclusiveResult<T, R>>({
                    outcome: 'skipped',
                    task,
                    key,
                    reason: 'already-done',
                  })
                : from(defer(() => options.run(task, signal))).pipe(
                    reduce<R, R | undefined>((_, value) => value, undefined),
                    map((value): ExclusiveResult<T, R> => ({
                      outcome: 'done',
                      task,
                      key,
                      session,
                      value,
                    })),
                  ),
            ),
            catchError((error: unknown) =>
              of<ExclusiveResult<T, R>>({ outcome: 'failed', task, key, session, error }),
            ),
          )
          return race(worked$, lost$).pipe(
            // The result says the task is over for Consul too: give the key back first.
            concatMap((result) =>
              from(locks.finish(key, result.outcome === 'lost' ? 'release' : onDone)).pipe(
                map(() => result),
              ),
            ),
            // Unsubscribed mid-run: stop the work, give the key back (a no-op once finished).
            finalize(() => {
              controller.abort()
              void locks.finish(key, 'release')
            }),
          )
        })

      const attempt = (task: T): Observable<ExclusiveResult<T, R>> =>
        defer(() => {
          const key = options.keyOf(task)
          if (watchPrefix !== undefined && !key.startsWith(`${watchPrefix}/`)) {
            throw new SemaphoreError(
              'InvalidOptions',
              `task key ${key} is not under watchPrefix ${watchPrefix}: it could not be watched.`,
            )
          }
          return from(locks.acquire(key, resolved.value)).pipe(
            mergeMap((answer) => {
              if (E.isLeft(answer)) {
                const error = fromConsulError(answer.left, `acquiring ${key}`)
                return of<ExclusiveResult<T, R>>({
                  outcome: 'failed',
                  task,
                  key,
                  session: undefined,
                  error,
                })
              }
              const acquisition = answer.right
              return acquisition.type === 'refused'
                ? of<ExclusiveResult<T, R>>({
                    outcome: 'skipped',
                    task,
                    key,
                    reason: acquisition.reason,
                  })
                : hold(task, key, acquisition)
            }),
          )
        }).pipe(
          catchError((error: unknown) =>
            of<ExclusiveResult<T, R>>({
              outcome: 'failed',
              task,
              key: undefined,
              session: undefined,
              error,
            }),
          ),
        )

      return tasks.pipe(
        mergeMap(attempt, concurrency),
        finalize(() => {
          void locks
            .close()
            .then(async (closed) => {
              await release()
              options.onClosed?.(closedReport(closed))
            })
            // onClosed threw: nothing is left to clean, and nobody to tell.
            .catch(() => undefined)
        }),
      )
    })
}

/** Every option checked at once; throws SemaphoreError('InvalidOptions') naming each problem. */
function resolveExclusiveOptions<T, R>(options: ExclusiveOptions<T, R>): ResolvedContenderOptions {
  return validated((report) => {
    const resolved = checkContenderOptions(
      { ...options, prefix: options.watchPrefix ?? 'exclusive' },
      'rx-consul-semaphore exclusive',
      // The contender's prefix is the watch prefix here.
      (option, problem) => report(option === 'prefix' ? 'watchPrefix' : option, problem),
    )
    if ((options as { session?: unknown }).session !== undefined) {
      report(
        'session',
        'exclusive makes its sessions itself (a new one when Consul invalidates one).',
      )
    }
    for (const name of ['keyOf', 'run'] as const) {
      if (typeof options[name] !== 'function') {
        report(name, `must be a function (got ${typeof options[name]}).`)
      }
    }
    if (options.isDone !== undefined && typeof options.isDone !== 'function') {
      report('isDone', `must be a function (got ${typeof options.isDone}).`)
    }
    const concurrency = options.concurrency ?? 1
    if (!(concurrency === Infinity || (Number.isInteger(concurrency) && concurrency >= 1))) {
      report('concurrency', `${concurrency} must be a whole number of at least 1, or Infinity.`)
    }
    const onDone: unknown = options.onDone ?? 'release'
    if (onDone !== 'release' && onDone !== 'delete') {
      report('onDone', `${JSON.stringify(onDone)} must be 'release' or 'delete'.`)
    }
    return resolved
  })
}

function closedReport(closed: TaskLockSessionClosed): ExclusiveClosed {
  return {
    sessions: closed.sessions,
    error:
      closed.error === undefined
        ? undefined
        : fromConsulError(closed.error, 'giving back the task keys'),
  }
}
