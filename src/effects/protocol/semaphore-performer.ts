import type { TaskEither } from 'fp-ts/lib/TaskEither.js'
import { Observable, asyncScheduler, map, mergeMap, of, switchMap, take } from 'rxjs'
import type { ConsulError } from '../../base/consul-error.js'
import type { TxnOp, TxnResult } from '../../base/txn.js'
import type { ConsulClient } from '../../consul/client-api.js'
import { COMPANION_FLAGS, HOLDER_FLAGS, SEMAPHORE_FLAGS, waitingFlags } from '../../base/flags.js'
import type { KVEntry, KVSnapshot } from '../../base/kv-snapshot.js'
import { contenderKey } from '../../core/keys/contender-key.js'
import { refenceOps } from '../../core/release/release-ops.js'
import { refenceKept } from '../../core/semaphore/refencing.js'
import { lockKey } from '../../core/keys/lock-key.js'
import type { ContenderEvent } from '../../core/events.js'
import { retryTransient, rightOf } from '../call-policy.js'
import type { FreshLock } from '../fresh-lock.js'
import type { Performer, PerformerOptions } from './contender-protocol.js'
import { valueBytes } from './own-key-batch.js'
import { joinWithRead, takeOwnKey } from './take-own-key.js'

/**
 * The index `.lock` was written at, from a committed transaction's results (the check-session
 * result carries the key's earlier index, so pick `.lock`'s own).
 */
function writtenIndex(results: readonly KVEntry[], key: string): bigint | undefined {
  // The last: a check of the same key earlier in the transaction answers with its index before.
  let index: bigint | undefined
  for (let i = 0; i < results.length; i++) {
    const entry = results[i] as KVEntry
    if (entry.key === key) index = entry.modifyIndex
  }
  return index
}

function entryOf(results: readonly KVEntry[], key: string): KVEntry | undefined {
  return results.find((entry) => entry.key === key)
}

export interface SemaphorePerformerOptions extends PerformerOptions {
  /** The contender key's value. */
  readonly value: string
  /**
   * The freshest `.lock` of the process on the prefix: told what each transaction answers, so that
   * the next write of any contender of the process builds on it.
   */
  readonly fresh?: FreshLock | undefined
  /**
   * The other sessions of a contender of several permits: its acquisition takes a key for each
   * (COMPANION_FLAGS, locked by that session) and lists them all in `.lock`. Default none.
   */
  readonly companions?: readonly string[] | undefined
}

/** One transaction, its answer told to `fresh` (what the process knows of `.lock`). */
function txnTold(
  client: ConsulClient,
  ops: readonly TxnOp[],
  fresh: FreshLock | undefined,
): Observable<TxnResult> {
  const call = (signal: AbortSignal): TaskEither<ConsulError, TxnResult> =>
    client.kv.txn(ops, { signal })
  if (fresh === undefined) return rightOf(call)
  return new Observable((subscriber) => {
    const feed = fresh.sending()
    return rightOf(call, (result) => feed.txn(ops, result)).subscribe(subscriber)
  })
}

/**
 * One transaction that writes `.lock`, in its turn among the process's writers (`FreshLock`): it
 * waits for the turn, is not sent when its CAS is known to lose (answered as a rollback of that
 * CAS, which is what sending it would get), and tells its answer before the turn goes on. One
 * call: retried, it is made anew.
 */
function txnInTurn(
  client: ConsulClient,
  ops: readonly TxnOp[],
  fresh: FreshLock | undefined,
): Observable<TxnResult> {
  if (fresh === undefined) return txnTold(client, ops, undefined)
  return fresh.turn().pipe(
    switchMap(() => (fresh.stale(ops) ? of(notSent(ops)) : txnTold(client, ops, fresh))),
    take(1),
  )
}

/** The rollback a CAS of `.lock` known to be stale would get, had it been sent. */
function notSent(ops: readonly TxnOp[]): TxnResult {
  const opIndex = ops.findIndex((op) => op.verb === 'cas')
  return {
    committed: false,
    errors: [{ opIndex, what: 'not sent: .lock is known at a newer index' }],
  }
}

