/**
 * The option names each function of the public API takes, so that one it does not take (a typo:
 * `withSlot({ prefix, limt: 2 })`) is named as unknown, with the nearest known one, instead of
 * being ignored while a required option is reported missing. Each table is typed against its
 * options' interface: it lists every option the interface has, and no other.
 */
import type { DoctorOptions } from '../operator/doctor.js'
import type { DrainOptions, LiftDrainOptions } from '../operator/drain.js'
import type { EvictOptions } from '../operator/evict.js'
import type { ExclusiveOptions } from '../recipes/exclusive.js'
import type { SetLimitOptions } from '../operator/set-limit.js'
import type { WithSlotOptions } from '../recipes/with-slot.js'
import { nearestName } from '../base/nearest-name.js'
import type { ContenderOptions, SemaphoreOptions } from './contender-options.js'
import { validated } from './contender-options.js'

/** Every key of `O`, and no other: what a table of option names is checked against. */
type Names<O> = Readonly<Record<keyof O & string, true>>

/** The options of the sessions a contender or a task lock makes, and of their client. */
const sessionOptions = {
  consul: true,
  ttl: true,
  sessionName: true,
  lockDelay: true,
  checks: true,
  serviceChecks: true,
  leaseMargin: true,
  startupTimeout: true,
  scheduler: true,
  telemetry: true,
} as const

const contender = {
  ...sessionOptions,
  prefix: true,
  value: true,
  session: true,
  watchWait: true,
  rideThrough: true,
} as const satisfies Names<ContenderOptions>

const semaphore = {
  ...contender,
  limit: true,
  followLimit: true,
  fairness: true,
} as const satisfies Names<SemaphoreOptions>

const withSlot = {
  ...semaphore,
  waitTimeout: true,
  signal: true,
} as const satisfies Names<WithSlotOptions>

// A task lock's sessions are its own, and it has no prefix of contenders (see ExclusiveOptions).
const exclusive = {
  ...sessionOptions,
  keyOf: true,
  run: true,
  isDone: true,
  concurrency: true,
  onDone: true,
  watchPrefix: true,
  value: true,
  onClosed: true,
} as const satisfies Names<ExclusiveOptions<unknown, unknown>>

/** The option names of each function of the public API that takes an options object. */
export const OPTION_NAMES = {
  semaphore,
  leaderElection: contender,
  tryAcquire: { ...semaphore, signal: true },
  tryLead: { ...contender, signal: true },
  withSlot,
  exclusive,
  evict: { prefix: true, session: true, consul: true, signal: true } satisfies Names<EvictOptions>,
  drain: { prefix: true, limit: true, consul: true, signal: true } satisfies Names<DrainOptions>,
  liftDrain: { prefix: true, consul: true, signal: true } satisfies Names<LiftDrainOptions>,
  setLimit: {
    prefix: true,
    limit: true,
    consul: true,
    signal: true,
  } satisfies Names<SetLimitOptions>,
  doctor: {
    consul: true,
    prefix: true,
    ttl: true,
    lockDelay: true,
    checks: true,
    serviceChecks: true,
  } satisfies Names<DoctorOptions>,
} as const

/** A function of the public API that takes an options object. */
export type OptionsOf = keyof typeof OPTION_NAMES

/**
 * Throws SemaphoreError('InvalidOptions') naming each option of `options` that `api` does not
 * take, with the nearest one it does take when one is close ("did you mean limit?"), or the
 * list of those it takes; nothing has been sent to Consul then.
 *
 * @example
 * rejectUnknownOptions({ prefix: 'jobs', limt: 2 }, 'withSlot')
 * // SemaphoreError: option limt: withSlot has no such option. Did you mean limit?
 * @param options - The options object as the caller gave it.
 * @param api - The function it was given to.
 */
export function rejectUnknownOptions(options: unknown, api: OptionsOf): void {
  if (typeof options !== 'object' || options === null) return
  const known: Readonly<Record<string, true>> = OPTION_NAMES[api]
  const names = Object.keys(known).sort()
  validated((report) => {
    for (const name of Object.keys(options)) {
      if (Object.hasOwn(known, name)) continue
      const near = nearestName(name, names)
      report(
        name,
        near === undefined
          ? `${api} has no such option; its options are ${names.join(', ')}.`
          : `${api} has no such option. Did you mean ${near}?`,
      )
    }
  })
}
