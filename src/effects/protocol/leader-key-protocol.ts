import * as E from 'fp-ts/lib/Either.js'
import { LOCK_FLAGS, SEMAPHORE_FLAGS } from '../../base/flags.js'
import type { PrefixProblem } from '../../core/events.js'
import { leaderKeyDecider } from '../../core/leader-key/decide-leader-key.js'
import { leaderWatchTarget } from '../../core/leader-key/leader-watch-target.js'
import { deadWaitersToRemove } from '../../core/leader-key/lock-queue.js'
import { SemaphoreError, problemError } from '../../base/semaphore-error.js'
import { joinLine, leaderKeyPerformer } from './leader-key-performer.js'
import { releaseLeaderKey } from '../release/leader-key-release.js'
import type { ContenderProtocol, ProtocolMember } from './contender-protocol.js'

/**
 * Consul's single-key lock, as `consul lock <prefix>` (no `-n`) and Consul's leader-election guide
 * run it, with a queue of this library's waiters beside it that Go's `Lock` never reads, read top
 * to bottom:
 *
 * 1. a session with behavior `release` (the member creates it), so the key and its value stay when
 *    the session ends, and only its holder is cleared;
 * 2. join: the waiter key `<prefix>/.queue/<session>` taken with the session (`?acquire=`, flags
 *    LOCK_WAITER_FLAGS), or in one transaction with a read of the prefix when the process has seen
 *    a lock (or none) at `.lock` (`joinLine`); a contender that tries once (`tryLead`) keeps no
 *    place and writes no key;
 * 3. decide on each snapshot of the prefix: is `<prefix>/.lock` free, ours, or another's, and is
 *    this contender first in line (`decideLeaderKey`); a key with other flags than the lock's is a
 *    conflict, never written. The first in line long-polls `.lock` alone, every other waiter the
 *    key of the waiter ahead (`leaderWatchTarget`), and the dead waiters' keys are removed
 *    (`deadWaitersToRemove`);
 * 4. acquire: a transaction `lock` of the key with the session and LOCK_FLAGS that deletes the
 *    waiter key; a refusal during Consul's lock-delay is retried after a short backoff, since no
 *    snapshot shows it ending (`leaderKeyPerformer`);
 * 5. release: `?release=` with the same value and flags (a waiter that did not hold the key then
 *    deletes its waiter key), then destroy the session (`releaseLeaderKey`).
 *
 * Go's contenders keep no place: whoever acquires first after a release leads, as with Go's Lock,
 * and of ours only the first in line tries.
 */
export const leaderKeyProtocol: ContenderProtocol = {
  kind: 'lock',
  behavior: 'release',
  watchTarget: (snapshot, prefix, decisions) => leaderWatchTarget(snapshot, prefix, decisions),
  sweep: deadWaitersToRemove,
  decide: (contender) => leaderKeyDecider(contender.value, queues(contender)),
  sharedGrace: () => undefined,
  // None yet, or a lock: never a key under a prefix whose `.lock` is not one.
  joinsOn: (lock, member) => queues(member) && (lock === null || lock.flags === LOCK_FLAGS),
  join: (contender, session) =>
    joinLine({
      client: contender.client,
      prefix: contender.prefix,
      session,
      value: contender.value,
    }),
  performer: (contender, session) =>
    leaderKeyPerformer({
      client: contender.client,
      prefix: contender.prefix,
      session,
      value: contender.value,
      queued: queues(contender),
      scheduler: contender.scheduler,
      acquiring: contender.acquiring?.bind(contender),
      keyMayExist: contender.keyMayExist?.(session) ?? true,
    }),
  // A session Consul has ended holds nothing: the key was released with it (behavior `release`).
  release: (contender, session, _lastSeen, keepSession) =>
    keepSession === 'gone'
      ? Promise.resolve(E.right(undefined))
      : releaseLeaderKey({
          client: contender.client,
          prefix: contender.prefix,
          session,
          value: contender.value,
          scheduler: contender.scheduler,
          adopted: keepSession === 'adopted',
          queued: queues(contender),
        }),
  problemError: leaderKeyProblemError,
}

/** A contender that tries once keeps no place in line. */
const queues = (contender: ProtocolMember): boolean => contender.tryOnce !== true

function leaderKeyProblemError(problem: PrefixProblem): SemaphoreError {
  if (problem.type !== 'Conflict') return problemError(problem)
  const what =
    problem.flags === SEMAPHORE_FLAGS
      ? 'a semaphore (`consul lock -n N` or semaphore())'
      : problem.flags === 0n
        ? 'a key written without lock flags, by hand or by another tool'
        : 'some other use'
  return new SemaphoreError(
    'Conflict',
    `${problem.key} has flags ${problem.flags}, so it is not a lock: it is ${what}. ` +
      "Nothing was written (Consul's Go Lock refuses it too). Choose another prefix, or delete " +
      `the key (consul kv delete ${problem.key}) once nothing uses it.`,
  )
}
