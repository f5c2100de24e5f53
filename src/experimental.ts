/**
 * rx-consul-semaphore/experimental: the pure core's building blocks, for those who build their
 * own contender on them or study its decisions: the decisions, the contender's machine
 * (`contenderStep`, `lifeStep`), and the one interpreter that runs the machine (`Interpreter`,
 * `contenderStates`), which does no I/O itself: it makes its calls on the port it is given.
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
  Handed,
  LockBodyShape,
  PrefixProblem,
  SemaphoreView,
  SharedHolder,
} from './core/events.js'
export { isPrefixProblem } from './core/contender/is-prefix-problem.js'

// The leader key: the single-key lock of `consul lock` (leader election).
export {
  decideLeaderKey,
  readLeaderKey,
  type DecideLeaderKeyOptions,
} from './core/leader-key/decide-leader-key.js'

// The contender state machine: the per-session step, the machine of a contender's whole life that
// steps each session's run on it, and the one interpreter that carries out the machine's commands
// on a port of Observables (what the library runs, given its Consul port).
export {
  contenderStep,
  type ContenderCommand,
  type ContenderStep,
} from './core/contender/contender-step.js'
export {
  lifeStep,
  unstarted,
  type Between,
  type Closing,
  type ContenderLife,
  type Creating,
  type Done,
  type LifeStep,
  type Run,
  type Running,
  type Unstarted,
  type GiveUp,
  type LifeCommand,
  type LifeInput,
  type LifeOptions,
  type LifeTimer,
  type RunRelease,
  type SessionGrant,
  type SessionSource,
} from './core/contender/contender-life.js'
export {
  contenderStates,
  Interpreter,
  type ContenderObserver,
} from './effects/coordinator/interpreter.js'
export type {
  ContenderPort,
  FollowEvent,
  WriteEvent,
} from './effects/coordinator/contender-port.js'
export {
  HeldBack,
  followWatch,
  heldBackBy,
  heldBackTo,
  type FollowingRun,
  type FollowSink,
  type Offered,
} from './effects/coordinator/held-back.js'
export type { CheckRefusal } from './core/contender/check-refusal.js'
export { holdBackUntil, holdsBack } from './core/semaphore/hold-back.js'
export type { LeaseEvent } from './effects/session-lease.js'
export type { ContenderEnd } from './telemetry/contender-telemetry.js'
export type {
  ContenderInput,
  DecidedSnapshot,
  RefenceInput,
} from './core/contender/contender-input.js'
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
