import * as E from 'fp-ts/lib/Either.js'
import { SEMAPHORE_FLAGS } from '../../base/flags.js'
import type { PrefixProblem } from '../../core/events.js'
import { leaderKeyDecider } from '../../core/leader-key/decide-leader-key.js'
import { SemaphoreError, problemError } from '../../base/semaphore-error.js'
import { leaderKeyPerformer } from './leader-key-performer.js'
import { releaseLeaderKey } from '../release/leader-key-release.js'
import type { ContenderProtocol } from './contender-protocol.js'

/**
 * Consul's single-key lock, as `consul lock <prefix>` (no `-n`) and Consul's leader-election guide
 * run it, read top to bottom:
 *
 * 1. a session with behavior `release` (the member creates it), so the key and its value stay when
 *    the session ends, and only its holder is cleared;
 * 2. decide on each snapshot of the prefix: is `<prefix>/.lock` free, ours, or another's; a key
 *    with other flags than the lock's is a conflict, never written (`decideLeaderKey`);
 * 3. acquire: a transaction `lock` of the key with the session and LOCK_FLAGS; a refusal during
 *    Consul's lock-delay is retried after a short backoff, since no snapshot shows it ending
 *    (`leaderKeyPerformer`);
 * 4. release: `?release=` with the same value and flags, then destroy the session
 *    (`releaseLeaderKey`).
 *
 * There is no queue: whoever acquires first after a release leads, as with Go's Lock.
 */
export const leaderKeyProtocol: ContenderProtocol = {
  kind: 'lock',
  behavior: 'release',
  herdFree: false,
  decide: (contender) => leaderKeyDecider(contender.value),
  sharedGrace: () => undefined,
  performer: (contender, session) =>
    leaderKeyPerformer({
      client: contender.client,
      prefix: contender.prefix,
      session,
      scheduler: contender.scheduler,
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
        }),
  problemError: leaderKeyProblemError,
}

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
