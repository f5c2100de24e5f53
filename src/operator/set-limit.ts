import * as E from 'fp-ts/lib/Either.js'
import type { ConsulClient } from '../consul/client-api.js'
import { SEMAPHORE_FLAGS } from '../base/flags.js'
import type { TxnOp } from '../base/txn.js'
import { wakeOps } from '../core/release/release-ops.js'
import { agentTxnLimit } from '../consul/txn-limit.js'
import { waitersToWake } from '../core/semaphore/wake-waiters.js'
import { lockKey } from '../core/keys/lock-key.js'
import { relimitLockBody } from '../core/lock-body/relimit-lock-body.js'
import { problemError } from '../base/semaphore-error.js'
import { CAS_ATTEMPTS, churnError, throwIfRefused, withOperatorClient } from './operator-call.js'
import { resolveContenderOptions, resolveLimit } from '../options/contender-options.js'
import { serializable } from '../handle/serializable-state.js'
import {
  OPERATOR_OPTION_NAMES,
  rejectUnknownOptions,
  type OptionNames,
} from '../options/known-options.js'

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

/** The names of the options `setLimit` takes, checked against its options' interface. */
const SET_LIMIT_OPTION_NAMES = {
  ...OPERATOR_OPTION_NAMES,
  limit: true,
} as const satisfies OptionNames<SetLimitOptions>

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

/**
 * Changes the limit of the semaphore at `prefix` live, by a CAS of `<prefix>/.lock` that keeps its
 * holders and its shape: no one's slot is taken, and no acquisition or release in between is lost
 * (a lost CAS reads the prefix again). Contenders with `followLimit` take the new limit at their
 * next snapshot: a raise admits waiters at once (the same transaction writes the keys of the
 * waiters of this library it admits again as they are, which wakes those that long-poll only their
 * own key); a lowering lets the holders finish and admits no one until they are fewer than the new
 * limit. Contenders that do not follow it (and `consul lock -n` with the old limit) fail with
 * LimitConflict when they next try for a slot; those that hold keep their slot until they give it
 * back.
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
 *   'CorruptLock', 'PermissionDenied', 'Unreachable', 'NotConsul', 'TlsRejected', 'Consul' (`.lock` changed
 *   under every one of its tries, or a refusal), or 'Aborted'.
 */
export async function setLimit(options: SetLimitOptions): Promise<LimitChange> {
  rejectUnknownOptions(options, 'setLimit', SET_LIMIT_OPTION_NAMES)
  const { prefix } = resolveContenderOptions({ prefix: options.prefix }, 'rx-consul-semaphore')
  const limit = resolveLimit(options.limit)
  const key = lockKey(prefix)
  const doing = `setting the limit of ${prefix}`
  const what = { doing, prefix }
  return withOperatorClient(options.consul, options.signal, what, async (client, calls) => {
    for (let lost = 0; lost < CAS_ATTEMPTS; lost++) {
      calls.checkAborted()
      const listed = await calls.call((s) =>
        client.kv.list(`${prefix}/`, { consistency: 'consistent', signal: s }),
      )
      const entry = listed.entries.find((e) => e.key === key)
      const write = relimitLockBody(entry, key, limit)
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
      // A transaction rather than a PUT: its answer carries the ModifyIndex the write made. A
      // raise wakes the waiters of ours it admits.
      const { body, cas } = write.right
      const admitted =
        limit > (write.right.previous ?? limit) ? waitersToWake(listed, prefix, limit) : []
      // `.lock`'s CAS and two operations per waiter: as many waiters as the agent's transaction
      // takes (31 before Consul 1.14, 63 from it on); those beyond find their slot at their next
      // listing.
      const needed = 1 + 2 * admitted.length
      const room = await calls.call((s) => agentTxnLimit(client, needed, { signal: s }))
      const woken = admitted.slice(0, Math.floor((room.ops - 1) / 2))
      const ops: TxnOp[] = [
        { verb: 'cas', key, value: body, flags: SEMAPHORE_FLAGS, index: cas },
        ...wakeOps(woken),
      ]
      const answer = await calls.call((s) => client.kv.txn(ops, { signal: s }))
      if (answer.committed) return changed(answer.results[0]?.modifyIndex ?? cas)
      throwIfRefused(answer.errors, doing, key, prefix)
      // Otherwise a lost CAS (of `.lock`, or of a waiter's key): another writer came first; read
      // again.
    }
    throw churnError(key, 'set its limit')
  })
}
