/**
 * The KV flags Consul's own Go client (`api/semaphore.go`, `api/lock.go`, and so `consul lock`)
 * puts on the keys it manages. They are unsigned 64-bit values, above 2^53, so they are carried as
 * `bigint` everywhere: a JS number would round them and mismatch every Go client.
 */

/**
 * Flags on every key of a semaphore prefix (`consul lock -n N`): 0xe0f69a2baa414de0.
 *
 * @example
 * ```ts
 * const entry = snapshot.entries.find((e) => e.key === lockKey('service/db/lock'))
 * if (entry !== undefined && entry.flags !== SEMAPHORE_FLAGS) console.warn('not a semaphore')
 * ```
 */
export const SEMAPHORE_FLAGS = 0xe0f69a2baa414de0n

/**
 * Flags on the single key of a lock (`consul lock`, limit 1): 0x2ddccbc058a50c18.
 *
 * @example
 * ```ts
 * await consul.kv.put(lockKey(prefix), 'node-a', { acquire: session, flags: LOCK_FLAGS })()
 * ```
 */
export const LOCK_FLAGS = 0x2ddccbc058a50c18n
