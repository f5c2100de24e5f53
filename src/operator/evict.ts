import type { ConsulClient } from '../consul/client-api.js'
import type { KVEntry } from '../base/kv-snapshot.js'
import { lockKey } from '../core/keys/lock-key.js'
import { releaseFromLockBody } from '../core/lock-body/release-from-lock-body.js'
import { SemaphoreError, problemError } from '../base/semaphore-error.js'
import {
  MIN_SESSION_START,
  isFullSessionId,
  resolveSessionPrefix,
  sessionsAt,
} from '../core/semaphore/session-prefix.js'
import { sentences } from '../base/sentences.js'
import {
  CAS_ATTEMPTS,
  churnError,
  throwIfRefused,
  withOperatorClient,
  type OperatorCall,
} from './operator-call.js'
import { resolveContenderOptions } from '../options/contender-options.js'
import { serializable } from '../handle/serializable-state.js'
import { LOCK_FLAGS, SEMAPHORE_FLAGS } from '../base/flags.js'
import {
  OPERATOR_OPTION_NAMES,
  rejectUnknownOptions,
  type OptionNames,
} from '../options/known-options.js'

/**
 * Options of `evict`.
 *
 * @example
 * ```ts
 * const options: EvictOptions = { prefix: 'service/jobs', session: '4ca8e74b-6350-7587-addf-a18084928f3c' }
 * ```
 */
export interface EvictOptions {
  /** The prefix of the semaphore or leader lock. */
  readonly prefix: string
  /**
   * The session of the holder to evict, as `rxsem status` shows it: its full ID, or the start of
   * it (the 8 characters `rxsem run` and `rxsem watch` print; 4 at least) when no other session of
   * the prefix starts the same way.
   */
  readonly session: string
  /** A Consul client; default the process's shared client for the CONSUL_* variables. */
  readonly consul?: ConsulClient
  /** Gives up at once (SemaphoreError 'Aborted'), cancelling the call in flight or its retry. */
  readonly signal?: AbortSignal | undefined
}

/** The names of the options `evict` takes, checked against its options' interface. */
const EVICT_OPTION_NAMES = {
  ...OPERATOR_OPTION_NAMES,
  session: true,
} as const satisfies OptionNames<EvictOptions>

/**
 * What `evict` did.
 *
 * @example
 * ```ts
 * const { floor } = await evict({ prefix: 'service/jobs', session })
 * console.log(`refuse fencing tokens at or below ${floor} from the evicted holder`)
 * ```
 */
export interface Eviction {
  /** The prefix, as contenders normalise it. */
  readonly prefix: string
  /** The evicted session. */
  readonly session: string
  /**
   * 'semaphore': the session was taken out of `.lock`'s holders, then destroyed (which released
   * its contender key); 'leader': it held `.lock` itself (`consul lock`, `leaderElection`), and
   * was destroyed, which released `.lock`.
   */
  readonly lock: 'semaphore' | 'leader'
  /**
   * The fencing-token floor: `.lock`'s ModifyIndex after the eviction. The evicted holder's
   * fencing token is below it, and every later tenure's is above it.
   */
  readonly floor: bigint
}

/**
 * Takes a holder out of the semaphore or leader lock at `prefix`, whoever it is (a contender of
 * this library, `consul lock -n`, `consul lock`), and destroys its session.
 *
 * 1. Semaphore: remove the session from `.lock`'s holders by a CAS on its ModifyIndex (a lost
 *    CAS reads `.lock` again; a `.lock` it cannot read is never written over), then destroy
 *    the session, which releases its contender key. The holder sees itself no longer listed at
 *    its next read of the prefix: this library's contenders and Go's monitor both drop the slot.
 * 2. Leader lock (`.lock` held with `?acquire` by that session): destroy the session, which
 *    releases `.lock`; the next leader acquires it after the session's lock-delay.
 *
 * A session ID may be given in full or by its start: a start is looked up among the sessions of
 * the prefix (`.lock`'s holders and the contender keys), and one that is the start of none or of
 * several is refused with SemaphoreError 'NotHolder' naming them. A session that `.lock` neither
 * lists nor is held by gets SemaphoreError 'NotHolder' too, and nothing is written or destroyed.
 *
 * @example
 * ```ts
 * const eviction = await evict({ prefix: 'service/jobs', session, consul })
 * console.log(`evicted ${eviction.session}; fencing tokens from now on are above ${eviction.floor}`)
 * ```
 * @param options - Prefix, session, and optionally the client and a signal.
 * @returns What it did and the fencing-token floor; rejects with SemaphoreError: 'NotHolder',
 *   'InvalidOptions', 'Conflict', 'CorruptLock', 'PermissionDenied', 'Unreachable', 'NotConsul', 'TlsRejected',
 *   'Consul' (`.lock` changed under every one of its tries, or a refusal), or 'Aborted'.
 */
