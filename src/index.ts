/**
 * rx-consul-semaphore: a reactive distributed semaphore and leader election on Consul.
 *
 * @packageDocumentation
 */
export { SEMAPHORE_FLAGS, LOCK_FLAGS, CONTENDER_FLAGS, HOLDER_FLAGS } from './consul/flags.js'
export type { KVEntry, KVSnapshot, WatchEvent } from './consul/types.js'
export type { ConsulError } from './consul/errors.js'
export { isTransient } from './consul/errors.js'
export { createConsulClient, type ConsulHttpClient } from './consul/client.js'
export type {
  ConsulClientConfig,
  ConsulTlsOptions,
  Consistency,
  ResolvedConfig,
} from './consul/config.js'
export { ConsulConfigError } from './consul/config-error.js'
export { watchPrefix } from './consul/watch-prefix.js'
export type {
  ConsulClient,
  CallOptions,
  ReadOptions,
  ListOptions,
  PutOptions,
  DeleteOptions,
  SessionCreateOptions,
  SessionInfo,
  TxnOp,
  TxnResult,
  WatchOptions,
} from './consul/client-api.js'
export type {
  Unreachable,
  TlsRejected,
  Timeout,
  PermissionDenied,
  NotConsul,
  ServerError,
  BadRequest,
  DecodeError,
  TooLarge,
  Aborted,
} from './consul/errors.js'
export type {
  ContenderEvent,
  Decision,
  LockShape,
  PrefixProblem,
  RankedContender,
  SemaphoreView,
  TransitionReason,
} from './core/events.js'
export { decide, type DecideOptions } from './core/semaphore/decide.js'
export { lockKey } from './core/keys/lock-key.js'
export { contenderKey } from './core/keys/contender-key.js'
export { decodeLock } from './core/lock-body/decode-lock.js'
export { encodeLock } from './core/lock-body/encode-lock.js'
export type { LockRecord } from './core/lock-body/lock-record.js'
export { isPrefixProblem } from './core/contender/is-prefix-problem.js'
export { leaseDeadline, type LeaseMargin } from './core/contender/lease-deadline.js'
export type {
  ContenderAction,
  ContenderState,
  ContenderStateOptions,
  CountedGrace,
  SharedGrace,
} from './core/contender/contender-state-model.js'
export { contenderState } from './core/contender/contender-state.js'
export { holding } from './core/contender/holding.js'
export { releaseLock, type ReleaseDecision } from './core/lock-body/release-lock.js'
export {
  semaphore,
  type ContenderFailure,
  type Semaphore,
  type SemaphoreState,
} from './semaphore.js'
export { SemaphoreError, type SemaphoreErrorKind } from './errors.js'
export type { ContenderOptions, SemaphoreOptions, Duration } from './options/contender-options.js'
export { withSlot } from './with-slot.js'
export type { SlotGuard } from './slot-guard.js'
export {
  leaderElection,
  type LeaderElection,
  type LeaderElectionOptions,
  type LeaderElectionState,
} from './leader-election.js'
export {
  decideLock,
  readLockLeader,
  type DecideLockOptions,
  type LockLeader,
} from './core/single-key-lock/decide-lock.js'
export type { DecideStep } from './core/contender/contender-state-model.js'
export { tryAcquire, tryLead } from './try-acquire.js'
export {
  exclusive,
  type ExclusiveOptions,
  type ExclusiveResult,
  type ExclusiveClosed,
} from './exclusive.js'
export type { TaskKeyFinish } from './effects/task-lock-finish.js'
export type { TaskLossReason } from './core/task-lock/task-lock-loss.js'
