import * as E from 'fp-ts/lib/Either.js'
import type { ConsulError } from '../../base/consul-error.js'
import type { KVSnapshot } from '../../base/kv-snapshot.js'
import type { TxnResult } from '../../base/txn.js'

/**
 * The prefix as a committed transaction read it right after its write: a transaction of one `lock`
 * (answered with one entry), maybe a `delete` (answered with none), then a `get-tree` of the prefix,
 * whose entries are all the results after the first. Its index is that of the write, the largest
 * ModifyIndex read: nothing under the prefix is newer. So a contender decides on the prefix as of
 * its own write (a join, an acquisition), and its watch goes on from there, instead of waking for
 * that write. Undefined for a failure, a rollback, or an empty read.
 *
 * @example
 * const seed = prefixAfterWrite(await client.kv.txn([lockOp, { verb: 'get-tree', key: 'svc/lock/' }])())
 * @param answer - The transaction's answer.
 * @returns The prefix as of the write, or undefined.
 */
export function prefixAfterWrite(
  answer: E.Either<ConsulError, TxnResult> | TxnResult,
): KVSnapshot | undefined {
  const result = 'committed' in answer ? answer : E.isRight(answer) ? answer.right : undefined
  if (result === undefined || !result.committed) return undefined
  const entries = result.results.slice(1)
  let index = 0n
  for (const entry of entries) if (entry.modifyIndex > index) index = entry.modifyIndex
  return index === 0n ? undefined : { index, entries }
}
