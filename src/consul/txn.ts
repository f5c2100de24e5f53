/**
 * KV transactions (`PUT /v1/txn`): all operations commit together (200) or none do (409, with
 * the failed operations and Consul's reasons). uint64 flags and indexes are written as exact
 * bare integers, which `JSON.stringify` cannot do for a bigint.
 */
import * as E from 'fp-ts/lib/Either.js'
import type * as TE from 'fp-ts/lib/TaskEither.js'
import type { CallOptions, TxnOp, TxnResult } from './client-api.js'
import { decodeJson, toKVEntry, TxnAnswerJson, txnAnswerJsonOf } from './codecs.js'
import { rejectedBeforeSending, type ConsulError } from '../base/consul-error.js'
import { statusError, unsent, type Transport } from './http.js'
import { keyProblem } from './keys.js'
import { UINT64_MAX } from './uint64-json.js'

const VERB: Readonly<Record<TxnOp['verb'], string>> = {
  set: 'set',
  cas: 'cas',
  lock: 'lock',
  unlock: 'unlock',
  get: 'get',
  'get-tree': 'get-tree',
  delete: 'delete',
  'delete-cas': 'delete-cas',
  'check-index': 'check-index',
  'check-session': 'check-session',
  'check-not-exists': 'check-not-exists',
}

/** `{"KV":{...}}` for one operation, or why it cannot be sent. */
function opJson(op: TxnOp, position: number): E.Either<string, string> {
  const problem = keyProblem(op.key, false)
  if (problem !== undefined) return E.left(`operation ${position}: ${problem}`)
  const flags = 'flags' in op ? op.flags : undefined
  const index = 'index' in op ? op.index : undefined
  const notUint64 = uint64Problem('flags', flags) ?? uint64Problem('index', index)
  if (notUint64 !== undefined) return E.left(`operation ${position}: ${notUint64}`)
  // Built as text in one pass: one of these is made for every operation of every write.
  let kv = `{"KV":{"Verb":"${VERB[op.verb]}","Key":${JSON.stringify(op.key)}`
  const value = 'value' in op ? op.value : undefined
  if (value === null) kv += ',"Value":null'
  else if (value !== undefined) kv += `,"Value":"${base64Of(value)}"`
  if (flags !== undefined) kv += `,"Flags":${flags}`
  if (index !== undefined) kv += `,"Index":${index}`
  if ('session' in op) kv += `,"Session":${JSON.stringify(op.session)}`
  return E.right(`${kv}}}`)
}

function uint64Problem(name: string, n: bigint | undefined): string | undefined {
  return n !== undefined && (n < 0n || n > UINT64_MAX) ? `${name} ${n} is not a uint64` : undefined
}

/** The bytes in base64, read where they are (no copy). */
function base64Of(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64')
}

/** The `txn` call of a ConsulClient's KV part. */
export function createTxn(transport: Transport) {
  return (
    ops: readonly TxnOp[],
    options: CallOptions = {},
  ): TE.TaskEither<ConsulError, TxnResult> => {
    // The body in one loop, without fp-ts's `pipe`: one of these is made for every write.
    const parts: string[] = []
    for (let position = 0; position < ops.length; position++) {
      const part = opJson(ops[position] as TxnOp, position)
      if (E.isLeft(part)) return unsent(rejectedBeforeSending('PUT /v1/txn', part.left))
      parts.push(part.right)
    }
    if (parts.length === 0) {
      return unsent(
        rejectedBeforeSending('PUT /v1/txn', 'a transaction needs at least one operation'),
      )
    }
    return transport.call(
      {
        method: 'PUT',
        path: '/v1/txn',
        body: `[${parts.join(',')}]`,
        contentType: 'application/json',
        signal: options.signal,
      },
      (answer): E.Either<ConsulError, TxnResult> => {
        if (answer.status !== 200 && answer.status !== 409) return E.left(statusError(answer))
        const decoded = decodeJson(TxnAnswerJson, answer.body, answer.label, txnAnswerJsonOf)
        if (E.isLeft(decoded)) return decoded
        const { Results, Errors } = decoded.right
        return E.right(
          answer.status === 200
            ? { committed: true, results: (Results ?? []).map((r) => toKVEntry(r.KV)) }
            : {
                committed: false,
                errors: (Errors ?? []).map((e) => ({ opIndex: e.OpIndex, what: e.What })),
              },
        )
      },
    )
  }
}
