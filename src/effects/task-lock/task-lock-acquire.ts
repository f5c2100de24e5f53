import * as E from 'fp-ts/lib/Either.js'
import {
  asyncScheduler,
  catchError,
  firstValueFrom,
  map,
  mergeMap,
  of,
  throwError,
  type SchedulerLike,
} from 'rxjs'
import type { ConsulClient, TxnResult } from '../../consul/client-api.js'
import type { ConsulError } from '../../base/consul-error.js'
import { LOCK_FLAGS } from '../../base/flags.js'
import {
  fromCall,
  isConsulError,
  isSessionInvalid,
  orThrow,
  retryTransient,
} from '../call-policy.js'
import { lockAnswer } from '../protocol/lock-answer.js'

/** The answer of one non-blocking acquisition of a task key. */
export type TaskLockAnswer =
  /** This session holds the key; `modifyIndex` is what the acquisition wrote. */
  | { readonly type: 'acquired'; readonly modifyIndex: bigint }
  /** Another session holds it, or Consul refuses it for a lock-delay after an invalidation. */
  | { readonly type: 'refused'; readonly reason: 'held' | 'lock-delay' }
  /** Consul no longer has the session. */
  | { readonly type: 'session-gone' }

const utf8 = new TextEncoder()

/**
 * Tries once to take `key` for `session`, as `consul lock` would (Consul's lock flags), without
 * waiting: a txn `lock` (`?acquire=` in a transaction, so that the answer carries the ModifyIndex
 * the acquisition wrote, and tells a lock-delay from a held key: consul-http-semantics.md 5.2).
 * Transient failures are retried by the effects' call policy; a lost answer of a committed lock is
 * harmless, the retry re-acquires with the same session and Consul answers committed.
 *
 * @example
 * const answer = await acquireTaskLock(client, 'jobs/task/7', session, 'server-a')
 * if (E.isRight(answer) && answer.right.type === 'acquired') run()
 * @returns The answer, or the ConsulError (never rejects).
 */
export function acquireTaskLock(
  client: ConsulClient,
  key: string,
  session: string,
  value: string,
  scheduler: SchedulerLike = asyncScheduler,
): Promise<E.Either<ConsulError, TaskLockAnswer>> {
  const op = { verb: 'lock', key, value: utf8.encode(value), flags: LOCK_FLAGS, session } as const
  return firstValueFrom(
    fromCall((signal) => client.kv.txn([op], { signal })).pipe(
      mergeMap(orThrow),
      retryTransient(scheduler),
      map((result) => E.right(answerOf(result))),
      catchError((error: unknown) => {
        if (!isConsulError(error)) return throwError(() => error)
        return of(isSessionInvalid(error) ? E.right(sessionGone) : E.left(error))
      }),
    ),
  ).catch((error: unknown) =>
    // A bug below, not a Consul answer: still an Either, so that cleanup never rejects.
    E.left<ConsulError>({ _tag: 'Unreachable', message: String(error), cause: error }),
  )
}

const sessionGone: TaskLockAnswer = { type: 'session-gone' }

function answerOf(result: TxnResult): TaskLockAnswer {
  const lock = lockAnswer(result)
  switch (lock.type) {
    case 'acquired':
      return { type: 'acquired', modifyIndex: lock.modifyIndex ?? 0n }
    case 'session-gone':
      return sessionGone
    default:
      return { type: 'refused', reason: lock.type }
  }
}
