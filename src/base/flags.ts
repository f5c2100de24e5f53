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

/**
 * Flags on the waiter key of a leader-election contender of this library: the lock's plus one. A
 * waiter of the single-key lock takes `<prefix>/.queue/<session>` with its session and these flags,
 * so that its waiters queue by arrival and each waits on the one ahead (docs/design.md, "Leader
 * election"). Consul's Go `Lock` reads `<prefix>/.lock` only, so it never sees these keys.
 *
 * @example
 * ```ts
 * const waiter = snapshot.entries.find((e) => e.key === waiterKey(prefix, session))
 * if (waiter?.flags === LOCK_WAITER_FLAGS) console.log(session, 'waits in line for the lock')
 * ```
 */
export const LOCK_WAITER_FLAGS = LOCK_FLAGS + 1n

/**
 * Flags on the contender key of a semaphore contender of this library: the semaphore's plus one.
 * They say "hand me a slot directly": a holder of this library that releases may name such a
 * waiter holder in its own release (docs/interop.md). Consul's Go client reads only `.lock`'s
 * flags, so it queues, prunes and acquires beside these keys as beside its own.
 *
 * @example
 * ```ts
 * const heir = snapshot.entries.find((e) => e.key === contenderKey(prefix, waiter))
 * if (heir?.flags === CONTENDER_FLAGS) console.log(waiter, 'runs rx-consul-semaphore')
 * ```
 */
export const CONTENDER_FLAGS = SEMAPHORE_FLAGS + 1n

/**
 * Flags that the write making a contender of this library a holder puts on its contender key: the
 * semaphore's plus two. Its own CAS of `.lock` and a release that hands it the slot both rewrite
 * the key in the same transaction, so the key's ModifyIndex is the index of that write, which is
 * also the `.lock` ModifyIndex that made it a holder: its fencing token. The rewrite also wakes a
 * waiter that long-polls this key, the next in line (docs/design.md, "Waiting").
 *
 * @example
 * ```ts
 * const own = snapshot.entries.find((e) => e.key === contenderKey(prefix, session))
 * if (own?.flags === HOLDER_FLAGS) console.log('holder since index', own.modifyIndex)
 * ```
 */
export const HOLDER_FLAGS = SEMAPHORE_FLAGS + 2n

/**
 * A holder's key between the two writes of a renewal's transaction (the semaphore's flags plus
 * three), never seen outside it. Consul skips a write that changes nothing (the ModifyIndex stays),
 * so a holder that keeps its slot for the next job sets its key to these flags and back to
 * HOLDER_FLAGS in one transaction: the key ends as it was, at the transaction's index, which is
 * the next job's fencing token.
 *
 * @example
 * ```ts
 * const ops = [{ verb: 'set', key, value, flags: RENEWING_FLAGS }, { verb: 'set', key, value, flags: HOLDER_FLAGS }]
 * ```
 */
export const RENEWING_FLAGS = SEMAPHORE_FLAGS + 3n

/**
 * The flags of a companion key: the semaphore's plus four. A contender of this library that holds
 * k permits is k sessions; each of the k − 1 it adds to its own locks a key of its own under the
 * prefix, named by that session, written in the transaction that grants the permits. Go's client
 * reads the flags of `.lock` only, so it prunes and counts such keys' sessions as holders like any.
 *
 * @example
 * ```ts
 * const companions = snapshot.entries.filter((e) => e.flags === COMPANION_FLAGS).length
 * ```
 */
export const COMPANION_FLAGS = SEMAPHORE_FLAGS + 4n

/**
 * Flags of the contender key of an all-or-nothing contender (`withSlots`), one in each of its
 * prefixes, all made in one transaction: it waits and holds under them. They are not
 * CONTENDER_FLAGS, so no holder hands it a single slot in its release (it takes a slot of every
 * prefix at once, or none).
 *
 * @example
 * ```ts
 * const spanning = snapshot.entries.filter((e) => e.flags === ALL_SLOTS_FLAGS).length
 * ```
 */
export const ALL_SLOTS_FLAGS = SEMAPHORE_FLAGS + 5n

/** The flags of a waiting contender of k ≥ 2 permits: WEIGHTED_FLAGS_BASE + k (see weightOfFlags). */
export const WEIGHTED_FLAGS_BASE = SEMAPHORE_FLAGS + 0x100n

/** The most permits a contender's flags can state. */
export const MAX_WEIGHT = 0xff

/** The flags of the least and the most permits a waiting key can ask for (see weightOfFlags). */
const LEAST_WEIGHTED = WEIGHTED_FLAGS_BASE + 2n
const MOST_WEIGHTED = WEIGHTED_FLAGS_BASE + BigInt(MAX_WEIGHT)

/**
 * The flags a waiting contender of `permits` permits puts on its key: CONTENDER_FLAGS for one,
 * WEIGHTED_FLAGS_BASE + permits for more (so that no holder hands it a single slot: a hand-off
 * goes only to a key with CONTENDER_FLAGS).
 *
 * @example
 * waitingFlags(1) === CONTENDER_FLAGS // true
 * @param permits - 1 to MAX_WEIGHT.
 * @returns The flags.
 */
export function waitingFlags(permits: number): bigint {
  return permits === 1 ? CONTENDER_FLAGS : WEIGHTED_FLAGS_BASE + BigInt(permits)
}

/**
 * How many permits a waiting contender's key asks for, from its flags: k for a key of
 * `waitingFlags(k)`, 1 for any other (a Go contender's, ours of one permit).
 *
 * @example
 * weightOfFlags(waitingFlags(3)) // 3
 * weightOfFlags(SEMAPHORE_FLAGS) // 1
 */
export function weightOfFlags(flags: bigint): number {
  // Compared before any arithmetic: every waiter of every view is weighed, and a bigint
  // subtraction allocates.
  return flags >= LEAST_WEIGHTED && flags <= MOST_WEIGHTED ? Number(flags - WEIGHTED_FLAGS_BASE) : 1
}
