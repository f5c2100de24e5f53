/** Test-only fixture: the snapshots of one contender 'me' on prefix 'svc/lock' with limit 1. */
import type { ContenderStateOptions } from '../../src/core/contender/contender-state-model.js'
import { prefixView } from '../../src/core/semaphore/prefix-view.js'
import { refencing } from '../../src/core/semaphore/refencing.js'
import { contenderEntry, lockEntry, snapshotOf } from './snapshot.js'

export const prefix = 'svc/lock'

/**
 * A job pool worker's step options on `prefix`: limit `limit`, the semaphore's own refencing on
 * the shared view, and a quantum of `quantumMs` (0: a job's end yields whenever another waits).
 */
export const poolWorker = (limit: number, quantumMs: number): ContenderStateOptions => ({
  prefix,
  limit,
  quantumMs,
  refence: (snapshot, session, keepSlot) =>
    refencing(
      snapshot,
      { prefix, session, limit },
      prefixView(snapshot, { prefix, limit }),
      keepSlot,
    ),
})
export const me = contenderEntry(prefix, 'me', 5n)

/** Our contender key, no `.lock` yet: this contender should CAS with cas 0. */
export const waiting = snapshotOf([me])
/** `.lock` lists us (ModifyIndex 20) and our key is live. */
export const listed = snapshotOf([lockEntry(prefix, '{"Limit":1,"Holders":{"me":true}}', 20n), me])
/** `.lock` rewritten by someone else (ModifyIndex 25), still listing us. */
export const listedLater = snapshotOf([
  lockEntry(prefix, '{"Limit":1,"Holders":["me"]}', 25n, { flags: 0n }),
  me,
])
/** An operator removed us from `.lock` (ModifyIndex 30). */
export const unlisted = snapshotOf([lockEntry(prefix, '{"Limit":1,"Holders":{}}', 30n), me])
/** Our contender key disappeared: `.lock` still names us but we are pruned as dead. */
export const keyGone = snapshotOf(
  [lockEntry(prefix, '{"Limit":1,"Holders":{"me":true}}', 20n)],
  31n,
)
