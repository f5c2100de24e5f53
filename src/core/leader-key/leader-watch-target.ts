import type { KVSnapshot } from '../../base/kv-snapshot.js'
import type { Decision } from '../events.js'
import { lockKey } from '../keys/lock-key.js'
import { WHOLE_PREFIX, type WatchTarget } from '../semaphore/watch-target.js'
import { lockQueue } from './lock-queue.js'

/**
 * Herd-free waiting for the single-key lock: what a process long-polls for its leader-election
 * contenders of one prefix, from their decisions on the last snapshot. The queue is this
 * library's (`lockQueue`, by arrival); Go's `consul lock` keeps no place and watches `.lock` as it
 * always did.
 *
 * - A process whose best-placed waiter is first in line long-polls `.lock` alone (`lock`): it tries
 *   the key when a change shows it free, racing Go's waiters, which long-poll the same key.
 * - A process whose best-placed waiter is further back long-polls the waiter key just ahead of it
 *   (`key`): that key goes when its waiter takes the lock (the acquisition deletes it) or leaves
 *   (its release deletes it), and loses its session when its session ends. A release of the lock
 *   thus wakes one process of ours, the first in line, and its acquisition wakes the next one,
 *   which moves up. Such a process still lists the prefix every `PARKED_RECHECK_MS`, as a
 *   semaphore's parked waiter does: a waiter ahead whose process died keeps its key until Consul
 *   expires its session (TTL to 2 × TTL), and a free key that the first in line leaves untried
 *   for the fairness grace goes to the next in line (`decidePatiently`).
 * - A leader long-polls `.lock` alone too, as a prefix: the loss of the key changes `.lock`, and a
 *   request to give it back (`<prefix>/.lock.revoke/<session>`) starts with `.lock`, so both answer
 *   the poll, and waiters joining behind it do not. Its view of the queue is thus the one of its
 *   acquisition and of the last change of `.lock` (`state$`'s waiters), and a waiter that dies at
 *   the end of the line while it leads keeps its key until a waiter of ours joins behind it, as
 *   behind a Go leader. A process with a waiter further back besides its leader watches the whole prefix.
 * - Anything else watches the whole prefix: a contender whose waiter key is not there yet, one that
 *   does not queue (`tryLead`), a prefix problem, no decision yet.
 *
 * ```
 * .lock: held by g (Go)    queue: a  b  c       (g2, g3: Go waiters, not in the queue)
 * watch: a: .lock          b: key(a)  c: key(b)  g2, g3: .lock (Go's own GET)
 * g releases: a, g2, g3 wake and race; a wins: its transaction deletes key(a), b wakes
 * ```
 *
 * @example
 * ```ts
 * const target = leaderWatchTarget(snapshot, 'svc/leader', [decideLeaderKey(snapshot, options)])
 * if (target.type === 'lock') console.log('first in line')
 * ```
 * @param snapshot - The prefix as last seen.
 * @param prefix - The lock's prefix.
 * @param decisions - The decisions of this process's contenders of the prefix on the snapshot;
 *   undefined for one that has none yet.
 * @returns What to long-poll next.
 */
export function leaderWatchTarget(
  snapshot: KVSnapshot,
  prefix: string,
  decisions: Iterable<Decision | undefined>,
): WatchTarget {
  let best: { rank: number; holder: string | undefined } | undefined
  let leads = false
  for (const decision of decisions) {
    if (decision?.type === 'Held') {
      leads = true
      continue
    }
    if (
      decision === undefined ||
      (decision.type !== 'Wait' && decision.type !== 'TryAcquire') ||
      decision.rank === undefined
    ) {
      return WHOLE_PREFIX
    }
    if (best === undefined || decision.rank < best.rank) {
      best = { rank: decision.rank, holder: decision.view.liveHolders[0] }
    }
  }
  // A leader's process watches `.lock` unless a contender of it waits further back.
  if (best === undefined) return leads ? { type: 'lock', key: lockKey(prefix) } : WHOLE_PREFIX
  if (best.rank === 0) return { type: 'lock', key: lockKey(prefix) }
  if (leads) return WHOLE_PREFIX
  const ahead = lockQueue(snapshot, prefix, best.holder).keys[best.rank - 1]
  if (ahead === undefined) return WHOLE_PREFIX
  return { type: 'key', key: ahead.key, modifyIndex: ahead.modifyIndex }
}
