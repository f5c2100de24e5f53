import * as E from 'fp-ts/lib/Either.js'
import type { ConsulClient, TxnOp } from '../consul/client-api.js'
import { agentTxnLimit } from '../consul/txn-limit.js'
import type { KVEntry } from '../base/kv-snapshot.js'
import { contenderKey } from '../core/keys/contender-key.js'
import { lockKey } from '../core/keys/lock-key.js'
import { encodeLockBody } from '../core/lock-body/encode-lock-body.js'
import { readLockBody, type ReadLockBody } from '../core/lock-body/read-lock-body.js'
import { liveSessions } from '../core/semaphore/live-sessions.js'
import { DRAIN_VALUE_BYTES, drainSessions } from '../core/semaphore/drain-keys.js'
import { SemaphoreError, problemError } from '../base/semaphore-error.js'
import {
  CAS_ATTEMPTS,
  churnError,
  throwIfRefused,
  withOperatorClient,
  type OperatorCalls,
} from './operator-call.js'
import { resolveContenderOptions, resolveLimit } from '../options/contender-options.js'
import { serializable } from '../handle/serializable-state.js'
import { LOCK_FLAGS, SEMAPHORE_FLAGS } from '../base/flags.js'
import {
  OPERATOR_OPTION_NAMES,
  rejectUnknownOptions,
  type OptionNames,
} from '../options/known-options.js'

export { DRAIN_VALUE } from '../core/semaphore/drain-keys.js'

/**
 * Options of `drain`.
 *
 * @example
 * ```ts
 * const options: DrainOptions = { prefix: 'service/jobs', signal: AbortSignal.timeout(5000) }
 * ```
 */
export interface DrainOptions {
  /** The semaphore's prefix. */
  readonly prefix: string
  /**
   * The semaphore's limit. Needed only when the prefix has no `.lock` yet (the drain then
   * creates one stating it); when given, a `.lock` that states another is refused
   * (LimitConflict).
   */
  readonly limit?: number | undefined
  /** A Consul client; default the process's shared client for the CONSUL_* variables. */
  readonly consul?: ConsulClient
  /** Gives up at once (SemaphoreError 'Aborted'); the sessions it made are destroyed. */
  readonly signal?: AbortSignal | undefined
}

/** The names of the options `drain` takes, checked against its options' interface. */
const DRAIN_OPTION_NAMES = {
  ...OPERATOR_OPTION_NAMES,
  limit: true,
} as const satisfies OptionNames<DrainOptions>

/** Options of `liftDrain`. */
export interface LiftDrainOptions {
  /** The semaphore's prefix. */
  readonly prefix: string
  /** A Consul client; default the process's shared client for the CONSUL_* variables. */
  readonly consul?: ConsulClient
  /** Gives up at once (SemaphoreError 'Aborted'). */
  readonly signal?: AbortSignal | undefined
}

/** The names of the options `liftDrain` takes, checked against its options' interface. */
const LIFT_DRAIN_OPTION_NAMES = {
  ...OPERATOR_OPTION_NAMES,
} as const satisfies OptionNames<LiftDrainOptions>

/**
 * What `drain` did.
 *
 * @example
 * ```ts
 * const drained = await drain({ prefix: 'service/jobs' })
 * console.log(`${drained.holders} holders finish; no one is admitted until the drain is lifted`)
 * ```
 */
export interface Drain {
  /** The prefix, as contenders normalise it. */
  readonly prefix: string
  /** The limit `.lock` states. */
  readonly limit: number
  /** The drain's sessions `.lock` lists now, one per slot of the limit. */
  readonly sessions: readonly string[]
  /** How many of them this call made: 0 when the prefix was drained already (nothing written). */
  readonly added: number
  /** Holders other than the drain that `.lock` lists and that are alive: they hold until they release. */
  readonly holders: number
  /** `.lock`'s ModifyIndex now. */
  readonly index: bigint
}

/**
 * What `liftDrain` did.
 *
 * @example
 * ```ts
 * const lifted = await liftDrain({ prefix: 'service/jobs' })
 * if (lifted.sessions.length === 0) console.log('was not drained')
 * ```
 */
