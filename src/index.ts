/**
 * rx-consul-semaphore: a reactive distributed semaphore and leader election on Consul.
 *
 * This entry is what users compose with: the contenders (`semaphore`, `leaderElection`), their
 * one-shot and Promise forms (`tryAcquire`, `tryLead`, `withSlot`, `exclusive`), the read-write
 * lock (`readWriteLock`, `withReadLock`, `withWriteLock`), a slot of several semaphores at once
 * (`withSlots`, `allSlots`), `setLimit`,
 * their options, states and errors, and what it takes to pass them a Consul client
 * (`createConsulClient`, the `ConsulClient` type and its configuration), and the operator calls
 * `evict`, `drain` and `liftDrain`. Removing or changing any
 * of these names is a breaking change. The Consul client's raw calls, their options and answers,
 * and its typed failures are in `rx-consul-semaphore/consul`; the pure core's building blocks
 * (the decide steps, the contender's step and its state, the `.lock` codec) are in
 * `rx-consul-semaphore/experimental`; both may change in any minor release. Test doubles are in
 * `rx-consul-semaphore/testing`.
 *
 * @packageDocumentation
 */

// The contenders and their public states.
export {
  semaphore,
  type ContenderFailure,
  type Semaphore,
  type SemaphoreState,
} from './recipes/semaphore.js'
export {
  leaderElection,
  type LeaderElection,
  type LeaderElectionOptions,
  type LeaderElectionState,
} from './recipes/leader-election.js'
export type {
  ContenderOptions,
  SemaphoreOptions,
  ServiceCheck,
  Duration,
} from './options/contender-options.js'
export type {
  MeterProviderLike,
  TelemetryOptions,
  TracerProviderLike,
} from './telemetry/telemetry-options.js'
export type { RankedContender, TransitionReason } from './core/events.js'
export type { Leader } from './core/leader-key/decide-leader-key.js'
export type { RevokeRequest } from './core/revoke/revoke-request.js'
export { SemaphoreError, type SemaphoreErrorKind } from './base/semaphore-error.js'

// One-shot, Promise and per-task forms.
export { tryAcquire, tryLead, type TryOptions } from './recipes/try-acquire.js'
export { withSlot, type WithSlotOptions } from './recipes/with-slot.js'
export {
  allSlots,
  withSlots,
  MAX_SEMAPHORES,
  type AllSlots,
  type AllSlotsEntry,
  type AllSlotsState,
} from './recipes/all-slots.js'
export {
  readWriteLock,
  withReadLock,
  withWriteLock,
  type ReadWriteLock,
  type ReadWriteLockOptions,
  type WithReadWriteLockOptions,
} from './recipes/read-write-lock.js'
// Before `process.exit()` after withSlot jobs: the sessions their workers keep idle, destroyed now.
export { destroyIdleSessions } from './effects/session-shelf.js'
export { setLimit, type LimitChange, type SetLimitOptions } from './operator/set-limit.js'
// Operator calls for incidents: take a holder out, hold every slot back until lifted.
export { evict, type EvictOptions, type Eviction } from './operator/evict.js'
export {
  drain,
  liftDrain,
  DRAIN_VALUE,
  type Drain,
  type DrainLift,
  type DrainOptions,
  type LiftDrainOptions,
} from './operator/drain.js'
export {
  doctor,
  type DoctorCheck,
  type DoctorFinding,
  type DoctorOptions,
  type DoctorReport,
  type DoctorSeverity,
} from './operator/doctor.js'
export type { SlotGuard } from './handle/slot-guard.js'
// The operations and the answer of a guard's `fencedTxn`.
export type { TxnOp, TxnResult } from './consul/client-api.js'
export type { KVEntry } from './base/kv-snapshot.js'
export {
  exclusive,
  type ExclusiveOptions,
  type ExclusiveResult,
  type ExclusiveClosed,
} from './recipes/exclusive.js'
export type { TaskKeyFinish } from './effects/task-lock/task-lock-finish.js'
export type { TaskLossReason } from './core/task-lock/task-lock-loss.js'

// Interop with `consul lock`: where the keys are and which flags mark them.
export {
  SEMAPHORE_FLAGS,
  LOCK_FLAGS,
  CONTENDER_FLAGS,
  HOLDER_FLAGS,
  RENEWING_FLAGS,
} from './base/flags.js'
export { lockKey } from './core/keys/lock-key.js'
export { contenderKey } from './core/keys/contender-key.js'

// The Consul client to pass as `consul`: its factory, its capability interface (to name or wrap
// a client), its configuration and the error a wrong configuration throws. The client's raw calls,
// their options and answers, and its typed failures are in `rx-consul-semaphore/consul`.
export { createConsulClient } from './consul/client.js'
export type { ConsulClientConfig, ConsulTlsOptions, Consistency } from './consul/config.js'
export { ConsulConfigError } from './consul/config-error.js'
export type { ConsulClient } from './consul/client-api.js'