export async function evict(options: EvictOptions): Promise<Eviction> {
  rejectUnknownOptions(options, 'evict', EVICT_OPTION_NAMES)
  const { prefix } = resolveContenderOptions({ prefix: options.prefix }, 'rx-consul-semaphore')
  const typed = typeof options.session === 'string' ? options.session.trim() : ''
  if (typed === '') {
    throw new SemaphoreError(
      'InvalidOptions',
      'session must be the id of the session to evict, as `rxsem status` shows it; got an empty one.',
    )
  }
  const doing = `evicting session ${typed} from ${prefix}`
  const what = { doing, prefix }
  return withOperatorClient(options.consul, options.signal, what, async (client, calls) => {
    const key = lockKey(prefix)
    const session = isFullSessionId(typed)
      ? typed
      : await wholeSession(prefix, typed, async () => {
          const listed = await calls.call((s) =>
            client.kv.list(`${prefix}/`, { consistency: 'consistent', signal: s }),
          )
          return listed.entries
        })
    for (let lost = 0; lost < CAS_ATTEMPTS; lost++) {
      calls.checkAborted()
      const entry = await calls.call((s) =>
        client.kv.get(key, { consistency: 'consistent', signal: s }),
      )
      // 2. A leader lock, or a `.lock` that this very session holds with ?acquire.
      if (entry !== null && (entry.flags === LOCK_FLAGS || entry.session === session)) {
        if (entry.session !== session) throw notHolder(prefix, session, entry)
        await calls.call((s) => client.session.destroy(session, { signal: s }))
        const floor = await leaderFloor(client, calls.call, key, session)
        return serializable({ prefix, session, lock: 'leader' as const, floor })
      }
      // 1. A semaphore: `.lock` without this session, in the shape read.
      const snapshot = { index: entry?.modifyIndex ?? 1n, entries: entry === null ? [] : [entry] }
      const release = releaseFromLockBody(snapshot, { prefix, session })
      if (release.type === 'NotListed') throw notHolder(prefix, session, entry)
      if (release.type !== 'WriteRelease') throw problemError(release)
      // A transaction rather than a PUT: its answer carries the ModifyIndex the write made.
      const answer = await calls.call((s) =>
        client.kv.txn(
          [{ verb: 'cas', key, value: release.body, flags: SEMAPHORE_FLAGS, index: release.cas }],
          { signal: s },
        ),
      )
      if (answer.committed) {
        const floor = answer.results[0]?.modifyIndex ?? release.cas
        await calls.call((s) => client.session.destroy(session, { signal: s }))
        return serializable({ prefix, session, lock: 'semaphore' as const, floor })
      }
      throwIfRefused(answer.errors, doing, key, prefix)
      // Otherwise a lost CAS: another writer came first; read again.
    }
    throw churnError(key, `evict ${session}`)
  })
}

/**
 * `.lock`'s ModifyIndex once the destroyed session released it: the release is a write of
 * `.lock`. If `.lock` is gone (a session of behavior 'delete'), the index of the listing that
 * shows it gone; if the next leader took it already, just below that acquisition's index (the
 * release came before it).
 */
async function leaderFloor(
  client: ConsulClient,
  call: OperatorCall,
  key: string,
  evicted: string,
): Promise<bigint> {
  const listed = await call((s) => client.kv.list(key, { consistency: 'consistent', signal: s }))
  const after = listed.entries.find((e) => e.key === key)
  if (after === undefined) return listed.index
  if (after.session === undefined || after.session === '' || after.session === evicted) {
    return after.modifyIndex
  }
  return after.modifyIndex - 1n
}

/**
 * The session a short ID names among the sessions of `prefix` (its holders, and its contender
 * keys): throws NotHolder, writing nothing, when it names none or more than one.
 */
async function wholeSession(
  prefix: string,
  typed: string,
  list: () => Promise<readonly KVEntry[]>,
): Promise<string> {
  const match = resolveSessionPrefix(typed, sessionsAt(await list(), prefix))
  if (match.type === 'found') return match.session
  const status = `\`rxsem status --prefix ${prefix}\` shows them`
  if (match.type === 'ambiguous') {
    return Promise.reject(
      new SemaphoreError(
        'NotHolder',
        sentences(
          `session ${typed} is the start of ${match.candidates.length} sessions of ${prefix}: ` +
            `${match.candidates.join(', ')}; nothing was written`,
          `Give more of the ID, enough to name one of them, or the full ID; ${status}`,
        ),
      ),
    )
  }
  if (match.type === 'short') {
    return Promise.reject(
      new SemaphoreError(
        'NotHolder',
        sentences(
          `session ${typed} is too short to name a session: give at least ${MIN_SESSION_START} characters of its ID; nothing was written`,
          status,
        ),
      ),
    )
  }
  const there =
    match.known.length === 0
      ? `${prefix} has no sessions (no holder, no waiter)`
      : `the sessions of ${prefix} are ${match.known.join(', ')}`
  return Promise.reject(
    new SemaphoreError(
      'NotHolder',
      sentences(
        `no session of ${prefix} is ${typed} or starts with it: ${there}; nothing was written`,
        `Give the full session ID, or its start (such as the 8 characters \`rxsem watch\` and \`rxsem run\` print); ${status}`,
      ),
    ),
  )
}

function notHolder(prefix: string, session: string, lock: KVEntry | null): SemaphoreError {
  const found =
    lock === null
      ? `${prefix} has no .lock (no one holds)`
      : lock.flags === LOCK_FLAGS
        ? `${prefix}/.lock is a leader lock held by ${lock.session === undefined || lock.session === '' ? 'no one' : `session ${lock.session}`}`
        : `${prefix}/.lock does not list it as a holder`
  return new SemaphoreError(
    'NotHolder',
    `session ${session} is not a holder of ${prefix}: ${found}. Nothing was written. ` +
      `\`rxsem status --prefix ${prefix}\` shows the holders' sessions.`,
  )
}
