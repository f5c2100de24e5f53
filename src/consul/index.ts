/**
 * rx-consul-semaphore/consul: the low-level Consul client the contenders run on, for those who
 * call Consul through it themselves (KV reads and writes, transactions, sessions, prefix watches),
 * write a ConsulClient of their own, or tell its failures apart.
 *
 * EXPERIMENTAL: these names follow the client's transport and may change or go away in any minor
 * release (semver does not cover this entry). What users compose with is in the root entry,
 * `rx-consul-semaphore`, which this entry does not repeat: import `createConsulClient`, the
 * `ConsulClient` type, its configuration (`ConsulClientConfig`, `ConsulTlsOptions`,
 * `Consistency`, `ConsulConfigError`) and the transaction types of `fencedTxn` (`TxnOp`,
 * `TxnResult`, `KVEntry`) from there.
 *
 * @example
 * ```ts
 * import { createConsulClient } from 'rx-consul-semaphore'
 * import { isTransient, type ConsulError } from 'rx-consul-semaphore/consul'
 * const consul = createConsulClient()
 * const listed = await consul.kv.list('service/db/lock')()
 * if (listed._tag === 'Left') {
 *   const error: ConsulError = listed.left
 *   console.warn(isTransient(error) ? 'retry later:' : 'giving up:', error.message)
 * }
 * ```
 * @packageDocumentation
 */

// The client `createConsulClient` returns, and the configuration it resolved.
export type { ConsulHttpClient } from './client.js'
export type { ResolvedConfig } from './config.js'

// The options and answers of the raw calls of a ConsulClient.
export type {
  CallOptions,
  ReadOptions,
  ListOptions,
  PutOptions,
  DeleteOptions,
  SessionCreateOptions,
  SessionInfo,
  WatchOptions,
  NetworkHealth,
} from './client-api.js'
export type { KVSnapshot, WatchEvent } from '../base/kv-snapshot.js'

// The blocking-query watch of a prefix, on any ConsulClient.
export { watchPrefix } from './watch-prefix.js'

// The typed failures every call answers with on its left.
export { isTransient } from '../base/failure-kinds.js'
export type {
  ConsulError,
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
} from '../base/consul-error.js'
