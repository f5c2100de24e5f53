import { MAX_WEIGHT } from '../base/flags.js'
import { TXN_OPS_EVERY_VERSION, TXN_OPS_FROM_1_14 } from '../base/txn-ops-limit.js'
import { hostname } from 'node:os'
import type { SchedulerLike } from 'rxjs'
import type { ConsulClient } from '../consul/client-api.js'
import { SemaphoreError } from '../base/semaphore-error.js'
import { durationMs as parseDuration } from '../consul/durations.js'
import { sentences } from '../base/sentences.js'
import type { TelemetryOptions } from '../telemetry/telemetry-options.js'

/**
 * A Go-style duration ('15s', '1m30s', '500ms') or a number of milliseconds.
 *
 * @example
 * ```ts
 * const ttl: Duration = '30s' // the same as 30_000
 * semaphore({ prefix: 'service/db/lock', limit: 3, ttl, lockDelay: 0 })
 * ```
 */
export type Duration = string | number

/**
 * Options shared by `semaphore(...)` and `leaderElection(...)`; only `prefix` is required.
 *
 * @example
 * ```ts
 * const common: ContenderOptions = {
 *   prefix: 'service/scheduler/leader',
 *   consul: createConsulClient({ address: '127.0.0.1:8500' }),
 *   ttl: '20s',
 *   leaseMargin: '3s',
 * }
 * const election = leaderElection(common)
 * ```
 */
export interface ContenderOptions {
  /** The KV prefix all contenders agree on, e.g. 'service/db/lock'. A trailing '/' is dropped. */
  readonly prefix: string
  /**
   * A Consul client (`createConsulClient(...)`), never closed by the library. Default: the
   * process's shared client for the CONSUL_* variables, closed 5 s after no contender uses it
   * (the next one within those 5 s reuses it); it never keeps the process alive.
   */
  readonly consul?: ConsulClient
  /** Session TTL, 10s to 24h. Default '15s'. */
  readonly ttl?: Duration
  /** Session name, shown by `rxsem status` and Consul's UI. */
  readonly sessionName?: string
  /**
   * Value of this contender's key, for operators. Default '<hostname>:<pid>'. It also tells
   * processes apart in the queue: the waiters of one value take turns with those of others (a
   * process holding fewer slots goes first), and an empty value is a process of its own.
   */
  readonly value?: string
  /** Session lock-delay, 0 to 60s (0 disables). Default Consul's, 15s. */
  readonly lockDelay?: Duration
  /** Node health checks the session depends on. Default ['serfHealth']; [] for none. */
  readonly checks?: readonly string[]
  /**
   * Service health checks the session depends on (Consul's session `ServiceChecks`): check IDs of
   * services registered on the agent's node, or `{ id, namespace }` for a check in another
   * Enterprise namespace. When one of them goes critical, Consul invalidates the session at once:
   * `holding$` drops and the slot goes to the next contender, without waiting out the TTL. Consul
   * refuses to make a session while one of them is critical or not registered: the contender then
   * fails with SemaphoreError('Consul') naming the check (also when its check goes critical while
   * it holds, since no new session can be made then: subscribe again once the check passes).
   * Node checks (`checks`) still apply beside them. Default none.
   */
  readonly serviceChecks?: readonly (string | ServiceCheck)[]
  /**
   * An existing session to contend with (Go's `LockOptions.Session`), instead of one the
   * contender creates: its ID. The contender renews it while it contends (its lease deadline
   * counts from its renewals, as for a session of its own) and never destroys it, not on release,
   * close, abort or failure: its owner does. Its TTL is read from Consul (a session without one
   * is refused), and `ttl`, `lockDelay`, `checks`, `serviceChecks` and `sessionName`, which only
   * a created session has, are refused beside it. A contender whose key and place in `.lock` are
   * already the session's (another handle of the same process, or a process restarted within the
   * TTL) holds at once, writing nothing. A session that does not exist, or ends, fails the
   * contender with SemaphoreError('SessionGone'): it never makes one in its place. What a release
   * that fails leaves behind stays the session's until its owner destroys it. Not for `withSlot`
   * or `exclusive`, which make sessions of their own.
   */
  readonly session?: string
  /**
   * How long before the session's TTL runs out `holding$` gives up on its own when renewals
   * fail: a duration, or a fraction of the TTL. Default 0.1 (10%).
   */
  readonly leaseMargin?:
    | Duration
    | {
        /** Fraction of the TTL, at least 0 and less than 1 (0.1: give up 10% early). */
        readonly ratio: number
      }
  /** Blocking wait of each request of the prefix watch, 1ms to 10m. Default 30s. */
  readonly watchWait?: Duration
  /**
   * How long a contender tries to reach a Consul agent before `holding$` errors with
   * SemaphoreError('Unreachable'), naming the address and the last failure: a duration, or
   * `Infinity` to wait for ever (e.g. a service that may start before its local agent). It
   * applies only until the first contact (the first session created), and not at all on a client
   * the agent has answered before (a process's later contenders, the next job of `withSlot`):
   * after it, an agent that cannot be reached is retried for as long as it lasts. A session request still waiting for a
   * connection of a busy client when the time is up (thousands of contenders started at once on
   * one client) is waited for if the agent answered the client meanwhile: the contender errors only
   * if that request fails. Default '15s'.
   */
  readonly startupTimeout?: Duration
  /**
   * Ride through a Consul outage as short as the lease: a holder whose watch fails (no answer, a
   * 500 while the Consul servers elect a leader) or whose renewals fail keeps `holding$` true
   * until its lease deadline (last successful renewal sent + TTL − `leaseMargin`), and not a
   * moment longer; a renewal that succeeds meanwhile moves the deadline, as always. It turns false
   * at once when an answer shows the slot gone (the session gone, its key or its place in `.lock`
   * gone, as soon as Consul answers again). A contender that did not hold when the watch failed
   * waits for the watch before it holds. The trade: an operator's removal of the holder (or any
   * edit of `.lock` by hand) is seen only when Consul answers again, not while it is unreachable;
   * see docs/safety.md. Default false: a watch failure drops `holding$` at once ('watch-failed').
   */
  readonly rideThrough?: boolean
  /** RxJS scheduler for every timer (tests). Default asyncScheduler. */
  readonly scheduler?: SchedulerLike
  /**
   * OpenTelemetry metrics and spans (docs/observability.md): `false` measures nothing; an object
   * names the MeterProvider and TracerProvider to report to. Default: the global providers of
   * `@opentelemetry/api`, when it is installed (a no-op until an SDK registers them).
   */
  readonly telemetry?: false | TelemetryOptions
}

