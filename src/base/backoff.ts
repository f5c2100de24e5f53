/**
 * Every retry delay of the library, in one place: named policies (capped exponential backoff with
 * jitter) and the one function that turns a policy, an attempt and the failure into a delay. Pure:
 * no I/O and no clock; randomness is injected (`random`), and the delay is waited on the caller's
 * scheduler, so every retry loop can run in virtual time.
 *
 * ```
 * attempt:   1     2     3     4  ...
 * ceiling:   i     2i    4i    8i ... max     (i = initialMs)
 * delay:     ceiling × (1 − jitter + jitter × random())
 * 429/503:   at least Retry-After (1 s without one) + up to 25 %, at most throttleCapMs
 * ```
 */
import type { ConsulError } from './consul-error.js'
import { isThrottled } from './failure-kinds.js'

/** A named retry policy: capped exponential backoff with jitter. */
export interface BackoffPolicy {
  /** For error messages and docs. */
  readonly name: string
  /** The delay ceiling of the first retry (ms). */
  readonly initialMs: number
  /** The largest delay ceiling (ms). */
  readonly maxMs: number
  /**
   * The share of the ceiling that is random: 1 is full jitter (`ceiling × random()`), 0.5 draws
   * from the upper half, 0 is no jitter.
   */
  readonly jitter: number
  /** The longest wait a 429/503's `Retry-After` can impose on this loop (ms). */
  readonly throttleCapMs: number
}

/**
 * 60 s: the longest wait a `Retry-After` can impose on a retry loop of this library. A longer one
 * is more likely a misconfigured proxy than a plan, and a contender that waits longer looks hung.
 */
export const MAX_RETRY_AFTER_MS = 60_000

/**
 * The least wait after a 429 or 503 that named no delay: a rate-limited server is not helped by
 * the 100-250 ms first retry that suits a dropped connection.
 */
export const THROTTLED_MIN_MS = 1000

/** The longest a release waits between two tries for a throttled (429/503) answer. */
export const RELEASE_THROTTLE_CAP_MS = 2000

/** The library's retry loops, each with its policy. */
export const BACKOFF = {
  /**
   * A blocking-query watch after a transient failure (full jitter, as clients of Consul do); the
   * defaults of `WatchOptions.backoff`, which a caller may change.
   */
  watch: {
    name: 'watch',
    initialMs: 250,
    maxMs: 10_000,
    jitter: 1,
    throttleCapMs: MAX_RETRY_AFTER_MS,
  },
  /** A contender's session creation, and its start-over with a new session. */
  session: {
    name: 'session',
    initialMs: 250,
    maxMs: 10_000,
    jitter: 0.5,
    throttleCapMs: MAX_RETRY_AFTER_MS,
  },
  /** A renewal of a session's TTL (the caller caps it by the time left to the lease deadline). */
  renewal: {
    name: 'renewal',
    initialMs: 1000,
    maxMs: 1000,
    jitter: 0,
    throttleCapMs: MAX_RETRY_AFTER_MS,
  },
  /** A write (key acquire, CAS) after a transient failure. */
  write: {
    name: 'write',
    initialMs: 200,
    maxMs: 2000,
    jitter: 0.5,
    throttleCapMs: MAX_RETRY_AFTER_MS,
  },
  /** A write whose answer was lost and cannot be checked now: decide again on the next snapshot. */
  recheck: {
    name: 'recheck',
    initialMs: 1000,
    maxMs: 1000,
    jitter: 0,
    throttleCapMs: MAX_RETRY_AFTER_MS,
  },
  /** A release call (CAS out, delete, destroy) after a transient failure: close() awaits it. */
  release: {
    name: 'release',
    initialMs: 100,
    maxMs: 800,
    jitter: 0,
    throttleCapMs: RELEASE_THROTTLE_CAP_MS,
  },
  /** A release's CAS of `.lock` that lost to another write: try again at once, spread a little. */
  releaseCas: {
    name: 'releaseCas',
    initialMs: 5,
    maxMs: 50,
    jitter: 1,
    throttleCapMs: RELEASE_THROTTLE_CAP_MS,
  },
  /** The single-key lock refused during Consul's lock-delay, which no snapshot shows ending. */
  lockDelay: {
    name: 'lockDelay',
    initialMs: 250,
    maxMs: 1000,
    jitter: 0.25,
    throttleCapMs: MAX_RETRY_AFTER_MS,
  },
} as const satisfies Record<string, BackoffPolicy>

/** What `backoffDelay` needs besides the policy and the attempt. */
export interface BackoffOptions {
  /** Source of the jitter, in [0, 1); default Math.random. */
  readonly random?: (() => number) | undefined
  /** The failure being retried: a 429/503 is paced by its Retry-After. */
  readonly error?: ConsulError | undefined
  /** A cap below the policy's (a renewal: half the time left to the lease deadline). */
  readonly capMs?: number | undefined
}

/**
 * The delay before retry number `attempt` (1 for the first retry) under `policy`.
 *
 * @example
 * timer(backoffDelay(BACKOFF.write, attempt, { error, random }), scheduler)
 * @param policy - The retry loop's policy.
 * @param attempt - Failures in a row so far, 1 for the first.
 * @param options - Jitter source, the failure (for Retry-After), an extra cap.
 * @returns The delay in ms.
 */
export function backoffDelay(
  policy: BackoffPolicy,
  attempt: number,
  options: BackoffOptions = {},
): number {
  const random = options.random ?? Math.random
  // 0 × 2 ** 1024 would be NaN: a loop with no first delay (tests) may fail that often in a row.
  const ceiling =
    policy.initialMs <= 0
      ? 0
      : Math.min(policy.maxMs, policy.initialMs * 2 ** Math.max(0, attempt - 1))
  const own = ceiling * (1 - policy.jitter + policy.jitter * random())
  const paced =
    options.error === undefined
      ? own
      : throttledDelay(options.error, own, policy.throttleCapMs, random)
  return Math.max(0, options.capMs === undefined ? paced : Math.min(options.capMs, paced))
}

/**
 * How long to wait after `error`, given the loop's own backoff for this attempt. Other failures
 * keep `backoffMs`. A 429 or 503 waits at least its `Retry-After` (or THROTTLED_MIN_MS without
 * one), plus up to a quarter more of jitter so that clients told the same delay do not come back
 * in the same instant; never more than `capMs`.
 *
 * @example
 * throttledDelay(error, 250, 60_000, Math.random)
 * @param error - The failure to retry.
 * @param backoffMs - The loop's own backoff for this attempt, jitter included.
 * @param capMs - The longest acceptable wait.
 * @param random - Source of the jitter, in [0, 1).
 * @returns The delay in ms.
 */
export function throttledDelay(
  error: ConsulError,
  backoffMs: number,
  capMs: number,
  random: () => number = Math.random,
): number {
  if (!isThrottled(error)) return backoffMs
  const asked = Math.max(backoffMs, error.retryAfterMs ?? THROTTLED_MIN_MS)
  return Math.max(0, Math.min(capMs, asked * (1 + random() / 4)))
}
