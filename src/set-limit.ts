import * as E from 'fp-ts/lib/Either.js'
import type * as TE from 'fp-ts/lib/TaskEither.js'
import {
  NEVER,
  asyncScheduler,
  firstValueFrom,
  fromEvent,
  mergeMap,
  raceWith,
  throwError,
  type Observable,
} from 'rxjs'
import type { ConsulClient } from './consul/client-api.js'
import { acquireDefaultClient } from './consul/default-client.js'
import type { ConsulError } from './consul/errors.js'
import { SEMAPHORE_FLAGS } from './shared/flags.js'
import { lockKey } from './core/keys/lock-key.js'
import { relimitLockBody } from './core/lock-body/relimit-lock-body.js'
import { fromCall, isConsulError, orThrow, retryTransient } from './effects/call-policy.js'
import {
  PERMISSION_HINT,
  SemaphoreError,
  abortedError,
  fromConsulError,
  problemError,
} from './errors.js'
import { resolveContenderOptions, resolveLimit } from './options/contender-options.js'
import { serializable } from './serializable-state.js'

/**
 * Options of `setLimit`.
 *
 * @example
 * ```ts
 * const options: SetLimitOptions = { prefix: 'service/jobs', limit: 3, signal: AbortSignal.timeout(5000) }
 * ```
 */
export interface SetLimitOptions {
  /** The semaphore's prefix. */
  readonly prefix: string
  /** The new limit, a whole number of at least 1. */
  readonly limit: number
  /** A Consul client; default the process's shared client for the CONSUL_* variables. */
  readonly consul?: ConsulClient
  /** Gives up at once (SemaphoreError 'Aborted'), cancelling the call in flight or its retry. */
  readonly signal?: AbortSignal | undefined
}

/**
 * What `setLimit` changed.
 *
 * @example
 * ```ts
 * const { previous, limit, holders } = await setLimit({ prefix: 'service/jobs', limit: 2 })
 * if (holders > limit) console.log(`${holders} hold; no one is admitted until fewer than ${limit} do`)
 * ```
 */
export interface LimitChange {
  /** The prefix, as contenders normalise it. */
  readonly prefix: string
  /** The limit `.lock` stated before; undefined when the prefix had no `.lock`. */
  readonly previous: number | undefined
  /** The limit it states now. */
  readonly limit: number
  /** How many holders `.lock` lists now (unchanged by the write). */
  readonly holders: number
  /** `.lock`'s ModifyIndex after the write: later acquisitions have larger fencing tokens. */
  readonly index: bigint
}

/** CAS writes lost to other writers before giving up on a churning `.lock`. */
const ATTEMPTS = 10

/**
 * Changes the limit of the semaphore at `prefix` live, by a CAS of `<prefix>/.lock` that keeps its
 * holders and its shape: no one's slot is taken, and no acquisition or release in between is lost
 * (a lost CAS reads `.lock` again). Contenders with `followLimit` take the new limit at their next
 * snapshot: a raise admits waiters at once; a lowering lets the holders finish and admits no one
 * until they are fewer than the new limit. Contenders that do not follow it (and `consul lock -n`
 * with the old limit) fail with LimitConflict when they next try for a slot; those that hold keep
 * their slot until they give it back.
 *
 * Without a `.lock` (no one ever held), it creates one with no holders, which contenders then
 * find. It never writes over a `.lock` it cannot read or of another tool.
 *
 * @example
 * ```ts
 * const change = await setLimit({ prefix: 'service/jobs', limit: 3, consul })
 * console.log(`limit ${change.previous} -> ${change.limit}`)
 * ```
 * @param options - Prefix, new limit, and optionally the client and a signal.
 * @returns What changed; rejects with SemaphoreError: 'InvalidOptions', 'Conflict',
 *   'CorruptLock', 'PermissionDenied', 'Unreachable', 'NotConsul', 'Consul' (`.lock` changed
 *   under every one of its tries, or a refusal), or 'Aborted'.
 */
export async function setLimit(options: SetLimitOptions): Promise<LimitChange> {
  const { prefix } = resolveContenderOptions({ prefix: options.prefix }, 'rx-consul-semaphore')
  const limit = resolveLimit(options.limit)
  const lease = options.consul === undefined ? acquireDefaultClient() : undefined
  const client = options.consul ?? (lease as NonNullable<typeof lease>).client
  try {
    return await relimit(client, prefix, limit, options.signal)
  } finally {
    await lease?.release()
  }
}

async function relimit(
  client: ConsulClient,
  prefix: string,
  limit: number,
  signal: AbortSignal | undefined,
): Promise<LimitChange> {
  const key = lockKey(prefix)
  const doing = `setting the limit of ${prefix}`
  // An abort ends the call in flight, or the wait before its retry, at once.
  const aborted$: Observable<never> =
    signal === undefined
      ? NEVER
      : fromEvent(signal, 'abort').pipe(
          mergeMap(() => throwError(() => abortedError(signal, doing))),
        )
  const call = <A>(run: (signal: AbortSignal) => TE.TaskEither<ConsulError, A>): Promise<A> =>
    firstValueFrom(
      fromCall(run).pipe(mergeMap(orThrow), retryTransient(asyncScheduler), raceWith(aborted$)),
    )
  // Each Consul call's transient failures are retried as every write of the library is.
  try {
    for (let lost = 0; lost < ATTEMPTS; lost++) {
      if (signal?.aborted === true) throw abortedError(signal, doing)
      const entry = await call((s) => client.kv.get(key, { consistency: 'consistent', signal: s }))
      const write = relimitLockBody(entry ?? undefined, key, limit)
      if (E.isLeft(write)) throw problemError(write.left)
      const changed = (index: bigint): LimitChange =>
        serializable({
          prefix,
          previous: write.right.previous,
          limit,
          holders: write.right.holders,
          index,
        })
      // Already so: no write, so no contender wakes for nothing.
      if (write.right.previous === limit) return changed(write.right.cas)
      // A transaction rather than a PUT: its answer carries the ModifyIndex the write made.
      const { body, cas } = write.right
      const answer = await call((s) =>
        client.kv.txn([{ verb: 'cas', key, value: body, flags: SEMAPHORE_FLAGS, index: cas }], {
          signal: s,
        }),
      )
      if (answer.committed) return changed(answer.results[0]?.modifyIndex ?? cas)
      const what = answer.errors.map((e) => e.what).join('; ')
      if (/permission denied/i.test(what)) {
        throw new SemaphoreError(
          'PermissionDenied',
          `${doing}: Consul refused the write of ${key} (${what}). ${PERMISSION_HINT}`,
        )
      }
      // Otherwise a lost CAS: another writer came first; read again.
    }
  } catch (error) {
    throw isConsulError(error) ? fromConsulError(error, doing) : error
  }
  throw new SemaphoreError(
    'Consul',
    `${key} changed under each of ${ATTEMPTS} tries to set its limit (contenders acquiring and ` +
      'releasing all the time); nothing was written. Try again.',
  )
}
