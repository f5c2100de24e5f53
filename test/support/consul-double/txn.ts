/**
 * `PUT /v1/txn` on the double's state: every operation is tried in order at one raft index, each
 * seeing the ones before it; any failure rolls them all back and every failure is reported
 * (consul-http-semantics §5).
 */
import type { ConsulState, StoredEntry, Touched } from './state.js'

/** One KV operation as the request body carries it (uint64 members already exact). */
export interface TxnOpBody {
  readonly Verb: string
  readonly Key: string
  readonly Value: Uint8Array | null
  readonly Flags: bigint
  readonly Index: bigint
  readonly Session: string
}

/** A committed transaction's results, or its failures. */
export type TxnOutcome =
  | {
      readonly committed: true
      readonly results: readonly { readonly entry: StoredEntry; readonly withValue: boolean }[]
      readonly touched: Touched
    }
  | { readonly committed: false; readonly errors: readonly { opIndex: number; what: string }[] }

const READ_VERBS = new Set(['get', 'get-tree', 'check-index', 'check-session'])

/** Whether the transaction writes nothing (Consul's read-only fast path: no raft index). */
export const readOnly = (ops: readonly TxnOpBody[]): boolean =>
  ops.every((op) => READ_VERBS.has(op.Verb))

/** Applies `ops`; `now` is for lock-delays. On a rollback the state is as before. */
export function applyTxn(state: ConsulState, ops: readonly TxnOpBody[], now: number): TxnOutcome {
  // Pre-check on the leader, before raft: a lock-delay fails the transaction without an index.
  const delayed = ops.flatMap((op, opIndex) =>
    op.Verb === 'lock' && state.lockDelayed(op.Key, now)
      ? [{ opIndex, what: `failed to lock key ${JSON.stringify(op.Key)} due to lock delay` }]
      : [],
  )
  if (delayed.length > 0) return { committed: false, errors: delayed }
  const idx = readOnly(ops) ? state.raftIndex : state.nextIndex()
  const restore = state.saveKv()
  const touched: Touched = new Set()
  const results: { entry: StoredEntry; withValue: boolean }[] = []
  const errors: { opIndex: number; what: string }[] = []
  ops.forEach((op, opIndex) => {
    const failed = (what: string): void => void errors.push({ opIndex, what })
    const key = JSON.stringify(op.Key)
    const result = (withValue: boolean): void => {
      const entry = state.entries.get(op.Key)
      if (entry !== undefined) results.push({ entry, withValue })
    }
    switch (op.Verb) {
      case 'set':
        state.set(op.Key, op.Value, op.Flags, idx, touched)
        return result(false)
      case 'cas':
        if (state.cas(op.Key, op.Value, op.Flags, op.Index, idx, touched) === undefined) {
          return failed(`failed to set key ${key}, index is stale`)
        }
        return result(false)
      case 'lock': {
        const outcome = state.lock(op.Key, op.Value, op.Flags, op.Session, idx, touched)
        if ('error' in outcome) return failed(outcome.error)
        if (!outcome.ok) return failed(`failed to lock key ${key}, lock is already held`)
        return result(false)
      }
      case 'unlock': {
        const outcome = state.unlock(op.Key, op.Value, op.Flags, op.Session, idx, touched)
        if ('error' in outcome) return failed(outcome.error)
        if (!outcome.ok) {
          return failed(
            `failed to unlock key ${key}, lock isn't held, or is held by another session`,
          )
        }
        return result(false)
      }
      case 'get':
        if (!state.entries.has(op.Key)) return failed(`key ${key} doesn't exist`)
        return result(true)
      case 'check-not-exists':
        if (state.entries.has(op.Key)) return failed(`key ${key} exists`)
        return
      case 'get-tree':
        for (const entry of state.list(op.Key).entries) results.push({ entry, withValue: true })
        return
      case 'check-index': {
        const entry = state.entries.get(op.Key)
        if (entry === undefined) return failed(`failed to check index, key ${key} doesn't exist`)
        if (entry.modifyIndex !== op.Index) {
          return failed(
            `failed index check for key ${key}, current modify index ${entry.modifyIndex} != ${op.Index}`,
          )
        }
        return result(false)
      }
      case 'check-session': {
        const entry = state.entries.get(op.Key)
        if (entry === undefined) return failed(`failed to check session, key ${key} doesn't exist`)
        if (entry.session !== op.Session) {
          return failed(
            `failed session check for key ${key}, current session ${JSON.stringify(entry.session ?? '')} != ${JSON.stringify(op.Session)}`,
          )
        }
        return result(false)
      }
      case 'delete':
        return state.delete(op.Key, idx, touched)
      case 'delete-cas':
        if (!state.deleteCas(op.Key, op.Index, idx, touched)) {
          return failed(`failed to delete key ${key}, index is stale`)
        }
        return
      default:
        return failed(`unknown KV verb ${JSON.stringify(op.Verb)}`)
    }
  })
  if (errors.length > 0) {
    restore()
    return { committed: false, errors }
  }
  return { committed: true, results, touched }
}
