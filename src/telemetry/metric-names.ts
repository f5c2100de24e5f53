/**
 * The names, units and attributes of what the library measures: the list docs/observability.md
 * explains. Attribute values are bounded sets (a prefix, a limit, a phase, a reason, an endpoint
 * kind, an error kind); never the ACL token, a session id or a key below the prefix.
 */
export const METRICS = {
  /** Counter: tenures begun (a CAS or a hand-off that made this contender a holder). */
  acquisitions: 'rxsem.acquisitions',
  /** Histogram (s): from starting to contend to holding. */
  waitDuration: 'rxsem.wait.duration',
  /** Histogram (s): from holding true to holding false. */
  holdDuration: 'rxsem.hold.duration',
  /** Counter: slots this process's releases handed straight to a waiter. */
  handovers: 'rxsem.handovers',
  /** Counter: falls of holding that were not a release, by `rxsem.reason`. */
  losses: 'rxsem.losses',
  /** Counter: acquiring writes that lost (`.lock` changed first; for a lock, the key was taken). */
  casConflicts: 'rxsem.cas.conflicts',
  /** Observable counter: Consul requests, by `rxsem.consul.endpoint`, with `error.type` when they failed. */
  consulRequests: 'rxsem.consul.requests',
  /** Observable up-down counter: contenders of this process, by `rxsem.phase`. */
  contenders: 'rxsem.contenders',
} as const

/** The attribute names. */
export const ATTRIBUTES = {
  prefix: 'rxsem.prefix',
  limit: 'rxsem.limit',
  protocol: 'rxsem.protocol',
  phase: 'rxsem.phase',
  reason: 'rxsem.reason',
  rise: 'rxsem.rise',
  outcome: 'rxsem.outcome',
  endpoint: 'rxsem.consul.endpoint',
  errorType: 'error.type',
} as const

/** The spans. */
export const SPANS = {
  /** From starting to contend to holding, or to giving up. */
  wait: 'rxsem.wait',
  /** From holding true to holding false. */
  tenure: 'rxsem.tenure',
} as const

/**
 * Bucket bounds of the two duration histograms, in seconds: the SDK's default bounds are made for
 * milliseconds, and a hand-over takes a few of them while a tenure may last an hour.
 */
export const DURATION_BUCKETS_S = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600,
]
