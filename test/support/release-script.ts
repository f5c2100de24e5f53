/**
 * Test-only: plays a release plan against a script of answers and writes each call it asks for as
 * one short line, so that a test reads as the conversation between the plan and Consul.
 */
import assert from 'node:assert/strict'
import * as E from 'fp-ts/lib/Either.js'
import type { TxnOp, TxnResult } from '../../src/consul/client-api.js'
import type { ConsulError } from '../../src/base/consul-error.js'
import { CONTENDER_FLAGS, HOLDER_FLAGS, LOCK_FLAGS, SEMAPHORE_FLAGS } from '../../src/base/flags.js'
import type { KVEntry, KVSnapshot } from '../../src/base/kv-snapshot.js'
import type {
  LatestPrefix,
  PlanStep,
  ReleaseAnswer,
  ReleaseCall,
} from '../../src/core/release/release-call.js'

const FLAG_NAMES = new Map<bigint, string>([
  [SEMAPHORE_FLAGS, 'SEMAPHORE'],
  [CONTENDER_FLAGS, 'CONTENDER'],
  [HOLDER_FLAGS, 'HOLDER'],
  [LOCK_FLAGS, 'LOCK'],
])
const text = (value: Uint8Array | null) => (value === null ? '' : new TextDecoder().decode(value))
const flagName = (flags: bigint | undefined) =>
  flags === undefined ? '' : ` flags=${FLAG_NAMES.get(flags) ?? String(flags)}`

function describeOp(op: TxnOp): string {
  switch (op.verb) {
    case 'cas':
      return `cas ${op.key}@${op.index} ${text(op.value)}${flagName(op.flags)}`
    case 'set':
      return `set ${op.key} ${text(op.value)}${flagName(op.flags)}`
    case 'check-session':
      return `check-session ${op.key} ${op.session}`
    case 'delete':
      return `delete ${op.key}`
    default:
      return JSON.stringify(op, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))
  }
}

/** One line per call: `get svc/lock/.lock`, `txn [cas …; delete …]`, `wait 5ms`, … */
export function describeCall(call: ReleaseCall): string {
  switch (call.type) {
    case 'txn':
      return `txn [${call.ops.map(describeOp).join('; ')}]`
    case 'get':
    case 'delete':
      return `${call.type} ${call.key}`
    case 'list':
      return `list ${call.prefix}/`
    case 'put':
      return `put ${call.key} ${call.value} release=${call.release}${flagName(call.flags)}`
    case 'destroy':
      return `destroy ${call.session}`
    case 'wait':
      return `wait ${call.ms}ms`
  }
}

/**
 * Runs the plan from `first`, answering its calls with `answers` in order; asserts that it is done
 * exactly when the answers run out.
 */
export function play<S, R>(
  first: PlanStep<S, R>,
  next: (state: S, answer: ReleaseAnswer) => PlanStep<S, R>,
  answers: readonly ReleaseAnswer[],
): { readonly calls: readonly string[]; readonly result: R } {
  const calls: string[] = []
  let step = first
  for (const answer of answers) {
    assert.equal(step.type, 'call', `done after ${calls.length} calls, with answers left`)
    if (step.type !== 'call') break
    calls.push(describeCall(step.call))
    step = next(step.state, answer)
  }
  assert.equal(step.type, 'done', `not done after the script: calls ${calls.join(' | ')}`)
  if (step.type !== 'done') throw new Error('unreachable')
  return { calls, result: step.result }
}

/** Answers, by what they answer; `random` is the jitter the driver would have drawn (default 0.5). */
export const answer = {
  committed: (random = 0.5): ReleaseAnswer => ({
    type: 'txn',
    result: E.right({ committed: true, results: [] }),
    random,
  }),
  rolledBack: (opIndex: number, random = 0.5): ReleaseAnswer => {
    const result: TxnResult = { committed: false, errors: [{ opIndex, what: 'failed' }] }
    return { type: 'txn', result: E.right(result), random }
  },
  lock: (entry: KVEntry | null, random = 0.5): ReleaseAnswer => ({
    type: 'get',
    result: E.right(entry),
    random,
  }),
  listing: (snapshot: KVSnapshot, random = 0.5): ReleaseAnswer => ({
    type: 'list',
    result: E.right(snapshot),
    random,
  }),
  deleted: (): ReleaseAnswer => ({ type: 'delete', result: E.right(true), random: 0.5 }),
  put: (ok: boolean): ReleaseAnswer => ({ type: 'put', result: E.right(ok), random: 0.5 }),
  destroyed: (): ReleaseAnswer => ({ type: 'destroy', result: E.right(true), random: 0.5 }),
  waited: (latest?: LatestPrefix): ReleaseAnswer =>
    latest === undefined ? { type: 'wait', random: 0.5 } : { type: 'wait', random: 0.5, latest },
  /** The driver did not send the CAS: the process knows a newer `.lock` (`latest`). */
  stale: (latest: LatestPrefix): ReleaseAnswer => ({ type: 'stale', latest, random: 0.5 }),
  failed: (type: Exclude<ReleaseCall['type'], 'wait'>, error: ConsulError, random = 0.5) =>
    ({ type, result: E.left(error), random }) as ReleaseAnswer,
}

/** Consul failures for the scripts. */
export const failure = {
  server: (status = 500, retryAfterMs?: number): ConsulError => ({
    _tag: 'ServerError',
    status,
    body: 'rpc error',
    retryAfterMs,
    message: `${status}`,
  }),
  badRequest: (): ConsulError => ({ _tag: 'BadRequest', status: 400, body: 'bad', message: '400' }),
  denied: (): ConsulError => ({
    _tag: 'PermissionDenied',
    status: 403,
    body: 'Permission denied',
    message: '403',
  }),
}