export interface DrainLift {
  /** The prefix, as contenders normalise it. */
  readonly prefix: string
  /** The drain's sessions it destroyed and took out of `.lock`; empty when it was not drained. */
  readonly sessions: readonly string[]
  /** `.lock`'s ModifyIndex after its write; undefined when it wrote nothing to `.lock`. */
  readonly index: bigint | undefined
}

/**
 * Drains the semaphore at `prefix`: its holders keep their slots until they release, and no one
 * is admitted (this library's contenders, `consul lock -n`) until `liftDrain`. Waiters keep
 * waiting; none fails.
 *
 * The drain holds every slot itself, as a contender would: it makes one session per slot of the
 * limit (named "rxsem drain of <prefix>", with no TTL and no health checks, so it lasts until
 * lifted, whatever becomes of the process that made it), locks each one's contender key
 * `<prefix>/<session>` (value DRAIN_VALUE), and adds them all to `.lock`'s holders in the same
 * transaction, a CAS on its ModifyIndex. The holders then number more than the limit, and every
 * contender waits while they are at least the limit, as Go's `Semaphore.Acquire` does. The limit
 * is not changed: that would make `consul lock -n` fail with a limit conflict.
 *
 * Draining a drained prefix writes nothing (and adds sessions only if the limit was raised
 * since). A leader lock (`consul lock` without -n) is refused with 'Conflict'; a prefix
 * without `.lock` is drained only when `limit` says its limit.
 *
 * @example
 * ```ts
 * const drained = await drain({ prefix: 'service/jobs', consul })
 * // ... the holders finish; deploy; then:
 * await liftDrain({ prefix: 'service/jobs', consul })
 * ```
 * @param options - Prefix, and optionally the limit, the client and a signal.
 * @returns What it did; rejects with SemaphoreError: 'InvalidOptions', 'Conflict',
 *   'LimitConflict', 'CorruptLock', 'PermissionDenied', 'Unreachable', 'NotConsul', 'TlsRejected', 'Consul', or
 *   'Aborted'. On a rejection, the sessions it made are destroyed again.
 */
