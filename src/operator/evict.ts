import type { ConsulClient } from '../consul/client-api.js'
import { destroySession } from '../effects/release/destroy-session.js'
import type { KVEntry, KVSnapshot } from '../base/kv-snapshot.js'
import type { TxnOp } from '../base/txn.js'
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
  type OperatorCalls,
} from './operator-call.js'
import { revokeKey } from '../core/keys/revoke-key.js'
import { encodeRevokeRequest, type RevokeRequest } from '../core/revoke/revoke-request.js'
import { liveSessions } from '../core/semaphore/live-sessions.js'
import { durationMs, formatGoDuration } from '../consul/durations.js'
import { resolveContenderOptions, type Duration } from '../options/contender-options.js'
import { serializable } from '../handle/serializable-state.js'
import { HOLDER_FLAGS, LOCK_FLAGS, SEMAPHORE_FLAGS } from '../base/flags.js'
import { rewriteKeyOps, wakeOps } from '../core/release/release-ops.js'
import { handOffSlot } from '../core/semaphore/hand-off.js'
import { contenderKey } from '../core/keys/contender-key.js'
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
 * const options: EvictOptions = { prefix: 'service/jobs', session: '4ca8e74b', grace: '30s', reason: 'deploy' }
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
  /**
   * Ask the holder first, and force only if it has not given its slot back within this time: a
   * duration ('30s', or ms) up to 24h. Default 0: force at once. A holder of this library sees the
   * request in its state (`revokeRequested`; `withSlot` aborts its work's signal); a Go holder
   * (`consul lock`) cannot see it and is forced when the grace ends.
   */
  readonly grace?: Duration | undefined
  /** Why, shown to the holder with the request (`revokeRequested.reason`). */
  readonly reason?: string | undefined
  /** A Consul client; default the process's shared client for the CONSUL_* variables. */
  readonly consul?: ConsulClient
  /**
   * Gives up at once (SemaphoreError 'Aborted'), cancelling the call in flight or its retry; a
   * request to give the slot back is withdrawn.
   */
  readonly signal?: AbortSignal | undefined
}

/** The names of the options `evict` takes, checked against its options' interface. */
const EVICT_OPTION_NAMES = {
  ...OPERATOR_OPTION_NAMES,
  session: true,
  grace: true,
  reason: true,
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
   * 'semaphore': a slot of a semaphore, `.lock` listing the session as a holder; 'leader': the
   * session held `.lock` itself (`consul lock`, `leaderElection`).
   */
  readonly lock: 'semaphore' | 'leader'
  /**
   * 'forced': the session was taken out of `.lock`'s holders (semaphore) and destroyed, which
   * released its contender key or the leader lock. 'given-back': asked with a grace, the holder
   * gave its slot back before the grace ended, and nothing was forced (its session is its own).
   */
  readonly how: 'forced' | 'given-back'
  /**
   * The fencing-token floor: `.lock`'s ModifyIndex once the holder was out (forced: after the
   * eviction's own write; given back: as first seen without it). The evicted holder's fencing
   * tokens are below it, and the token of every tenure that begins after `evict` returns is above it.
   */
  readonly floor: bigint
}