/**
 * A service check a session depends on, with its Enterprise namespace when it is not the
 * session's.
 *
 * @example
 * ```ts
 * const check: ServiceCheck = { id: 'service:web-1', namespace: 'team-a' }
 * semaphore({ prefix: 'service/web/lock', limit: 2, serviceChecks: [check] })
 * ```
 */
export interface ServiceCheck {
  /** The check's ID, e.g. 'service:web-1' or the CheckID it was registered with. */
  readonly id: string
  /** The check's Enterprise namespace. */
  readonly namespace?: string
}

/**
 * Options of `semaphore(...)`, `withSlot(...)` and `tryAcquire(...)`.
 *
 * @example
 * ```ts
 * const options: SemaphoreOptions = { prefix: 'service/db/lock', limit: 3, ttl: '20s' }
 * const sem = semaphore({ ...options, fairness: { graceMs: 5000 } })
 * ```
 */
export interface SemaphoreOptions extends ContenderOptions {
  /**
   * How many contenders may hold a slot at once; all contenders of a prefix must agree, unless
   * `followLimit`. With `followLimit`, the limit written when this contender creates `.lock`.
   */
  readonly limit: number
  /**
   * Follow the limit `.lock` states instead of failing with LimitConflict when it is not
   * `limit`, so that an operator can change it live (`rxsem set-limit`, `setLimit(...)`): a raise
   * admits at once, a lowering lets the holders finish and admits no one until they are fewer
   * than the new limit. `state$`'s `limit` tells the limit in force. Default false: a `.lock` with
   * another limit stops a contender that does not hold (as `consul lock -n` does), while a
   * holder keeps its slot until it gives it back.
   */
  readonly followLimit?: boolean
  /**
   * How many of the `limit` slots this contender takes at once (default 1): all of them in one
   * write, or none. `consul lock -n` counts them: it sees as many holders (one session each).
   * Waiters of this library are served in arrival order, so a request of several permits at the
   * front of the queue is served before smaller ones that arrived after it.
   */
  readonly permits?: number
  /**
   * Serve waiters in arrival order (true, default), so that a release wakes one CAS attempt; after
   * `graceMs` (default 2000) of unused free slots any waiter may try. false: everyone tries.
   */
  readonly fairness?:
    | boolean
    | {
        /**
         * Liveness guard, in ms: while slots stay free and `.lock` unchanged, a waiter held back
         * by its rank tries anyway after `graceMs × rank`.
         */
        readonly graceMs: number
      }
}