export async function drain(options: DrainOptions): Promise<Drain> {
  rejectUnknownOptions(options, 'drain', DRAIN_OPTION_NAMES)
  const { prefix } = resolveContenderOptions({ prefix: options.prefix }, 'rx-consul-semaphore')
  const given = options.limit === undefined ? undefined : resolveLimit(options.limit)
  const doing = `draining ${prefix}`
  const what = { doing, prefix }
  return withOperatorClient(options.consul, options.signal, what, async (client, calls) => {
    const key = lockKey(prefix)
    // 1. Read the prefix: the limit, and the drain sessions there already.
    const listed = await calls.call((s) =>
      client.kv.list(`${prefix}/`, { consistency: 'consistent', signal: s }),
    )
    const lock = readDrainable(prefix, listed.entries, given)
    const limit = lock.record?.limit ?? given
    if (limit === undefined) {
      throw new SemaphoreError(
        'InvalidOptions',
        `${prefix} has no .lock yet, so its limit is unknown; nothing was written. Give its ` +
          'limit (option limit) to drain it.',
      )
    }
    const present = drainSessions(listed.entries, prefix)
    const listedNow = new Set(lock.record?.holders ?? [])
    if (present.length >= limit && present.every((s) => listedNow.has(s))) {
      return drained(prefix, limit, present, 0, listed.entries, lock.record?.holders ?? [], lock)
    }
    // 2. One session per missing slot; destroyed again if the drain does not get written.
    const made: string[] = []
    try {
      for (let i = present.length; i < limit; i++) {
        calls.checkAborted()
        made.push(
          await calls.call((s) =>
            client.session.create({
              name: `rxsem drain of ${prefix}`,
              behavior: 'delete',
              lockDelay: 0,
              nodeChecks: [],
              signal: s,
            }),
          ),
        )
      }
      // 3. Their keys and `.lock` listing them, in one transaction when they fit in the agent's
      // limit (64 operations before Consul 1.14, 128 from it on).
      const pending = [...made]
      const maxOps = (
        await calls.call((s) => agentTxnLimit(client, made.length + 1, { signal: s }))
      ).ops
      const lockOp = (session: string): TxnOp => ({
        verb: 'lock',
        key: contenderKey(prefix, session),
        value: DRAIN_VALUE_BYTES,
        flags: SEMAPHORE_FLAGS,
        session,
      })
      while (pending.length > maxOps - 1) {
        const batch = pending.splice(0, maxOps)
        await commit(calls, client, batch.map(lockOp), doing, prefix)
      }
      let current: ReadLockBody = lock
      for (let lost = 0; lost < CAS_ATTEMPTS; lost++) {
        calls.checkAborted()
        const holders = unique([...(current.record?.holders ?? []), ...present, ...made])
        const body = encodeLockBody({
          limit: current.record?.limit ?? limit,
          holders,
          shape: current.record?.shape ?? 'go-map',
        })
        const answer = await calls.call((s) =>
          client.kv.txn(
            [
              ...pending.map(lockOp),
              { verb: 'cas', key, value: body, flags: SEMAPHORE_FLAGS, index: current.lockIndex },
            ],
            { signal: s },
          ),
        )
        if (answer.committed) {
          const index = answer.results.find((r) => r.key === key)?.modifyIndex ?? current.lockIndex
          const after = { ...current, lockIndex: index }
          return drained(
            prefix,
            limit,
            [...present, ...made],
            made.length,
            listed.entries,
            holders,
            after,
          )
        }
        throwIfRefused(answer.errors, doing, `${prefix}/`, prefix)
        if (answer.errors.some((e) => e.opIndex !== pending.length)) {
          throw new SemaphoreError(
            'Consul',
            `${doing}: Consul rolled the write back (${answer.errors.map((e) => e.what).join('; ')}). Nothing was written.`,
          )
        }
        // A lost CAS: another writer came first; read `.lock` again.
        const entry = await calls.call((s) =>
          client.kv.get(key, { consistency: 'consistent', signal: s }),
        )
        current = readDrainable(prefix, entry === null ? [] : [entry], given)
      }
      throw churnError(key, 'drain it')
    } catch (error) {
      await destroyAll(client, made)
      throw error
    }
  })
}

/**
 * Lifts the drain of the semaphore at `prefix`: destroys the drain's sessions (which deletes
 * their contender keys) and takes them out of `.lock`'s holders by a CAS, so waiters are admitted
 * at once. A prefix that is not drained is left as it is (`sessions` empty).
 *
 * @example
 * ```ts
 * const { sessions } = await liftDrain({ prefix: 'service/jobs', consul })
 * ```
 * @param options - Prefix, and optionally the client and a signal.
 * @returns What it did; rejects with SemaphoreError: 'InvalidOptions', 'CorruptLock',
 *   'PermissionDenied', 'Unreachable', 'NotConsul', 'TlsRejected', 'Consul', or 'Aborted'.
 */
