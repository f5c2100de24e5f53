/**
 * rx-consul-semaphore: a reactive distributed semaphore and leader election on Consul.
 *
 * @packageDocumentation
 */
export { SEMAPHORE_FLAGS, LOCK_FLAGS } from './consul/flags.js'
export type { KVEntry, KVSnapshot, WatchEvent } from './consul/types.js'
export type { ConsulError } from './consul/errors.js'
export { isTransient } from './consul/errors.js'
