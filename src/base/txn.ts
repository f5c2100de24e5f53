// The operations of a Consul transaction and its answer: data that the core plans (the release
// plans, the `.lock` writes) and the transport sends, so they sit on the base floor beside the KV
// data types.
import type { KVEntry } from './kv-snapshot.js'

/**
 * One KV operation of a transaction (`PUT /v1/txn`).
 *
 * @example
 * ```ts
 * const ops: TxnOp[] = [
 *   { verb: 'check-session', key: 'service/jobs/task/7', session },
 *   { verb: 'delete', key: 'service/jobs/task/7' },
 * ]
 * const result = await consul.kv.txn(ops)()
 * ```
 */
export type TxnOp =
  /** Write the key unconditionally. */
  | {
      /** Discriminant: an unconditional write. */
      readonly verb: 'set'
      /** The key to write. */
      readonly key: string
      /** The value's bytes, or null for an empty value. */
      readonly value: Uint8Array | null
      /** Flags to store, uint64 as an exact bigint. */
      readonly flags?: bigint
    }
  /** Write the key only if its ModifyIndex is `index` (0n: only if it does not exist). */
  | {
      /** Discriminant: a check-and-set write. */
      readonly verb: 'cas'
      /** The key to write. */
      readonly key: string
      /** The value's bytes, or null for an empty value. */
      readonly value: Uint8Array | null
      /** Flags to store, uint64 as an exact bigint. */
      readonly flags?: bigint
      /** The ModifyIndex the key must have (uint64 as bigint). */
      readonly index: bigint
    }
  /** Write and lock (`acquire`) or unlock (`release`) the key with a session. */
  | {
      /** Discriminant: acquire or release the key's lock. */
      readonly verb: 'lock' | 'unlock'
      /** The key to lock or unlock. */
      readonly key: string
      /** The value's bytes, or null for an empty value. */
      readonly value: Uint8Array | null
      /** Flags to store, uint64 as an exact bigint. */
      readonly flags?: bigint
      /** The session that takes or gives back the lock. */
      readonly session: string
    }
  /**
   * Read the key into the results (the transaction fails if it does not exist), read every key
   * under a prefix (`get-tree`, which fails nothing), delete the key unconditionally, or roll
   * back if the key exists (`check-not-exists`).
   */
  | {
      /** Discriminant: read one key, read a prefix, delete, or check that the key is absent. */
      readonly verb: 'get' | 'get-tree' | 'delete' | 'check-not-exists'
      /** The key to read or delete, or the prefix to read. */
      readonly key: string
    }
  /** Delete the key, or only check it, if its ModifyIndex is `index`; else roll back. */
  | {
      /** Discriminant: a check-and-set delete, or an index check. */
      readonly verb: 'delete-cas' | 'check-index'
      /** The key to check. */
      readonly key: string
      /** The ModifyIndex the key must have (uint64 as bigint). */
      readonly index: bigint
    }
  /** Roll back unless `session` holds the key's lock. */
  | {
      /** Discriminant: a lock-holder check. */
      readonly verb: 'check-session'
      /** The key to check. */
      readonly key: string
      /** The session that must hold it. */
      readonly session: string
    }

/**
 * The answer of a transaction: committed with its results, or rolled back with its errors. A
 * rollback is an answer (Consul's 409), not a ConsulError.
 *
 * @example
 * ```ts
 * const answer = await consul.kv.txn([{ verb: 'get', key: 'service/web/leader' }])()
 * if (E.isRight(answer)) {
 *   const result: TxnResult = answer.right
 *   if (result.committed) console.log(result.results[0]?.session)
 *   else console.warn(result.errors.map((e) => `op ${e.opIndex}: ${e.what}`).join('; '))
 * }
 * ```
 */
export type TxnResult =
  /** Committed: the KV results in Consul's order (write verbs have value null). */
  | {
      /** Discriminant: every operation took effect. */
      readonly committed: true
      /** The KV results Consul returned, in its order. */
      readonly results: readonly KVEntry[]
    }
  /** Rolled back (409): every failed op with its index and Consul's reason. */
  | {
      /** Discriminant: nothing took effect. */
      readonly committed: false
      /** The operations that failed. */
      readonly errors: readonly {
        /** Position of the failed operation in the `ops` array, from 0. */
        readonly opIndex: number
        /** Consul's reason for the failure, as it worded it. */
        readonly what: string
      }[]
    }
