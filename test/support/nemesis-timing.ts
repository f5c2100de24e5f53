// How the nemesis suite's library actors wait, shared by the actor fixtures and by the checker's
// bound for a waiter that a blackhole may have left blind.
import { blockingTimeoutMs } from '../../src/consul/kv.js'

/** Each long poll of a library actor's watch waits this long (`watchWait`; the default is 30 s). */
export const ACTOR_WATCH_WAIT_MS = 15_000

/** The actors' clients keep the default request timeout. */
const ACTOR_REQUEST_TIMEOUT_MS = 10_000

/**
 * How long after a blackhole ends a library actor may not know of a free slot: a long poll whose
 * answer it swallowed, while no other request failed, is given up only at its timeout (the wait,
 * a sixteenth more, and the request timeout: about 26 s); plus a second for the new poll's answer
 * and the writes of the acquisition it allows.
 */
export const SILENCED_POLL_MS =
  blockingTimeoutMs(ACTOR_WATCH_WAIT_MS, ACTOR_REQUEST_TIMEOUT_MS) + 1000