/** Validated, normalised options. */
export interface ResolvedContenderOptions {
  readonly prefix: string
  readonly ttlMs: number
  readonly ttl: string
  readonly sessionName: string
  readonly value: string
  readonly lockDelay: string | undefined
  readonly checks: readonly string[] | undefined
  readonly serviceChecks: readonly ServiceCheck[] | undefined
  /**
   * An existing session to contend with (`ContenderOptions.session`): never destroyed, never
   * shelved; `ttlMs`/`ttl` are then its own once read from Consul (until then, the default's).
   */
  readonly adoptedSession: string | undefined
  readonly leaseMarginMs: number
  /** The lease margin as a fraction of the TTL, when it was given as one (the default). */
  readonly leaseMarginRatio: number | undefined
  readonly watchWaitMs: number | undefined
  /** Infinity: no start-up timeout. */
  readonly startupTimeoutMs: number
  /** Keep holding through a watch failure until the lease deadline (see ContenderOptions). */
  readonly rideThrough: boolean
  readonly telemetry: false | TelemetryOptions | undefined
}

/**
 * Says what is wrong with one option: `report('ttl', '"5s" must be ...')`. The checks report every
 * problem they find, and `validated` throws them all in one SemaphoreError('InvalidOptions').
 */
export type ReportProblem = (option: string, problem: string) => void

/**
 * Runs `check`, which reports the problems it finds, and throws one SemaphoreError('InvalidOptions')
 * naming every one of them; nothing has been sent to Consul then.
 *
 * @example
 * const limit = validated((report) => checkLimit(options.limit, report))
 * @param check - The checks; what it returns is used only when it reported nothing.
 * @returns What `check` returned.
 */
export function validated<T>(check: (report: ReportProblem) => T): T {
  const problems: string[] = []
  const result = check((option, problem) => problems.push(`option ${option}: ${problem}`))
  if (problems.length === 1) throw new SemaphoreError('InvalidOptions', sentences(problems[0]))
  if (problems.length > 1) {
    throw new SemaphoreError(
      'InvalidOptions',
      `${problems.length} options are wrong (nothing was sent to Consul; correct each and try ` +
        `again): ${sentences(...problems.map((problem, i) => `(${i + 1}) ${problem}`))}`,
    )
  }
  return result
}

/** Validates the options and fills in defaults; throws SemaphoreError('InvalidOptions'). */
export function resolveContenderOptions(
  options: ContenderOptions,
  defaultName: string,
): ResolvedContenderOptions {
  return validated((report) => checkContenderOptions(options, defaultName, report))
}

/** A prefix as the contenders use it: `service/db/lock/` and `service/db/lock` are one prefix. */
export function withoutTrailingSlashes(prefix: string): string {
  return prefix.replace(/\/+$/, '')
}

/**
 * The options with defaults filled in, reporting each problem; what it returns is meaningful only
 * when it reported none (see `validated`).
 */