/**
 * Takes a holder out of the semaphore or leader lock at `prefix`, whoever it is (a contender of
 * this library, `consul lock -n`, `consul lock`).
 *
 * 1. With a `grace`, ask first: write `<prefix>/.lock.revoke/<session>` under a session of the
 *    eviction's own (behavior 'delete', so that the request goes with it if this process dies),
 *    write the holder's contender key again as it is when it is this library's (which wakes a
 *    holder that long-polls only its key), then watch the prefix until the holder is out or the
 *    grace ends. A holder of this library sees the request in its next snapshot and may give its
 *    slot back; one that does is not forced ('given-back'). The request is withdrawn when `evict`
 *    returns, whatever happened.
 * 2. Force, semaphore: remove the session from `.lock`'s holders by a CAS on its ModifyIndex (a
 *    lost CAS reads the prefix again; a `.lock` it cannot read is never written over), then
 *    destroy the session, which releases its contender key. The holder sees itself no longer
 *    listed at its next read of the prefix: this library's contenders and Go's monitor both drop
 *    the slot. The same transaction writes the key of the first waiter in line again as it is,
 *    when that waiter is this library's and the freed slot is for it, which wakes it to take the
 *    slot (a Go waiter watches the prefix and needs no waking).
 * 3. Force, leader lock (`.lock` held with `?acquire` by that session): destroy the session, which
 *    releases `.lock`; the next leader acquires it after the session's lock-delay.
 *
 * A session ID may be given in full or by its start: a start is looked up among the sessions of
 * the prefix (`.lock`'s holders and the contender keys), and one that is the start of none or of
 * several is refused with SemaphoreError 'NotHolder' naming them. A session that `.lock` neither
 * lists nor is held by gets SemaphoreError 'NotHolder' too, and nothing is written or destroyed.
 *
 * @example
 * ```ts
 * const eviction = await evict({ prefix: 'service/jobs', session, grace: '30s', consul })
 * console.log(`${eviction.how}; fencing tokens from now on are above ${eviction.floor}`)
 * ```
 * @param options - Prefix, session, and optionally the grace, the reason, the client and a signal.
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
  const graceMs = options.grace === undefined ? 0 : durationMs(options.grace)
  if (graceMs === undefined || graceMs > MAX_GRACE_MS) {
    throw new SemaphoreError(
      'InvalidOptions',
      `grace ${JSON.stringify(options.grace)} must be a duration from 0 to 24h (e.g. "30s", or 30000 for ms).`,
    )
  }
  if (options.reason !== undefined && typeof options.reason !== 'string') {
    throw new SemaphoreError('InvalidOptions', 'reason must be a string, shown to the holder.')
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
    if (graceMs === 0) {
      const forced = await force(client, calls, prefix, session)
      if (forced.type === 'not-holder') throw notHolder(prefix, session, forced.lock)
      return forced.eviction
    }
    const lock = await calls.call((s) =>
      client.kv.get(key, { consistency: 'consistent', signal: s }),
    )
    const kind = readHolder(lock, prefix, session)?.kind
    if (kind === undefined) throw notHolder(prefix, session, lock)
    const request = { graceMs, reason: options.reason }
    const requester = await requestRevoke(client, calls, prefix, session, request)
    try {
      if (kind === 'semaphore') await wakeHolder(client, calls, prefix, session)
      const out = await waitUntilOut(client, calls, prefix, session, kind, graceMs)
      if (out !== undefined) return given(prefix, session, kind, out)
      const forced = await force(client, calls, prefix, session)
      // Out between the last look and the force: it gave the slot back just in time.
      return forced.type === 'not-holder'
        ? given(prefix, session, kind, forced.lock?.modifyIndex ?? 0n)
        : forced.eviction
    } finally {
      await withdraw(client, requester)
    }
  })
}

/** The longest grace `evict` takes: a day, the longest TTL a Consul session may have. */
const MAX_GRACE_MS = 86_400_000

/** A forced eviction's outcome: done, or the session turned out not to hold. */
type Forced =
  | { readonly type: 'evicted'; readonly eviction: Eviction }
  | { readonly type: 'not-holder'; readonly lock: KVEntry | null }

