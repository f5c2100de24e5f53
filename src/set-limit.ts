import { setTimeout as sleep } from 'node:timers/promises'
import * as E from 'fp-ts/lib/Either.js'
import type { ConsulClient } from './consul/client-api.js'
import { BACKOFF, backoffDelay } from './consul/backoff.js'
import { acquireDefaultClient } from './consul/default-client.js'
import { isTransient, type ConsulError } from './consul/errors.js'
import { SEMAPHORE_FLAGS } from './consul/flags.js'
import { lockKey } from './core/keys/lock-key.js'
import { relimitLock, type Relimit } from './core/lock-body/relimit-lock.js'
import {
  PERMISSION_HINT,
  SemaphoreError,
  abortedError,
  fromConsulError,
  problemError,
} from './errors.js'
import { resolveContenderOptions, resolveLimit } from './options/contender-options.js'

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
  /** Gives up (SemaphoreError 'Aborted') between two tries. */
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
  let failures = 0
  for (let lost = 0; lost < ATTEMPTS;) {
    if (signal?.aborted === true) throw abortedError(signal, `setting the limit of ${prefix}`)
    const answer = await attempt(client, key, limit)
    if (E.isRight(answer)) {
      const { write, index } = answer.right
      if (index !== undefined) {
        return { prefix, previous: write.previous, limit, holders: write.holders, index }
      }
      lost++
      failures = 0
      continue
    }
    const error = answer.left
    if (error instanceof SemaphoreError) throw error
    if (!isTransient(error) || ++failures > 5) {
      throw fromConsulError(error, `setting the limit of ${prefix}`)
    }
    await sleep(backoffDelay(BACKOFF.write, failures, { error }), undefined, { signal }).catch(
      () => undefined,
    )
  }
  throw new SemaphoreError(
    'Consul',
    `${key} changed under each of ${ATTEMPTS} tries to set its limit (contenders acquiring and ` +
      'releasing all the time); nothing was written. Try again.',
  )
}

/**
 * One read of `.lock` and one CAS: the write and `.lock`'s new ModifyIndex, or no index when
 * another writer came first.
 */
async function attempt(
  client: ConsulClient,
  key: string,
  limit: number,
): Promise<E.Either<ConsulError | SemaphoreError, { write: Relimit; index: bigint | undefined }>> {
  const read = await client.kv.get(key, { consistency: 'consistent' })()
  if (E.isLeft(read)) return read
  const write = relimitLock(read.right ?? undefined, key, limit)
  if (E.isLeft(write)) return E.left(problemError(write.left))
  // Already so: no write, so no contender wakes for nothing.
  if (write.right.previous === limit) return E.right({ write: write.right, index: write.right.cas })
  // A transaction rather than a PUT: its answer carries the ModifyIndex the write made.
  const cas = await client.kv.txn([
    { verb: 'cas', key, value: write.right.body, flags: SEMAPHORE_FLAGS, index: write.right.cas },
  ])()
  if (E.isLeft(cas)) return cas
  if (cas.right.committed) {
    return E.right({
      write: write.right,
      index: cas.right.results[0]?.modifyIndex ?? write.right.cas,
    })
  }
  const what = cas.right.errors.map((e) => e.what).join('; ')
  if (/permission denied/i.test(what)) {
    return E.left(
      new SemaphoreError(
        'PermissionDenied',
        `setting the limit of ${key}: Consul refused the write (${what}). ${PERMISSION_HINT}`,
      ),
    )
  }
  // A lost CAS: another writer came first.
  return E.right({ write: write.right, index: undefined })
}
