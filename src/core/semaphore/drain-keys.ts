import type { KVEntry } from '../../base/kv-snapshot.js'
import { directChild } from '../keys/direct-child.js'
import { LOCK_KEY_NAME } from '../keys/lock-key.js'

/**
 * The value of a drain's contender keys, which is how a drain is told from a contender: `drain`
 * writes it, `liftDrain` looks for it, and `rxsem status` and `watch` show it as the holder's value.
 */
export const DRAIN_VALUE = 'rxsem drain'

const utf8 = new TextEncoder()

/** DRAIN_VALUE as the bytes a drain's contender key holds. */
export const DRAIN_VALUE_BYTES: Uint8Array = utf8.encode(DRAIN_VALUE)

/**
 * The sessions of a drain at `prefix`: contender keys `<prefix>/<session>` locked by their own
 * session whose value is DRAIN_VALUE, in listed (key) order. Whether `.lock` lists them is the
 * caller's question: a drain cut short between its sessions and its write of `.lock` leaves keys
 * it does not list, which the next `drain` lists and `liftDrain` removes.
 *
 * @example
 * drainSessions(snapshot.entries, 'svc/jobs') // ['4ca8e74b-…', '9f1c…']
 * @param entries - Every entry of the prefix listing.
 * @param prefix - The semaphore prefix.
 * @returns The drain's sessions.
 */
export function drainSessions(entries: readonly KVEntry[], prefix: string): readonly string[] {
  const childOf = directChild(prefix)
  const sessions: string[] = []
  for (const entry of entries) {
    const id = childOf(entry.key)
    if (id === undefined || id === LOCK_KEY_NAME || entry.session !== id) continue
    if (isDrainValue(entry.value)) sessions.push(id)
  }
  return sessions
}

function isDrainValue(value: Uint8Array | null): boolean {
  if (value === null || value.length !== DRAIN_VALUE_BYTES.length) return false
  return value.every((byte, i) => byte === DRAIN_VALUE_BYTES[i])
}