/** Steps 2 and 3 of `evict`: the holder taken out by force. */
async function force(
  client: ConsulClient,
  calls: OperatorCalls,
  prefix: string,
  session: string,
): Promise<Forced> {
  const key = lockKey(prefix)
  const doing = `evicting session ${session} from ${prefix}`
  for (let lost = 0; lost < CAS_ATTEMPTS; lost++) {
    calls.checkAborted()
    const listed = await calls.call((s) =>
      client.kv.list(`${prefix}/`, { consistency: 'consistent', signal: s }),
    )
    const entry = listed.entries.find((e) => e.key === key) ?? null
    const held = readHolder(entry, prefix, session)
    if (held === undefined) return { type: 'not-holder', lock: entry }
    // 3. A leader lock that this very session holds with ?acquire.
    if (held.kind === 'leader') {
      await calls.call((s) => client.session.destroy(session, { signal: s }))
      const floor = await leaderFloor(client, calls.call, key, session)
      return evicted({ prefix, session, lock: 'leader', how: 'forced', floor })
    }
    // 2. A semaphore: `.lock` without this session, in the shape read, and the waiter the freed
    // slot is for woken.
    const { release } = held
    const wake = waiterToWake(listed, prefix, session)
    const ops: TxnOp[] = [
      { verb: 'cas', key, value: release.body, flags: SEMAPHORE_FLAGS, index: release.cas },
      ...wakeOps(wake === undefined ? [] : [wake]),
    ]
    // A transaction rather than a PUT: its answer carries the ModifyIndex the write made.
    const answer = await calls.call((s) => client.kv.txn(ops, { signal: s }))
    if (answer.committed) {
      const floor = answer.results[0]?.modifyIndex ?? release.cas
      await calls.call((s) => client.session.destroy(session, { signal: s }))
      return evicted({ prefix, session, lock: 'semaphore', how: 'forced', floor })
    }
    throwIfRefused(answer.errors, doing, key, prefix)
    // Otherwise a lost CAS (of `.lock`, or of the waiter's key): another writer came first; read
    // again.
  }
  throw churnError(key, `evict ${session}`)
}

/**
 * The waiter that a forced eviction's freed slot is for, when it is one of this library's, first
 * in line, and admitted once the evicted session is out of `.lock` (as a release would hand it the
 * slot, `handOffSlot`): its key, to be written again as it is in the eviction's transaction. A
 * waiter alone in its process long-polls only its own key, and without the write it would see the
 * free slot only at its next recheck; woken, it lists the prefix and takes the slot by its own
 * CAS, so its fencing token is above the eviction's floor. A Go waiter first in line watches the
 * prefix itself, and is left to it.
 */
function waiterToWake(listed: KVSnapshot, prefix: string, session: string): KVEntry | undefined {
  // The limit `.lock` states: an operator knows no other.
  return handOffSlot(listed, { prefix, session, limit: 1, followLimit: true })?.heirEntry
}

function evicted(eviction: Eviction): Forced {
  return { type: 'evicted', eviction: serializable(eviction) }
}

function given(prefix: string, session: string, lock: Eviction['lock'], floor: bigint): Eviction {
  return serializable({ prefix, session, lock, how: 'given-back' as const, floor })
}

/**
 * What `session` holds of `prefix` by `.lock` alone: the leader lock (`.lock` a lock, or held with
 * `?acquire` by this session), a slot (`.lock` a semaphore that lists it: with the `.lock` that
 * leaves it out), or nothing. A `.lock` that cannot be read throws its prefix problem: nothing is
 * written over it.
 */
function readHolder(
  entry: KVEntry | null,
  prefix: string,
  session: string,
):
  | { readonly kind: 'leader' }
  | {
      readonly kind: 'semaphore'
      readonly release: { readonly body: Uint8Array; readonly cas: bigint }
    }
  | undefined {
  if (entry !== null && (entry.flags === LOCK_FLAGS || entry.session === session)) {
    return entry.session === session ? { kind: 'leader' } : undefined
  }
  const snapshot = { index: entry?.modifyIndex ?? 1n, entries: entry === null ? [] : [entry] }
  const release = releaseFromLockBody(snapshot, { prefix, session })
  if (release.type === 'NotListed') return undefined
  if (release.type !== 'WriteRelease') throw problemError(release)
  return { kind: 'semaphore', release }
}

/** The session under which a revoke request is written, and so withdrawn. */
interface Requester {
  readonly session: string
}

/**
 * Step 1 of `evict`: the request, `<prefix>/.lock.revoke/<session>` locked by a session of its own
 * with behavior 'delete'. That session's TTL outlasts the grace, with no renewal: if this process
 * dies, Consul deletes the request within twice the TTL. A request already there (another `evict`)
 * is left as it is, and this one waits all the same.
 */
