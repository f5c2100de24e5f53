import * as E from 'fp-ts/lib/Either.js'
import { problemError } from '../../base/semaphore-error.js'
import { joinQueue, semaphorePerformer } from './semaphore-performer.js'
import { refencing } from '../../core/semaphore/refencing.js'
import { withoutDepartedHolders } from '../../core/semaphore/hand-off.js'
import { releaseSlot } from '../release/release-slot.js'
import type { ContenderProtocol } from './contender-protocol.js'
import type { KVSnapshot } from '../../base/kv-snapshot.js'
import { watchTarget } from '../../core/semaphore/watch-target.js'
import { lockKey } from '../../core/keys/lock-key.js'
import { readLockBody } from '../../core/lock-body/read-lock-body.js'

/**
 * Consul's semaphore, as `consul lock -n <limit>` and Consul's semaphore guide run it, read top to
 * bottom:
 *
 * 1. a session with behavior `delete` (the member creates it), so a contender key goes with it;
 * 2. join: the contender key `<prefix>/<session>` taken with the session (`?acquire=`, flags
 *    CONTENDER_FLAGS), or in one transaction with a read of the prefix when the process has seen
 *    a sound `.lock` there (`joinQueue`);
 * 3. decide on each snapshot of the prefix (the view shared by the prefix's contenders: read
 *    `.lock`, prune dead holders, rank the waiters; `decideInView`);
 * 4. acquire: a transaction that checks the session still locks its key, CASes `.lock` on its
 *    ModifyIndex with this session added, and marks the key HOLDER_FLAGS (`semaphorePerformer`);
 * 5. release: CAS the session out of `.lock` (or hand the slot to the first waiter) with the
 *    deletion of the key, then destroy the session (`releaseSlot`), unless the member keeps it
 *    for the next contender of the process (the session shelf);
 * 6. between two jobs of a process (the job pool under `withSlot`), one transaction gives the next
 *    job a fresh fencing token: the holder keeps its slot and rewrites its key, or hands the slot
 *    on and rejoins at the tail (`renewal`).
 */
export const semaphoreProtocol: ContenderProtocol = {
  kind: 'semaphore',
  behavior: 'delete',
  watchTarget,
  decide: (contender) => contender.cache.decide,
  sharedGrace: (contender) => contender.cache.grace,
  performer: (contender, session) =>
    semaphorePerformer({
      client: contender.client,
      prefix: contender.prefix,
      session,
      value: contender.value,
      scheduler: contender.scheduler,
      fresh: contender.fresh,
      companions: contender.companionsOf(session),
      keyMayExist: contender.keyMayExist?.(session) ?? true,
    }),
  // None yet, or a semaphore's it can read, of its limit unless it follows the limit `.lock`
  // states (never a prefix held by `consul lock`).
  joinsOn: (lock, member) =>
    E.isRight(
      readLockBody(
        lock ?? undefined,
        lockKey(member.prefix),
        member.followLimit ? undefined : member.limit,
      ),
    ),
  join: (contender, session) =>
    joinQueue({
      client: contender.client,
      prefix: contender.prefix,
      session,
      value: contender.value,
      companions: contender.companionsOf(session),
    }),
  refence: (contender) => (snapshot, session, keepSlot) => {
    // Built on the freshest `.lock` the process knows: its own writes since the last listing.
    const fresh = contender.fresh?.latestFrom(snapshot) ?? snapshot
    return refencing(
      fresh,
      { ...contender, session, companions: contender.companionsOf(session) },
      contender.cache.view(fresh, contender),
      keepSlot,
    )
  },
  release: (contender, session, lastSeen, keepSession) => {
    // The last snapshot the contender decided on, whose view is made, when it lists the session:
    // its write waits for its turn among the process's writers and is built again on the freshest
    // prefix if a write of the process answered since (`stale`). Else the freshest the process
    // knows (the watch's last listing with its own writes since: its own CAS, say), to save a read.
    // A holder whose process long-polled only its key and `.lock` builds on the freshest: the
    // last listing with the newest `.lock` its poll saw, while that poll has been out since its
    // last answer (`knowsCurrentLock`); else, and whatever that misses, a listing finds.
    const listReads = contender.watchesOwnKey?.() === true
    const seen = lastSeen && !listReads ? contender.cache.view(lastSeen, contender) : undefined
    const listed = seen !== undefined && E.isRight(seen) && seen.right.holders.has(session)
    const freshest = (): KVSnapshot | undefined => {
      if (listReads && contender.knowsCurrentLock?.() !== true) return undefined
      const latest = contender.fresh?.latestFrom(lastSeen) ?? lastSeen
      return listReads && latest ? withoutDepartedHolders(latest, contender.prefix) : latest
    }
    const hint = listed ? lastSeen : freshest()
    return releaseSlot({
      client: contender.client,
      prefix: contender.prefix,
      session,
      companions: contender.companionsOf(session),
      limit: contender.limit,
      followLimit: contender.followLimit,
      scheduler: contender.scheduler,
      hint,
      hintView: hint && contender.cache.view(hint, contender),
      listReads,
      keepSession: keepSession === true,
      adopted: keepSession === 'adopted',
      sessionGone: keepSession === 'gone',
      fresh: contender.fresh,
      view: (snapshot) => contender.cache.view(snapshot, contender),
    })
  },
  problemError,
}
