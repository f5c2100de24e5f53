import { LOCK_FLAGS } from '../../base/flags.js'
import type { KVEntry, KVSnapshot } from '../../base/kv-snapshot.js'
import type { DecideStep } from '../contender/contender-state-model.js'
import type { Decision, SemaphoreView } from '../events.js'
import { lockKey } from '../keys/lock-key.js'
import { revokeKey } from '../keys/revoke-key.js'
import { readRevokeRequest } from '../revoke/revoke-request.js'
import { heldDecision } from '../semaphore/decide-in-view.js'
import { lockQueue } from './lock-queue.js'

/**
 * Who holds a single-key lock: the session on `<prefix>/.lock` and the key's value.
 *
 * @example
 * ```ts
 * election.leader$.subscribe((leader: Leader | null) => {
 *   console.log(leader === null ? 'no leader' : `${leader.value} (session ${leader.session})`)
 * })
 * ```
 */
export interface Leader {
  /** The session holding the key's lock. */
  readonly session: string
  /** The key's value decoded as UTF-8, or null when Consul stores it empty (`consul lock` does). */
  readonly value: string | null
}

/**
 * What `decideLeaderKey` needs besides the snapshot.
 *
 * @example
 * ```ts
 * const prefix = 'service/scheduler/leader'
 * const options: DecideLeaderKeyOptions = { prefix, session, value: 'node-a' }
 * const decision = decideLeaderKey(snapshot, options)
 * ```
 */
export interface DecideLeaderKeyOptions {
  /** The prefix all contenders agree on; the lock is `<prefix>/.lock`, as `consul lock` lays it out. */
  readonly prefix: string
  /** This contender's session id. */
  readonly session: string
  /** The value to write with the acquisition (shown to others by `leader$`). */
  readonly value: Uint8Array | string
  /**
   * Wait in this library's queue (`<prefix>/.queue/<session>`, `lockQueue`): only the first in line
   * tries the key. False for a contender that tries once (`tryLead`): it keeps no place, and tries
   * whenever the key is free, as Go's `Lock` does. Default false.
   */
  readonly queued?: boolean | undefined
  /**
   * Try a free key whatever the place in line: a waiter whose fairness grace ran out while the key
   * stood free (`decidePatiently`), the first in line having left it untried (its process dead,
   * its session not yet expired). Default false.
   */
  readonly ignoreRank?: boolean | undefined
}

const utf8 = new TextEncoder()
const fatalUtf8 = new TextDecoder('utf-8', { fatal: true })

/**
 * Reads the leader out of a prefix snapshot: the session holding `<prefix>/.lock` and the key's
 * value. A key carrying other flags than Consul's lock flags is not a lock (a semaphore's `.lock`,
 * a key written by hand), so nobody leads it. A value that is not UTF-8 reads as null.
 *
 * @example
 * ```ts
 * const prefix = 'service/scheduler/leader'
 * consul.watchPrefix(prefix).subscribe((event) => {
 *   if (event.type === 'snapshot') console.log(readLeaderKey(event.snapshot, prefix))
 * }) // { session: 'a1…', value: 'node-a' }, or null while nobody leads
 * ```
 * @param snapshot - Everything under the prefix at one index.
 * @param prefix - The lock's prefix.
 * @returns The leader, or null while nobody holds the lock.
 */
export function readLeaderKey(snapshot: KVSnapshot, prefix: string): Leader | null {
  const entry = leaderKeyEntryOf(snapshot, prefix)
  if (entry === undefined || entry.flags !== LOCK_FLAGS || entry.session === undefined) return null
  return { session: entry.session, value: decodeValue(entry.value) }
}