async function requestRevoke(
  client: ConsulClient,
  calls: OperatorCalls,
  prefix: string,
  session: string,
  request: RevokeRequest,
): Promise<Requester> {
  const ttlMs = Math.min(
    MAX_GRACE_MS,
    Math.max(MIN_SESSION_TTL_MS, request.graceMs ?? 0) + REQUEST_TTL_MARGIN_MS,
  )
  const requester = await calls.call((s) =>
    client.session.create({
      name: `rxsem evict: revoke request for ${session}`,
      ttl: formatGoDuration(ttlMs),
      behavior: 'delete',
      lockDelay: 0,
      signal: s,
    }),
  )
  try {
    await calls.call((s) =>
      client.kv.put(revokeKey(prefix, session), encodeRevokeRequest(request), {
        acquire: requester,
        signal: s,
      }),
    )
  } catch (error) {
    await withdraw(client, { session: requester })
    throw error
  }
  return { session: requester }
}

/**
 * Step 1, continued: the holder's contender key written again as it is, at a new index (one
 * transaction: a CAS on its ModifyIndex to RENEWING_FLAGS and back to HOLDER_FLAGS, its value as
 * it was; Consul keeps the key's lock), when it is a holder of this library's key (HOLDER_FLAGS).
 * A holder alone in its process long-polls only that key (`watchTarget`): the write wakes it to
 * list the prefix, where it finds the request. Its fencing token is the one it took the slot
 * with. A key that changed meanwhile woke it already; a Go holder's key is left as it is (it
 * cannot see the request).
 */
async function wakeHolder(
  client: ConsulClient,
  calls: OperatorCalls,
  prefix: string,
  session: string,
): Promise<void> {
  const key = contenderKey(prefix, session)
  const entry = await calls.call((s) =>
    client.kv.get(key, { consistency: 'consistent', signal: s }),
  )
  if (entry === null || entry.session !== session || entry.flags !== HOLDER_FLAGS) return
  const ops = rewriteKeyOps(key, entry.value, HOLDER_FLAGS, entry.modifyIndex)
  await calls.call((s) => client.kv.txn(ops, { signal: s }))
}

/** Consul's shortest session TTL. */
const MIN_SESSION_TTL_MS = 10_000
/** How much longer than the grace the request's session lives, for the force after it. */
const REQUEST_TTL_MARGIN_MS = 60_000

/**
 * Withdraws a revoke request: destroys its session, which deletes the request (behavior
 * 'delete'). Runs after an abort too, so it takes no signal; a transient failure is retried as
 * every release call is, and one that lasts is left to the session's TTL.
 */
async function withdraw(client: ConsulClient, requester: Requester): Promise<void> {
  await destroySession({ client, session: requester.session })
}

/**
 * Watches the prefix (blocking queries) until `session` no longer holds what it held, or until
 * `graceMs` has passed: `.lock`'s ModifyIndex as first seen without it (the floor), or undefined
 * when the grace ended first. A semaphore holder is out when `.lock` no longer lists it or its
 * session locks no key any more (it is dead, and the next contender prunes it).
 */
async function waitUntilOut(
  client: ConsulClient,
  calls: OperatorCalls,
  prefix: string,
  session: string,
  kind: Eviction['lock'],
  graceMs: number,
): Promise<bigint | undefined> {
  const key = lockKey(prefix)
  const deadline = Date.now() + graceMs
  let index: bigint | undefined
  for (;;) {
    const left = deadline - Date.now()
    if (left <= 0) return undefined
    const listed = await calls.call((s) =>
      client.kv.list(`${prefix}/`, {
        ...(index === undefined ? { consistency: 'consistent' as const } : { index, waitMs: left }),
        signal: s,
      }),
    )
    index = listed.index
    const lock = listed.entries.find((e) => e.key === key) ?? null
    const still =
      kind === 'leader'
        ? lock?.session === session
        : readHolder(lock, prefix, session) !== undefined &&
          liveSessions(listed.entries).has(session)
    if (!still) return lock?.modifyIndex ?? listed.index
  }
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