/**
 * The semaphore's performer for one session: makes the write the core asks for and reports its
 * answer as a ContenderEvent:
 *
 * - `TryAcquire`: a transaction that, while this session still locks its contender key, CASes
 *   `.lock` and rewrites the key with HOLDER_FLAGS (the answer carries the index written: the
 *   fencing token) → `cas-result`;
 * - `NotContending`: `?acquire=<session>` on the contender key with CONTENDER_FLAGS → nothing
 *   (the next snapshot shows the key), or `session-gone` when Consul no longer has the session.
 *
 * Transient failures are retried a few times with backoff; the caller cancels the attempt (and
 * its HTTP request) by unsubscribing when the core asks for something else. A CAS whose answer was
 * lost may still have been applied: the retry then answers false, and the next snapshot shows the
 * slot, so safety never rests on knowing.
 *
 * ```
 * action:   TryAcquire
 * result:   ------(cas-result|)
 * ```
 *
 * @example
 * const perform = semaphorePerformer({ client, prefix, session, value: 'web-1' })
 * states.pipe(map((s) => s.write), distinctUntilChanged(), switchMap((a) => (a ? perform(a) : EMPTY)))
 * @param options - Client, prefix, session, the contender key's value, scheduler.
 * @returns The performer: each action's events to feed back to the core; errors with a permanent
 *   ConsulError.
 */
export function semaphorePerformer(options: SemaphorePerformerOptions): Performer {
  const { client, prefix, session, random, fresh } = options
  const scheduler = options.scheduler ?? asyncScheduler
  const companions = options.companions ?? []
  // How many permits its key asks for while it waits (no slot is handed to several permits).
  const waiting = waitingFlags(1 + companions.length)
  // The same for every write of the session: made once, not for each job's re-fence.
  const ownKey = contenderKey(prefix, session)
  const value = valueBytes(options.value)
  const lock = lockKey(prefix)
  // One for the session: after its first write, each one is made only where the key is absent.
  const takeKeyOfSession = takeOwnKey({
    client,
    key: ownKey,
    value: options.value,
    // The semaphore's flags plus one: "this contender takes a slot handed to it directly"; for
    // several permits, how many it asks for.
    flags: waiting,
    session,
    scheduler,
    random,
    mayExist: options.keyMayExist ?? true,
  })
  return (action) => {
    if (action.type === 'Refence' || action.type === 'Rotate') {
      const ops = refenceOps(prefix, ownKey, session, value, action, waiting)
      // A Refence reads `.lock` and writes only its key: it need not wait for the turn.
      const sent =
        action.type === 'Rotate' ? txnInTurn(client, ops, fresh) : txnTold(client, ops, fresh)
      return sent.pipe(
        retryTransient(scheduler, random),
        map((result): ContenderEvent => {
          const ok =
            result.committed &&
            (action.type === 'Rotate' ||
              refenceKept(action, session, entryOf(result.results, lock), companions))
          return {
            type: 'refenced',
            ok,
            refencing: action.type,
            modifyIndex: ok ? writtenIndex(result.results, ownKey) : undefined,
          }
        }),
      )
    }
    if (action.type === 'TryAcquire') {
      const holders = [...action.view.liveHolders, session, ...companions]
      const ops: TxnOp[] = [
        // Only while this session still locks its key: never recreate a key Consul deleted.
        { verb: 'check-session', key: ownKey, session },
        // Each companion's key, taken by its session: a holder's session must lock a key under
        // the prefix, or every contender (Go's too) prunes it. A companion Consul no longer has
        // fails the lock, and the whole grant with it.
        ...companions.map((companion): TxnOp => ({
          verb: 'lock',
          key: contenderKey(prefix, companion),
          value,
          flags: COMPANION_FLAGS,
          session: companion,
        })),
        {
          verb: 'cas',
          key: lock,
          value: action.body,
          flags: SEMAPHORE_FLAGS,
          index: action.cas,
        },
        // The same write marks the key (the lock stays): its index is the fencing token, and
        // the waiter behind, which may long-poll this key, wakes.
        { verb: 'set', key: ownKey, value, flags: HOLDER_FLAGS },
      ]
      return txnInTurn(client, ops, fresh).pipe(
        retryTransient(scheduler, random),
        mergeMap((result) =>
          of<ContenderEvent>(
            result.committed
              ? {
                  type: 'cas-result',
                  ok: true,
                  holders,
                  modifyIndex: writtenIndex(result.results, lock),
                }
              : { type: 'cas-result', ok: false, holders },
          ),
        ),
      )
    }
    return takeKeyOfSession
  }
}

/**
 * Joins the queue in one request, for a contender whose session is new: its contender key (the
 * `NotContending` write, with its waiting flags) taken in a transaction that reads the prefix
 * right after it (`joinWithRead`).
 *
 * @example
 * joinQueue({ client, prefix: 'svc/lock', session, value: 'web-1' }).subscribe((seed) => ...)
 * @returns The prefix as of the join, or undefined; then completes.
 */
export function joinQueue(
  options: Omit<SemaphorePerformerOptions, 'scheduler' | 'random'>,
): Observable<KVSnapshot | undefined> {
  const { client, prefix, session, value } = options
  const key = contenderKey(prefix, session)
  const flags = waitingFlags(1 + (options.companions?.length ?? 0))
  return joinWithRead({ client, prefix, key, value, flags, session })
}
