/** Test-only builders of the effects layer's events. */
import type { KVSnapshot } from '../../src/base/kv-snapshot.js'
import type { ContenderEvent } from '../../src/core/events.js'

export const created = (session: string, ttlMs: number, sentAt: number): ContenderEvent => ({
  type: 'session-created',
  session,
  ttlMs,
  sentAt,
})

export const renewed = (ttlMs: number, sentAt: number): ContenderEvent => ({
  type: 'session-renewed',
  ttlMs,
  sentAt,
})

export const seen = (snapshot: KVSnapshot): ContenderEvent => ({ type: 'snapshot', snapshot })
/** A snapshot the watch read after its index went backwards. */
export const seenAfterReset = (snapshot: KVSnapshot): ContenderEvent => ({
  type: 'snapshot',
  snapshot,
  reset: true,
})

export const disconnected: ContenderEvent = {
  type: 'disconnected',
  error: { _tag: 'Unreachable', message: 'connection refused' },
  attempt: 1,
  retryInMs: 1000,
}

export const casOk = (holders: readonly string[], modifyIndex: bigint): ContenderEvent => ({
  type: 'cas-result',
  ok: true,
  holders,
  modifyIndex,
})

export const casFailed: ContenderEvent = { type: 'cas-result', ok: false, holders: [] }

export const sessionGone: ContenderEvent = { type: 'session-gone' }

export const releaseRequested: ContenderEvent = { type: 'release-requested' }