export function checkContenderOptions(
  options: ContenderOptions,
  defaultName: string,
  report: ReportProblem,
): ResolvedContenderOptions {
  const raw: unknown = options.prefix
  let prefix = ''
  if (typeof raw !== 'string' || raw.trim() === '') {
    report('prefix', 'must be a non-empty KV path such as "service/db/lock".')
  } else if (raw.startsWith('/')) {
    report('prefix', `"${raw}" must not start with "/" (Consul keys are relative).`)
  } else {
    prefix = withoutTrailingSlashes(raw)
    if (
      prefix.split('/').some((segment) => segment === '' || segment === '.' || segment === '..')
    ) {
      report('prefix', `"${raw}" must not contain empty, "." or ".." segments.`)
    }
  }

  const ttlMs = parseDuration(options.ttl ?? '15s')
  const ttlValid = ttlMs !== undefined && ttlMs >= 10_000 && ttlMs <= 86_400_000
  if (!ttlValid) {
    report(
      'ttl',
      `${JSON.stringify(options.ttl)} must be a duration from 10s to 24h (Consul's session TTL range), e.g. "15s".`,
    )
  }

  let lockDelay: string | undefined
  if (options.lockDelay !== undefined) {
    const ms = parseDuration(options.lockDelay)
    if (ms === undefined || ms > 60_000) {
      report('lockDelay', `${JSON.stringify(options.lockDelay)} must be a duration from 0 to 60s.`)
    } else {
      lockDelay = `${Math.round(ms)}ms`
    }
  }

  const margin = options.leaseMargin ?? { ratio: 0.1 }
  // Against a wrong TTL, the default one: the margin's own problem is still worth reporting.
  const ttlForMargin = ttlValid ? ttlMs : 15_000
  const leaseMarginMs =
    typeof margin === 'object' && margin !== null
      ? margin.ratio * ttlForMargin
      : (parseDuration(margin) ?? Number.NaN)
  if (!(leaseMarginMs >= 0 && leaseMarginMs < ttlForMargin)) {
    report('leaseMargin', `${JSON.stringify(margin)} must be at least 0 and less than the TTL.`)
  }

  let watchWaitMs: number | undefined
  if (options.watchWait !== undefined) {
    watchWaitMs = parseDuration(options.watchWait)
    if (watchWaitMs === undefined || watchWaitMs < 1 || watchWaitMs > 600_000) {
      report(
        'watchWait',
        `${JSON.stringify(options.watchWait)} must be a duration from 1ms to 10m.`,
      )
    }
  }

  const startupTimeoutMs = checkTimeout('startupTimeout', options.startupTimeout ?? '15s', report)
  const checks = checkNodeChecks(options.checks, report)
  const serviceChecks = checkServiceChecks(options.serviceChecks, report)
  const adoptedSession = checkAdoptedSession(options, report)

  if (options.rideThrough !== undefined && typeof options.rideThrough !== 'boolean') {
    report('rideThrough', `${JSON.stringify(options.rideThrough)} must be true or false.`)
  }

  return {
    prefix,
    ttlMs: ttlMs ?? Number.NaN,
    // Seconds where exact, so Consul's UI and `rxsem status` show '15s' rather than '15000ms'.
    ttl:
      ttlMs !== undefined && ttlMs % 1000 === 0
        ? `${ttlMs / 1000}s`
        : `${Math.round(ttlMs ?? 0)}ms`,
    sessionName: options.sessionName ?? `${defaultName} ${prefix}`,
    value: options.value ?? `${hostname()}:${process.pid}`,
    lockDelay,
    checks,
    serviceChecks,
    adoptedSession,
    leaseMarginMs,
    leaseMarginRatio: typeof margin === 'object' && margin !== null ? margin.ratio : undefined,
    watchWaitMs,
    startupTimeoutMs,
    rideThrough: options.rideThrough === true,
    telemetry: checkTelemetry(options.telemetry, report),
  }
}

function checkNodeChecks(checks: unknown, report: ReportProblem): readonly string[] | undefined {
  if (checks === undefined) return undefined
  if (!Array.isArray(checks) || !checks.every((id) => typeof id === 'string' && id !== '')) {
    report(
      'checks',
      `${JSON.stringify(checks)} must be a list of node check IDs, e.g. ["serfHealth"], or [] for none.`,
    )
    return undefined
  }
  return checks as readonly string[]
}

