/**
 * What `<prefix>/.lock` holds, as `doctor` reports it: nothing yet, a `consul lock` leader lock, a
 * semaphore (its shape, limit, holders and waiters), or a key no contender can use. Read with the
 * semaphore core's own steps, so that what it calls unusable is what a contender would refuse.
 */
import * as E from 'fp-ts/lib/Either.js'
import type { KVSnapshot } from '../../base/kv-snapshot.js'
import { lockKey } from '../../core/keys/lock-key.js'
import { decodeLockBody } from '../../core/lock-body/decode-lock-body.js'
import { readLockBody } from '../../core/lock-body/read-lock-body.js'
import { liveSessions } from '../../core/semaphore/live-sessions.js'
import { pruneHolders } from '../../core/semaphore/prune-holders.js'
import { waitingContenders } from '../../core/semaphore/waiting-contenders.js'
import { LOCK_FLAGS } from '../../base/flags.js'

/** The finding about `.lock`: its severity, what was found and what to do. */
export interface LockFinding {
  readonly severity: 'ok' | 'warning' | 'problem'
  readonly found: string
  readonly action: string
}

const plural = (n: number, one: string, many: string): string => `${n} ${n === 1 ? one : many}`

/**
 * `.lock` of `prefix` in `snapshot`, described.
 *
 * @example
 * lockFinding(snapshot, 'service/db/lock').found
 * // 'service/db/lock/.lock is a semaphore (go-map shape) of limit 2: 1 holder, 0 waiting'
 */
export function lockFinding(snapshot: KVSnapshot, prefix: string): LockFinding {
  const key = lockKey(prefix)
  const entry = snapshot.entries.find((e) => e.key === key)
  if (entry === undefined) {
    return {
      severity: 'ok',
      found: `${key} does not exist yet: the first contender creates it`,
      action: '',
    }
  }
  if (entry.flags === LOCK_FLAGS) {
    return {
      severity: 'ok',
      found:
        `${key} is a leader lock (\`consul lock\` without -n, rxsem run --leader, leaderElection), ` +
        (entry.session === undefined ? 'free' : `held by session ${entry.session}`) +
        ': semaphore contenders of this prefix are refused with a Conflict',
      action: '',
    }
  }
  const declared = E.getOrElseW(() => undefined)(decodeLockBody(entry.value, key))
  const read = readLockBody(entry, key, declared?.limit ?? 1)
  if (E.isLeft(read)) {
    const problem = read.left
    return problem.type === 'CorruptLock'
      ? {
          severity: 'problem',
          found: `${key} cannot be read (${problem.reason}): every contender of the prefix fails with CorruptLock`,
          action: `correct its body ({"Limit":<n>,"Holders":{}} and the holders it lists), or delete it (consul kv delete ${key}) once no contender relies on it`,
        }
      : {
          severity: 'problem',
          found: `${key} has flags ${entry.flags}: another kind of client uses this prefix, and every contender of it fails with a Conflict`,
          action: 'choose another prefix, or stop the other user of this one',
        }
  }
  const record = read.right.record
  if (record === undefined) {
    return { severity: 'ok', found: `${key} is empty: the next contender writes it`, action: '' }
  }
  const { liveHolders, deadHolders } = pruneHolders(record.holders, liveSessions(snapshot.entries))
  const waiting = waitingContenders(snapshot.entries, prefix, new Set(liveHolders)).length
  const dead =
    deadHolders.length === 0
      ? ''
      : ` (and ${plural(deadHolders.length, 'dead holder', 'dead holders')} still listed, pruned at the next write)`
  return {
    severity: 'ok',
    found:
      `${key} is a semaphore (${record.shape} shape) of limit ${record.limit}: ` +
      `${plural(liveHolders.length, 'holder', 'holders')}${dead}, ${waiting} waiting`,
    action: '',
  }
}
