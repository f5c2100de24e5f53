/**
 * What a prefix looks like from one snapshot, for `rxsem status` and `rxsem watch`: the semaphore
 * core's own reading (readLockBody, pruneHolders, liveSessions, waitingContenders), plus the
 * `consul lock` leader lock, which the core refuses as a conflict but an operator wants to see.
 */
import * as E from 'fp-ts/lib/Either.js'
import { LOCK_FLAGS } from '../../base/flags.js'
import type { KVEntry, KVSnapshot } from '../../base/kv-snapshot.js'
import { contenderKey } from '../../core/keys/contender-key.js'
import { decodeLockBody } from '../../core/lock-body/decode-lock-body.js'
import type { LockBodyShape, PrefixProblem } from '../../core/events.js'
import { liveSessions } from '../../core/semaphore/live-sessions.js'
import { lockKey } from '../../core/keys/lock-key.js'
import { lockQueue } from '../../core/leader-key/lock-queue.js'
import { revokeKey } from '../../core/keys/revoke-key.js'
import { readRevokeRequest, type RevokeRequest } from '../../core/revoke/revoke-request.js'
import { pruneHolders } from '../../core/semaphore/prune-holders.js'
import { readLockBody } from '../../core/lock-body/read-lock-body.js'
import { waitingContenders } from '../../core/semaphore/waiting-contenders.js'

/** A `.lock` body shape, or 'lock' for the single key of `consul lock` without `-n`. */
export type StatusShape = LockBodyShape | 'lock'

export interface HolderStatus {
  readonly session: string
  /** False for a holder `.lock` still lists whose session no longer holds its contender key. */
  readonly alive: boolean
  readonly value: string | null
  /** The session's name (`session.info`), null when unknown. */
  readonly name: string | null
  /** A request that it give its slot back (`rxsem evict --grace`), while one is there; else null. */
  readonly revoke: RevokeRequest | null
}

export interface WaiterStatus {
  readonly session: string
  /** How many are served before it (0: it is next). */
  readonly rank: number
  readonly value: string | null
  readonly name: string | null
  /**
   * With `--sample` only: how long it may still wait (ms), rank + 1 times the mean interval
   * between the hand-overs seen during the sample; null when fewer than two were seen.
   */
  readonly estimatedWaitMs?: number | null
}

/** The semaphore at a prefix, as `rxsem status --json` prints it. */
export interface PrefixStatus {
  readonly prefix: string
  /** The limit `.lock` records (1 for a leader lock), else the expected one, else null. */
  readonly limit: number | null
  /** null while there is no `.lock` (or it is empty). */
  readonly shape: StatusShape | null
  /** Live holders first, then dead ones, each in listed order. */
  readonly holders: readonly HolderStatus[]
  /**
   * In the order they will be served. For a leader lock (shape 'lock'), the waiters of this
   * library in line (`<prefix>/.queue/<session>`), or null when there are none: `consul lock`'s
   * waiters write nothing under the prefix, so no one can list or count them (`waitingNote` says
   * so).
   */
  readonly waiting: readonly WaiterStatus[] | null
  /** For a leader lock: why `waiting` is null, or whom it leaves out. */
  readonly waitingNote?: string
}

/** Why the waiters of a leader lock are not shown: they are not in Consul's KV. */
export const LEADER_WAITERS_NOTE =
  'contenders waiting for a leader lock (consul lock without -n, rxsem run --leader --timeout 0, ' +
  "tryLead) write nothing under the prefix until they hold it (Consul's lock recipe), " +
  'so they cannot be listed or counted; waiters of rxsem run --leader and leaderElection are ' +
  'listed while they wait in line'

/** Whom the waiters of a leader lock that are listed leave out. */
export const LEADER_QUEUE_NOTE =
  'these are the waiters in line of rxsem run --leader and leaderElection; waiters of consul lock ' +
  '(without -n) write nothing under the prefix, so they are not listed or counted'

const utf8 = new TextDecoder('utf-8')
const text = (entry: KVEntry | undefined): string | null =>
  entry?.value == null ? null : utf8.decode(entry.value)

/**
 * Reads the prefix's semaphore (or leader lock) from one snapshot; names are left null.
 *
 * @example
 * prefixStatus(snapshot, 'service/db/lock') // right({ limit: 2, shape: 'go-map', holders: [...], ... })
 * @param snapshot - The listing of `<prefix>/`.
 * @param prefix - The prefix, without a trailing '/'.
 * @param expectedLimit - The limit the user expects; a `.lock` with another one is a LimitConflict.
 * @returns The status, or the problem that makes the prefix unusable for a semaphore.
 */
export function prefixStatus(
  snapshot: KVSnapshot,
  prefix: string,
  expectedLimit?: number,
): E.Either<PrefixProblem, PrefixStatus> {
  const key = lockKey(prefix)
  const byKey = new Map(snapshot.entries.map((entry) => [entry.key, entry]))
  const lockEntry = byKey.get(key)
  const revokeOf = (session: string): RevokeRequest | null => {
    const request = byKey.get(revokeKey(prefix, session))
    return request === undefined ? null : readRevokeRequest(request)
  }

  if (lockEntry?.flags === LOCK_FLAGS) {
    if (expectedLimit !== undefined && expectedLimit !== 1) {
      return E.left({ type: 'LimitConflict', key, lockLimit: 1, localLimit: expectedLimit })
    }
    const session = lockEntry.session
    const holders = session
      ? [{ session, alive: true, value: text(lockEntry), name: null, revoke: revokeOf(session) }]
      : []
    const { waiting } = lockQueue(snapshot, prefix, session)
    return E.right({
      prefix,
      limit: 1,
      shape: 'lock',
      holders,
      waiting:
        waiting.length === 0
          ? null
          : waiting.map((w) => ({ session: w.session, rank: w.rank, value: w.value, name: null })),
      waitingNote: waiting.length === 0 ? LEADER_WAITERS_NOTE : LEADER_QUEUE_NOTE,
    })
  }

  // Without an expected limit, take the one `.lock` declares, so only flags and body are judged.
  const declared = E.getOrElseW(() => undefined)(decodeLockBody(lockEntry?.value ?? null, key))
  const lock = readLockBody(lockEntry, key, expectedLimit ?? declared?.limit ?? 1)
  if (E.isLeft(lock)) return lock
  const record = lock.right.record

  const { liveHolders, deadHolders } = pruneHolders(
    record?.holders ?? [],
    liveSessions(snapshot.entries),
  )
  const holder = (alive: boolean) => (session: string) => ({
    session,
    alive,
    value: text(byKey.get(contenderKey(prefix, session))),
    name: null,
    revoke: revokeOf(session),
  })
  return E.right({
    prefix,
    limit: record?.limit ?? expectedLimit ?? null,
    shape: record?.shape ?? null,
    holders: [...liveHolders.map(holder(true)), ...deadHolders.map(holder(false))],
    waiting: waitingContenders(snapshot.entries, prefix, new Set(liveHolders)).map((w) => ({
      session: w.session,
      rank: w.rank,
      value: w.value,
      name: null,
    })),
  })
}