/**
 * Decides what a leader-election contender does next from one snapshot of its prefix: the
 * single-key algorithm of Consul's Go `Lock` (`api/lock.go`, and so `consul lock` without `-n`),
 * with a queue of this library's own beside the key that Go's `Lock` never reads, as a pure
 * function.
 *
 * 1. `Conflict`: the key exists with flags other than LOCK_FLAGS. A semaphore's `.lock`
 *    (SEMAPHORE_FLAGS, `consul lock -n N` or `semaphore()`) or a key written by hand or by a tool
 *    that sets no flags (0) is refused, never written over, exactly as Go's `Lock` refuses it
 *    ("Existing key does not match lock use"): adopting a flag-less key would make this library
 *    and `consul lock` disagree about the same prefix.
 * 2. `Held`: the key's session is this one (with the revoke request, if
 *    `<prefix>/.lock.revoke/<session>` asks it to give the lock back).
 * 3. `NotContending` (queued only): this contender's waiter key `<prefix>/.queue/<session>` is not
 *    in the snapshot, locked by its session, and the key is held or others wait: take it
 *    (LOCK_WAITER_FLAGS). With the key free and nobody in line it would be first: it tries first.
 * 4. `TryAcquire`: the key is missing or nobody holds it, and this contender is first in line
 *    among the live waiters (`lockQueue`: by arrival, keys with no session skipped), or does not
 *    queue, or its fairness grace is over (`ignoreRank`): acquire it with this session (txn `lock`, i.e. `?acquire=<session>`), `body` (this
 *    contender's value) and LOCK_FLAGS; a queued one deletes its waiter key in the same
 *    transaction. `cas` is not used by the acquisition (the session, not an index, serialises
 *    writers); it carries the key's ModifyIndex (0n when missing) so that a changed key makes a
 *    new action.
 * 5. `Wait`: another session holds the key (Go's or ours), or waiters of ours are ahead. `rank` is
 *    the place in line (undefined when not queued), `freeSlots` 1 while the key is free.
 *
 * Go's contenders keep no place: they race for the key whenever it is free, and our first in line
 * races with them on equal terms.
 *
 * The view has limit 1, `liveHolders` [leader] or [], `lockIndex` the key's ModifyIndex and
 * `waiting` the live waiters of ours, so the rest of the state machine (holding rules, fencing
 * token seen in a snapshot, the rank in `state$`) reads it as a semaphore of one slot.
 *
 * ```
 * .lock:     (none)   free     free       free         held by b    held by me   flags 0
 * in line:   first    first    second     no key, a    no key       -            -
 * decision:  T        T        W(1)       N            N            H            C
 * ```
 *
 * @example
 * ```ts
 * const prefix = 'service/scheduler/leader'
 * const decision = decideLeaderKey(snapshot, { prefix, session, value: 'node-a', queued: true })
 * if (decision.type === 'TryAcquire') {
 *   const key = lockKey(prefix)
 *   const answer = await consul.kv.txn([
 *     { verb: 'lock', key, value: decision.body, flags: LOCK_FLAGS, session },
 *     { verb: 'delete', key: waiterKey(prefix, session) },
 *   ])()
 * }
 * ```
 * @param snapshot - Everything under the prefix at one index.
 * @param options - Prefix, session, value, and whether it queues.
 * @returns The decision.
 */
export function decideLeaderKey(snapshot: KVSnapshot, options: DecideLeaderKeyOptions): Decision {
  const { prefix, session } = options
  const key = lockKey(prefix)
  const entry = leaderKeyEntryOf(snapshot, prefix)
  if (entry !== undefined && entry.flags !== LOCK_FLAGS) {
    return { type: 'Conflict', key, flags: entry.flags }
  }
  const holder = entry?.session
  const queue = options.queued === true ? lockQueue(snapshot, prefix, holder) : undefined
  const view: SemaphoreView = {
    limit: 1,
    shape: undefined,
    lockIndex: entry?.modifyIndex ?? 0n,
    liveHolders: holder === undefined ? [] : [holder],
    deadHolders: [],
    waiting: queue?.waiting ?? [],
    sharedHolders: [],
    nextTurn: queue === undefined || queue.waiting.length === 0 ? undefined : 0,
  }
  if (holder === session) {
    const revoke = revokeEntryOf(snapshot, prefix, session)
    return heldDecision(view, undefined, revoke && readRevokeRequest(revoke))
  }
  const freeSlots = holder === undefined ? 1 : 0
  let rank = queue && queue.waiting.findIndex((waiter) => waiter.session === session)
  if (rank === -1) {
    // Nobody in line and the key free: it would be first in line, so it tries before it queues.
    if (freeSlots === 0 || view.waiting.length > 0) return { type: 'NotContending', view }
    rank = 0
  }
  if (freeSlots === 0 || (rank !== undefined && rank > 0 && options.ignoreRank !== true)) {
    return { type: 'Wait', view, rank, freeSlots }
  }
  const body = typeof options.value === 'string' ? utf8.encode(options.value) : options.value
  return {
    type: 'TryAcquire',
    view,
    body,
    cas: view.lockIndex,
    ...(rank === undefined ? {} : { rank }),
  }
}

/**
 * `decideLeaderKey` as the core's injectable decide step, for `contenderStep`'s options (`decide`).
 *
 * @example
 * contenderStep(state, input, now, { prefix, limit: 1, fairness: false, decide: leaderKeyDecider('node-a', true) })
 * @param value - This contender's value, written with each acquisition.
 * @param queued - Whether it waits in line (`DecideLeaderKeyOptions.queued`); default false.
 * @returns A DecideStep that reads `ignoreRank` and ignores the semaphore-only options (limit,
 *   fairness).
 */
export function leaderKeyDecider(value: Uint8Array | string, queued = false): DecideStep {
  return (snapshot, { prefix, session, ignoreRank }) =>
    decideLeaderKey(snapshot, { prefix, session, value, queued, ignoreRank })
}

/** The revoke key of `session` in the snapshot (`evict` with a grace), if any. */
function revokeEntryOf(snapshot: KVSnapshot, prefix: string, session: string): KVEntry | undefined {
  const key = revokeKey(prefix, session)
  return snapshot.entries.find((entry) => entry.key === key)
}

function leaderKeyEntryOf(snapshot: KVSnapshot, prefix: string): KVEntry | undefined {
  const key = lockKey(prefix)
  return snapshot.entries.find((entry) => entry.key === key)
}

function decodeValue(value: Uint8Array | null): string | null {
  if (value === null) return null
  try {
    return fatalUtf8.decode(value)
  } catch {
    return null
  }
}
