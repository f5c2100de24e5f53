import { EMPTY, type Observable, type SchedulerLike, map, mergeMap, of, timer } from 'rxjs'
import { BACKOFF, backoffDelay } from '../../base/backoff.js'
import type { ConsulClient } from '../../consul/client-api.js'
import type { KVSnapshot } from '../../base/kv-snapshot.js'
import type { ContenderEvent } from '../../core/events.js'
import { fromCall, retryTransient, rightOf } from '../call-policy.js'
import { takeKey } from './own-key-batch.js'
import { prefixAfterWrite } from './prefix-after-write.js'
import { endOnSessionGone } from './session-gone.js'

/** What `takeOwnKey` writes, and with whom. */
export interface OwnKeyWrite {
  readonly client: ConsulClient
  /** The key to take: a semaphore's contender key, a leader lock's waiter key. */
  readonly key: string
  readonly value: string
  readonly flags: bigint
  /** The contender's session, which locks the key. */
  readonly session: string
  readonly scheduler: SchedulerLike
  readonly random?: (() => number) | undefined
  /** The key may be in Consul before this Observable's first write of it. Default false. */
  readonly mayExist?: boolean | undefined
}

/**
 * A contender's `NotContending` write, for both performers: `?acquire=<session>` of its own key
 * with its flags, which emits nothing when it is taken (the next snapshot shows the key). Keys of
 * one client taken while another of its keys is on its way go together, and every write after the
 * first of the Observable (one per session) is made only where the key does not exist, so that
 * none rewrites a key a release marked as a holder's meanwhile (`own-key-batch.ts`). Answered
 * false, it asks whether the session still exists, since after an invalidation Consul refuses a
 * key for the session's lock-delay before it even looks at the session: gone → `session-gone`;
 * still there → the same write again after `BACKOFF.recheck`. Transient failures are retried
 * (`retryTransient`), and a 500 `invalid session` ends as `session-gone` (`endOnSessionGone`).
 *
 * ```
 * put ?acquire:  --t|            --f  info: --s  (recheck) --t|       --f  info: --null
 * events:        ----|           -------------------------- |         ------------(g|)
 * ```
 *
 * @example
 * takeOwnKey({ client, key: contenderKey(prefix, session), value, flags, session, scheduler })
 * @param write - The key, its value and flags, the session, the client and scheduler.
 * @returns The write's events: none, or `session-gone`; errors with a permanent ConsulError.
 */
export function takeOwnKey(write: OwnKeyWrite): Observable<ContenderEvent> {
  const { client, key, value, flags, session, scheduler, random } = write
  // After its first attempt the key may be there (an answer lost, a snapshot from before it):
  // every later write of it is made only where it does not exist (`own-key-batch.ts`).
  let tried = write.mayExist === true
  const take: Observable<ContenderEvent> = rightOf((signal) => {
    const mayExist = tried
    tried = true
    return takeKey(client, { key, value, flags, session, mayExist })(signal)
  }).pipe(
    retryTransient(scheduler, random),
    mergeMap((acquired) =>
      acquired
        ? EMPTY
        : rightOf((signal) => client.session.info(session, { signal })).pipe(
            retryTransient(scheduler, random),
            mergeMap((info) =>
              info === null
                ? of<ContenderEvent>({ type: 'session-gone' })
                : timer(backoffDelay(BACKOFF.recheck, 1), scheduler).pipe(mergeMap(() => take)),
            ),
          ),
    ),
    endOnSessionGone,
  )
  return take
}

/**
 * The same write as `takeOwnKey`, for a contender whose session is new, in one request: a
 * transaction that takes the key (`lock` with the session) and reads the prefix right after it
 * (`get-tree`). The answer is the prefix as of that write (`prefixAfterWrite`), the contender's
 * own key included, so the contender decides on it at once, instead of listing the prefix (to
 * find its key missing), taking its key and waking for its own write: one request instead of
 * three. Undefined when the transaction failed or rolled back (the key could not be taken): the
 * contender then goes the usual way, which reports and retries what went wrong.
 *
 * @example
 * joinWithRead({ client, prefix: 'svc/lock', key: contenderKey('svc/lock', session), value, flags, session })
 * @param write - The prefix, the key, its value and flags, the session, the client.
 * @returns The prefix as of the join, or undefined; then completes.
 */
export function joinWithRead(
  write: Omit<OwnKeyWrite, 'scheduler' | 'random'> & { readonly prefix: string },
): Observable<KVSnapshot | undefined> {
  const { client, prefix, key, value, flags, session } = write
  return fromCall((signal) =>
    client.kv.txn(
      [
        { verb: 'lock', key, value: utf8.encode(value), flags, session },
        { verb: 'get-tree', key: `${prefix}/` },
      ],
      { signal },
    ),
  ).pipe(map(prefixAfterWrite))
}

const utf8 = new TextEncoder()