function checkServiceChecks(
  serviceChecks: unknown,
  report: ReportProblem,
): readonly ServiceCheck[] | undefined {
  if (serviceChecks === undefined) return undefined
  const problem =
    `${JSON.stringify(serviceChecks)} must be a list of service check IDs (strings), or of ` +
    '{ id, namespace } for a check in another namespace, e.g. ["service:web-1"].'
  if (!Array.isArray(serviceChecks)) {
    report('serviceChecks', problem)
    return undefined
  }
  const resolved: ServiceCheck[] = []
  for (const check of serviceChecks as unknown[]) {
    if (typeof check === 'string' && check !== '') {
      resolved.push({ id: check })
      continue
    }
    const { id, namespace } = (check ?? {}) as { id?: unknown; namespace?: unknown }
    if (
      typeof check !== 'object' ||
      typeof id !== 'string' ||
      id === '' ||
      (namespace !== undefined && typeof namespace !== 'string')
    ) {
      report('serviceChecks', problem)
      return undefined
    }
    resolved.push(namespace === undefined ? { id } : { id, namespace })
  }
  return resolved
}

/** The options a created session is made with, which an adopted one already has. */
const CREATED_SESSION_OPTIONS = [
  'ttl',
  'lockDelay',
  'checks',
  'serviceChecks',
  'sessionName',
] as const

