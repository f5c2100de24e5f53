import type { TxnResult } from '../../consul/client-api.js'
import { namesInvalidSession } from '../call-policy.js'

/** What Consul said to a one-op txn `lock` on a key. */
export type LockAnswer =
  /** This session holds the key; `modifyIndex` is what the acquisition wrote, when reported. */
  | { readonly type: 'acquired'; readonly modifyIndex: bigint | undefined }
  /** Another session holds the key. */
  | { readonly type: 'held' }
  /** Consul refuses the key for the lock-delay that followed an invalidation. */
  | { readonly type: 'lock-delay' }
  /** Consul no longer has the session. */
  | { readonly type: 'session-gone' }

/**
 * Reads the answer to a txn `lock`: committed is acquired; a rollback is told apart by Consul's
 * words (consul-http-semantics.md 5.2), since all three come back as 409.
 *
 * @example
 * const answer = lockAnswer(result) // { type: 'lock-delay' } while Consul refuses the key
 * @param result - The transaction's result.
 * @returns What it means for the acquisition.
 */
export function lockAnswer(result: TxnResult): LockAnswer {
  if (result.committed) return { type: 'acquired', modifyIndex: result.results[0]?.modifyIndex }
  const what = result.errors.map((e) => e.what).join('; ')
  if (namesInvalidSession(what)) return { type: 'session-gone' }
  return /lock delay/i.test(what) ? { type: 'lock-delay' } : { type: 'held' }
}
