/**
 * rx-consul-semaphore/experimental: the pure core's building blocks, for those who build their
 * own contender on them or study its decisions.
 *
 * EXPERIMENTAL: these names follow the core's internals and may change or go away in any minor
 * release (semver does not cover this entry). What users compose with is in the root entry,
 * `rx-consul-semaphore`, which this entry does not repeat: import `KVSnapshot`, `WatchEvent`,
 * `TransitionReason`, `RankedContender` or `Leader` from there.
 *
 * @example
 * ```ts
 * import { decide } from 'rx-consul-semaphore/experimental'
 * const decision = decide(snapshot, { prefix: 'service/db/lock', session, limit: 3 })
 * if (decision.type === 'TryAcquire') console.log('CAS .lock at index', decision.cas)
 * ```
 * @packageDocumentation
 */

// The semaphore decision, one snapshot at a time.
export { decide, type DecideOptions } from './core/semaphore/decide.js'
export type {
  ContenderEvent,
  Decision,
  LockBodyShape,
  PrefixProblem,
  SemaphoreView,
} from './core/events.js'
export { isPrefixProblem } from './core/contender/is-prefix-problem.js'

// The leader key: the single-key lock of `consul lock` (leader election).
export {
  decideLeaderKey,
  readLeaderKey,
  type DecideLeaderKeyOptions,
} from './core/leader-key/decide-leader-key.js'

// The contender state machine: its one pure step, the step scanned as operators (its steps, its
// states, and their boolean projection).
export {
  contenderStep,
  type ContenderCommand,
  type ContenderStep,
} from './core/contender/contender-step.js'
export {
  contenderState,
  contenderSteps,
  writeAfter,
  type ContenderPerformer,
} from './core/contender/contender-state.js'
export type {
  ContenderInput,
  DecidedSnapshot,
  RefenceInput,
} from './core/contender/contender-input.js'
export { holding } from './core/contender/holding.js'
export type {
  ContenderAction,
  ContenderPhase,
  ContenderState,
  ContenderStateOptions,
  CountedGrace,
  DecideStep,
  RefenceStep,
  SharedGrace,
} from './core/contender/contender-state-model.js'
export type { Refencing } from './core/semaphore/refencing.js'
export type { HandOff } from './core/semaphore/hand-off.js'
export type { LastFailure } from './core/contender/last-failure.js'
export { leaseDeadline, type LeaseMargin } from './core/contender/lease-deadline.js'

// The `.lock` body: read, write, and the release of a holder.
export { decodeLockBody } from './core/lock-body/decode-lock-body.js'
export { encodeLockBody } from './core/lock-body/encode-lock-body.js'
export type { LockBodyRecord } from './core/lock-body/lock-body-record.js'
export {
  releaseFromLockBody,
  type ReleaseDecision,
} from './core/lock-body/release-from-lock-body.js'