function checkAdoptedSession(options: ContenderOptions, report: ReportProblem): string | undefined {
  const session: unknown = options.session
  if (session === undefined) return undefined
  if (
    typeof session !== 'string' ||
    !/^[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$/i.test(session)
  ) {
    report(
      'session',
      `${JSON.stringify(session)} must be the ID of an existing Consul session (a UUID).`,
    )
    return undefined
  }
  for (const option of CREATED_SESSION_OPTIONS) {
    if (options[option] !== undefined) {
      report(
        option,
        `is what a created session is made with; with session (an existing one) leave it out: ` +
          'the session already has its own.',
      )
    }
  }
  return session
}

/**
 * A time limit of the library (`startupTimeout`, `withSlot`'s `waitTimeout`): a duration from 1ms
 * to 24h, or Infinity for none. Reports a problem and answers Infinity when it is not one.
 *
 * @example
 * const waitTimeoutMs = checkTimeout('waitTimeout', options.waitTimeout, report)
 * @returns The time limit in ms (Infinity: none).
 */
export function checkTimeout(option: string, value: Duration, report: ReportProblem): number {
  const ms = value === Infinity ? Infinity : parseDuration(value)
  if (ms === undefined || !((ms >= 1 && ms <= 86_400_000) || ms === Infinity)) {
    report(
      option,
      `${JSON.stringify(value)} must be a duration from 1ms to 24h (e.g. "5s", or 5000 for ms), or Infinity (wait for ever).`,
    )
    return Infinity
  }
  return ms
}

function checkTelemetry(
  telemetry: unknown,
  report: ReportProblem,
): false | TelemetryOptions | undefined {
  if (telemetry === undefined || telemetry === false) return telemetry
  if (typeof telemetry !== 'object' || telemetry === null) {
    report('telemetry', 'must be false or { meterProvider?, tracerProvider? }.')
    return undefined
  }
  const { meterProvider, tracerProvider } = telemetry as Record<string, unknown>
  const lacks = (provider: unknown, method: string): boolean =>
    provider !== undefined &&
    typeof (provider as Record<string, unknown> | null)?.[method] !== 'function'
  if (lacks(meterProvider, 'getMeter')) {
    report('telemetry', 'meterProvider must be a MeterProvider (it has no getMeter).')
  }
  if (lacks(tracerProvider, 'getTracer')) {
    report('telemetry', 'tracerProvider must be a TracerProvider (it has no getTracer).')
  }
  return telemetry
}

/** The semaphore's own options, validated, with the contender's (see `resolveSemaphoreOptions`). */
export interface ResolvedSemaphoreOptions extends ResolvedContenderOptions {
  readonly limit: number
  readonly followLimit: boolean
  /** Slots taken at once (1 unless `permits`). */
  readonly permits: number
  /** Whether waiters are served in arrival order (before a try-once turns it off). */
  readonly fairness: boolean
  readonly fairnessGraceMs: number | undefined
}

/**
 * Validates every option of a semaphore at once, and any more that `more` checks (`withSlot`'s);
 * throws one SemaphoreError('InvalidOptions') naming every problem.
 *
 * @example
 * const resolved = resolveSemaphoreOptions(options, 'rx-consul-semaphore')
 * @returns The options with defaults filled in.
 */
export function resolveSemaphoreOptions(
  options: SemaphoreOptions,
  defaultName: string,
  more?: (report: ReportProblem) => void,
): ResolvedSemaphoreOptions {
  return validated((report) => {
    const contender = checkContenderOptions(options, defaultName, report)
    const limit = checkLimit(options.limit, report)
    const followLimit = checkFollowLimit(options.followLimit, report)
    const permits = checkPermits(options.permits, limit, report)
    if (permits > 1 && options.session !== undefined) {
      report('permits', 'several permits need sessions of their own: give no session with them.')
    }
    const fairness: unknown = options.fairness ?? true
    let fairnessGraceMs: number | undefined
    if (typeof fairness === 'object' && fairness !== null) {
      const { graceMs } = fairness as { graceMs?: unknown }
      if (typeof graceMs === 'number' && Number.isFinite(graceMs) && graceMs >= 0) {
        fairnessGraceMs = graceMs
      } else {
        report('fairness', `graceMs ${JSON.stringify(graceMs)} must be a number of ms, at least 0.`)
      }
    } else if (typeof fairness !== 'boolean') {
      report('fairness', `${JSON.stringify(fairness)} must be true, false or { graceMs }.`)
    }
    more?.(report)
    return {
      ...contender,
      limit,
      followLimit,
      permits,
      fairness: fairness !== false,
      fairnessGraceMs,
    }
  })
}

/**
 * Validates `permits`: an integer from 1 to the limit, and to MAX_PERMITS (the grant's transaction
 * of permits + 2 operations fits an agent from Consul 1.14 on). Whether it fits the agent at hand
 * is known only from its version: more than MAX_PERMITS_EVERY_VERSION is checked when the
 * contender starts (`grantFits` in the contender's effects).
 */
function checkPermits(permits: unknown, limit: number, report: ReportProblem): number {
  if (permits === undefined) return 1
  const ofLimit = Number.isSafeInteger(limit) && limit > 0 ? limit : MAX_PERMITS
  const most = Math.min(ofLimit, MAX_PERMITS)
  if (
    typeof permits !== 'number' ||
    !Number.isSafeInteger(permits) ||
    permits < 1 ||
    permits > most
  ) {
    report(
      'permits',
      `${JSON.stringify(permits)} must be a whole number from 1 to ${most}: ` +
        (ofLimit <= MAX_PERMITS
          ? `a request for more slots than the limit (${limit}) could never be served.`
          : `the grant takes them in one transaction of permits + 2 operations, and no Consul ` +
            `version takes more than ${TXN_OPS_FROM_1_14}.`),
    )
    return 1
  }
  return permits
}

/**
 * The most permits one contender takes on any agent: its grant is one transaction of permits + 2
 * operations (the check of its key, a lock per companion, the CAS, the rewrite of its key), which
 * must fit the 128 operations of Consul from 1.14 on (and a key's flags say up to MAX_WEIGHT).
 */
export const MAX_PERMITS = Math.min(TXN_OPS_FROM_1_14 - 2, MAX_WEIGHT)

/** The most permits whose grant fits the 64 operations of every Consul version: 62. */
export const MAX_PERMITS_EVERY_VERSION = TXN_OPS_EVERY_VERSION - 2

function checkFollowLimit(followLimit: unknown, report: ReportProblem): boolean {
  if (followLimit !== undefined && typeof followLimit !== 'boolean') {
    report('followLimit', `${JSON.stringify(followLimit)} must be true or false.`)
  }
  return followLimit === true
}

/** Validates a semaphore's `limit`; throws SemaphoreError('InvalidOptions'). */
export function resolveLimit(limit: unknown): number {
  return validated((report) => checkLimit(limit, report))
}

function checkLimit(limit: unknown, report: ReportProblem): number {
  if (limit === undefined) {
    report('limit', 'is missing; give the most holders at once, a whole number of at least 1.')
    return 1
  }
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1) {
    report('limit', `${JSON.stringify(limit)} must be a whole number of at least 1.`)
    return 1
  }
  return limit
}
