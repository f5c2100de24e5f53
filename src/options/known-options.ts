/**
 * The option names a function of the public API takes, so that one it does not take (a typo:
 * `withSlot({ prefix, limt: 2 })`) is named as unknown, with the nearest known one, instead of
 * being ignored while a required option is reported missing. Each function keeps its table beside
 * its options' interface, typed against it (`satisfies OptionNames<...>`): it lists every option the
 * interface has, and no other. The tables the contenders share are here.
 */
import { nearestName } from '../base/nearest-name.js'
import type { ContenderOptions, SemaphoreOptions } from './contender-options.js'
import { validated } from './contender-options.js'

/** Every key of `O`, and no other: what a table of option names is checked against. */
export type OptionNames<O> = Readonly<Record<keyof O & string, true>>

/** The options of the sessions a contender or a task lock makes, and of their client. */
export const SESSION_OPTION_NAMES = {
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

/** The options every operator call takes (`setLimit`, `evict`, `drain`, `liftDrain`). */
export const OPERATOR_OPTION_NAMES = { prefix: true, consul: true, signal: true } as const

/** The options of a contender (`leaderElection`), and of every semaphore. */
export const CONTENDER_OPTION_NAMES = {
  ...SESSION_OPTION_NAMES,
  prefix: true,
  value: true,
  session: true,
  watchWait: true,
  rideThrough: true,
} as const satisfies OptionNames<ContenderOptions>

/** The options of a semaphore (`semaphore`), and of the calls that make one. */
export const SEMAPHORE_OPTION_NAMES = {
  ...CONTENDER_OPTION_NAMES,
  limit: true,
  followLimit: true,
  permits: true,
  fairness: true,
} as const satisfies OptionNames<SemaphoreOptions>

/**
 * Throws SemaphoreError('InvalidOptions') naming each option of `options` that `api` does not
 * take (those not in `known`), with the nearest one it does take when one is close ("did you mean limit?"), or the
 * list of those it takes; nothing has been sent to Consul then.
 *
 * @example
 * rejectUnknownOptions({ prefix: 'jobs', limt: 2 }, 'withSlot', WITH_SLOT_OPTION_NAMES)
 * // SemaphoreError: option limt: withSlot has no such option. Did you mean limit?
 * @param options - The options object as the caller gave it.
 * @param api - The function it was given to.
 * @param known - The names of the options `api` takes.
 */
export function rejectUnknownOptions(
  options: unknown,
  api: string,
  known: Readonly<Record<string, true>>,
): void {
  if (typeof options !== 'object' || options === null) return
  let unknown = false
  for (const name in options)
    if (Object.hasOwn(options, name) && !Object.hasOwn(known, name)) unknown = true
  if (!unknown) return
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