export async function liftDrain(options: LiftDrainOptions): Promise<DrainLift> {
  rejectUnknownOptions(options, 'liftDrain', LIFT_DRAIN_OPTION_NAMES)
  const { prefix } = resolveContenderOptions({ prefix: options.prefix }, 'rx-consul-semaphore')
  const doing = `lifting the drain of ${prefix}`
  const what = { doing, prefix }
  return withOperatorClient(options.consul, options.signal, what, async (client, calls) => {
    const key = lockKey(prefix)
    const listed = await calls.call((s) =>
      client.kv.list(`${prefix}/`, { consistency: 'consistent', signal: s }),
    )
    const sessions = drainSessions(listed.entries, prefix)
    if (sessions.length === 0) return serializable({ prefix, sessions, index: undefined })
    // 1. Destroying the sessions deletes their keys: every contender now sees them dead.
    for (const session of sessions) {
      calls.checkAborted()
      await calls.call((s) => client.session.destroy(session, { signal: s }))
    }
    // 2. Their keys, in case one was left (a session whose behavior is not 'delete'), as few
    // transactions as the agent's limit allows.
    const maxOps = (await calls.call((s) => agentTxnLimit(client, sessions.length, { signal: s })))
      .ops
    for (let i = 0; i < sessions.length; i += maxOps) {
      const ops = sessions
        .slice(i, i + maxOps)
        .map((session): TxnOp => ({ verb: 'delete', key: contenderKey(prefix, session) }))
      await commit(calls, client, ops, doing, prefix)
    }
    // 3. `.lock` without them (contenders would prune them anyway; this leaves it tidy).
    const gone = new Set(sessions)
    let entry: KVEntry | null = listed.entries.find((e) => e.key === key) ?? null
    for (let lost = 0; lost < CAS_ATTEMPTS; lost++) {
      calls.checkAborted()
      if (entry === null || entry.flags === LOCK_FLAGS) break
      const read = readLockBody(entry, key)
      if (E.isLeft(read)) throw problemError(read.left)
      const { record, lockIndex } = read.right
      if (record === undefined || !record.holders.some((h) => gone.has(h))) break
      const body = encodeLockBody({
        ...record,
        holders: record.holders.filter((h) => !gone.has(h)),
      })
      const answer = await calls.call((s) =>
        client.kv.txn(
          [{ verb: 'cas', key, value: body, flags: SEMAPHORE_FLAGS, index: lockIndex }],
          {
            signal: s,
          },
        ),
      )
      if (answer.committed) {
        return serializable({
          prefix,
          sessions,
          index: answer.results[0]?.modifyIndex ?? lockIndex,
        })
      }
      throwIfRefused(answer.errors, doing, `${prefix}/`, prefix)
      entry = await calls.call((s) => client.kv.get(key, { consistency: 'consistent', signal: s }))
    }
    return serializable({ prefix, sessions, index: undefined })
  })
}

/** `.lock` as a drain may write it: a semaphore's, readable, of the given limit if any. */
function readDrainable(
  prefix: string,
  entries: readonly KVEntry[],
  limit: number | undefined,
): ReadLockBody {
  const key = lockKey(prefix)
  const entry = entries.find((e) => e.key === key)
  if (entry?.flags === LOCK_FLAGS) {
    throw new SemaphoreError(
      'Conflict',
      `${key} is a leader lock (\`consul lock\` without -n, or a leader election): it has one ` +
        'holder and no queue that a drain could hold back, so nothing was written. To take the ' +
        `lock from its holder, evict it (\`rxsem evict --prefix ${prefix} --session <id>\`).`,
    )
  }
  const read = readLockBody(entry, key, limit)
  if (E.isLeft(read)) throw problemError(read.left)
  return read.right
}

function drained(
  prefix: string,
  limit: number,
  sessions: readonly string[],
  added: number,
  entries: readonly KVEntry[],
  listed: readonly string[],
  lock: ReadLockBody,
): Drain {
  const live = liveSessions(entries)
  const mine = new Set(sessions)
  const holders = listed.filter((h) => live.has(h) && !mine.has(h)).length
  return serializable({ prefix, limit, sessions, added, holders, index: lock.lockIndex })
}

/** Commits `ops`, which only a refusal can roll back. */
async function commit(
  calls: OperatorCalls,
  client: ConsulClient,
  ops: readonly TxnOp[],
  doing: string,
  prefix: string,
): Promise<void> {
  const answer = await calls.call((s) => client.kv.txn(ops, { signal: s }))
  if (!answer.committed) {
    throwIfRefused(answer.errors, doing, `${prefix}/`, prefix)
    throw new SemaphoreError(
      'Consul',
      `${doing}: Consul rolled the write back (${answer.errors.map((e) => e.what).join('; ')}).`,
    )
  }
}

/** Destroys sessions the drain made and did not get listed; best effort, whatever the signal. */
async function destroyAll(client: ConsulClient, sessions: readonly string[]): Promise<void> {
  await Promise.all(
    sessions.map((session) =>
      client.session.destroy(session, { signal: AbortSignal.timeout(5000) })(),
    ),
  )
}

const unique = (ids: readonly string[]): string[] => [...new Set(ids)]
