/**
 * Contenders' own keys taken at once on one client go to Consul together: while one such write
 * of the client is in flight, the keys asked for meanwhile wait, and go next in one transaction.
 * A thousand contenders of one process that join together (a job server starting, a pool filling
 * its slots) then cost Consul a few dozen writes instead of a thousand, and the process as many
 * requests.
 *
 * A key is written only where it does not exist: in a transaction each key is a
 * `check-not-exists` then a `lock` with its session, and a key that exists is left as it is and
 * answered taken (it is named after the session, so only this contender writes it). A write that
 * may meet its key (`mayExist`: a retry, a key asked for again on a snapshot that did not show it)
 * must never rewrite a key a release has meanwhile marked as a holder's. Only a key that cannot
 * exist yet (the first write of a session the contender created, and did not join with), asked
 * for while nothing is in flight, goes as the plain `?acquire=` write.
 *
 * ```
 * take(a) ─► PUT a?acquire= ─────────────────► its answer (first write, nothing in flight)
 * take(b), take(c), take(d) while it flies ──► PUT /v1/txn [lock b, absent c, lock c, lock d]
 *                                               (c may exist: checked absent first)
 *   committed ───────────────────────────────► true for each
 *   rolled back: c exists ───────────────────► true for c (left as it is); b, d again
 *   rolled back: c's lock refused ───────────► c alone (PUT c?acquire=, its answer); b, d again
 *   failed (unreachable, timeout, 5xx) ──────► that error for each
 *   failed otherwise (403, 413, ...) ────────► each alone, in a transaction of its own
 * ```
 *
 * Each caller gets the answer its own write would get: taken (true), refused (false), or that
 * request's ConsulError, which it then handles (retries, reports) as its own. A key whose lock a
 * transaction refused goes again alone as the plain write (it was absent then), whatever Consul
 * named as the reason (the lock-delay, a session gone, a key the token may not write).
 */
import * as E from 'fp-ts/lib/Either.js'
import type * as TE from 'fp-ts/lib/TaskEither.js'
import type { ConsulError } from '../../base/consul-error.js'
import { isTransient } from '../../base/failure-kinds.js'
import { TXN_OPS_EVERY_VERSION } from '../../base/txn-ops-limit.js'
import type { TxnOp } from '../../base/txn.js'
import type { ConsulClient } from '../../consul/client-api.js'

/** One key to take: the key, its value and flags, and the session that locks it. */
export interface OwnKey {
  readonly key: string
  readonly value: string
  readonly flags: bigint
  readonly session: string
  /** The key may exist already (see the top of this file): it is written only where it does not. */
  readonly mayExist: boolean
}

/**
 * The value bytes one transaction carries at most: half of Consul's default cap on a
 * transaction's request (`limits.txn_max_req_len`, 512 KiB). A key whose value alone is larger
 * goes as a write of its own.
 */
const MAX_BATCH_VALUE_BYTES = 256 * 1024

interface Waiting {
  readonly write: OwnKey
  readonly signal: AbortSignal
  readonly answer: (result: E.Either<ConsulError, boolean>) => void
  /** Sent by itself: the plain write when `plain`, else a transaction of its own. */
  alone: boolean
  /** Sent as the plain `?acquire=` write when it goes by itself. */
  plain: boolean
}

const utf8 = new TextEncoder()

/** The last value `valueBytes` encoded, and its bytes. */
let lastValue: { readonly text: string; readonly bytes: Uint8Array } | undefined

/**
 * A contender key's value as bytes: the same array for the same text as the call before. The
 * contenders of a process share their value (its `host:pid` by default), and a thousand of them
 * would each keep a copy of it, with its buffer, for as long as their session lives. Nothing
 * writes to these bytes: the transactions only read them.
 */
export function valueBytes(text: string): Uint8Array {
  if (lastValue?.text !== text) lastValue = { text, bytes: utf8.encode(text) }
  return lastValue.bytes
}

/** The operations of a key in a transaction: its lock, after an absence check if it may exist. */
const opsOf = (write: OwnKey): number => (write.mayExist ? 2 : 1)

/** The keys of one client waiting for its write in flight, and whether one is. */
class OwnKeyBatch {
  private readonly waiting: Waiting[] = []
  private flying = false

  constructor(private readonly client: ConsulClient) {}

  take(write: OwnKey, signal: AbortSignal): Promise<E.Either<ConsulError, boolean>> {
    return new Promise((answer) => {
      this.waiting.push({ write, signal, answer, alone: false, plain: !write.mayExist })
      if (!this.flying) this.send()
    })
  }

  /** Sends what waits: one key that may go plainly as the plain write, else one transaction. */
  private send(): void {
    const batch = this.nextBatch()
    if (batch.length === 0) return
    this.flying = true
    const one = batch.length === 1 ? (batch[0] as Waiting) : undefined
    const sent = one?.plain === true ? this.sendOne(one) : this.sendMany(batch)
    void sent.then(() => {
      this.flying = false
      this.send()
    })
  }

  /**
   * The next keys to send, oldest first: one to send alone, or as many as one transaction holds
   * on every Consul version (`opsOf` each) and `MAX_BATCH_VALUE_BYTES` of values. Keys whose
   * callers gave up are dropped unsent (their calls were unsubscribed: nobody waits).
   */
  private nextBatch(): Waiting[] {
    const { waiting } = this
    const batch: Waiting[] = []
    let bytes = 0
    let ops = 0
    while (waiting.length > 0) {
      const next = waiting[0] as Waiting
      if (next.signal.aborted) {
        waiting.shift()
        continue
      }
      const more = opsOf(next.write)
      const size = valueBytes(next.write.value).length
      if (
        batch.length > 0 &&
        (next.alone || ops + more > TXN_OPS_EVERY_VERSION || bytes + size > MAX_BATCH_VALUE_BYTES)
      ) {
        break
      }
      bytes += size
      ops += more
      batch.push(next)
      waiting.shift()
      if (next.alone) break
    }
    return batch
  }

  private async sendOne({ write, signal, answer }: Waiting): Promise<void> {
    const { key, value, flags, session } = write
    answer(await this.client.kv.put(key, value, { acquire: session, flags, signal })())
  }

  /**
   * One transaction for `batch`: each key written where it does not exist. Not aborted by any one
   * caller, whose key may then be written after it gave up, as a plain write already on its way
   * would be.
   */
  private async sendMany(batch: readonly Waiting[]): Promise<void> {
    // Each key's operations, and which key each operation is of.
    const ops: TxnOp[] = []
    const keyOf: number[] = []
    batch.forEach(({ write }, index) => {
      if (write.mayExist) {
        ops.push({ verb: 'check-not-exists', key: write.key })
        keyOf.push(index)
      }
      ops.push({
        verb: 'lock',
        key: write.key,
        value: valueBytes(write.value),
        flags: write.flags,
        session: write.session,
      })
      keyOf.push(index)
    })
    const result = await this.client.kv.txn(ops)()
    if (E.isLeft(result)) {
      const error = result.left
      if (isTransient(error) || error._tag === 'Aborted' || batch.length === 1) {
        for (const { answer } of batch) answer(result)
      } else this.again(batch, () => 'alone')
      return
    }
    if (result.right.committed) {
      for (const { answer } of batch) answer(E.right(true))
      return
    }
    // Rolled back: a key found to exist is taken already; a key whose lock was refused goes
    // alone, as the plain write; the others were not written, only undone with them, and go again.
    const failed = new Set(result.right.errors.map((error) => error.opIndex))
    if (failed.size === 0) {
      // A rollback that names no operation: refused, which each caller checks and retries.
      for (const { answer } of batch) answer(E.right(false))
      return
    }
    const fates = new Map<number, 'exists' | 'plain'>()
    for (const op of failed) {
      const index = keyOf[op]
      if (index !== undefined) fates.set(index, ops[op]?.verb === 'lock' ? 'plain' : 'exists')
    }
    this.again(batch, (index) => fates.get(index) ?? 'again')
  }

  /**
   * Answers each key of `batch` or puts it back at the head of the queue, as `fate` says: found
   * to exist (answered taken), to go alone as the plain write, to go alone in a transaction, or
   * to go again with the others; those going alone first, one by one.
   */
  private again(
    batch: readonly Waiting[],
    fate: (index: number) => 'exists' | 'plain' | 'alone' | 'again',
  ): void {
    const apart: Waiting[] = []
    const rest: Waiting[] = []
    batch.forEach((waiting, index) => {
      const next = fate(index)
      if (next === 'exists') return waiting.answer(E.right(true))
      if (next === 'again') return void rest.push(waiting)
      waiting.alone = true
      waiting.plain = next === 'plain'
      apart.push(waiting)
    })
    this.waiting.unshift(...apart, ...rest)
  }
}

const batches = new WeakMap<ConsulClient, OwnKeyBatch>()

/**
 * Takes `write.key` with `write.session` (`?acquire=`), as `client.kv.put` would, batched with
 * the other keys of the client taken meanwhile (see the top of this file).
 *
 * @example
 * const write = { key, value: 'web-1', flags, session, mayExist: false }
 * const taken = await takeKey(client, write)(signal)()
 * @returns The call: true when the key is taken, false when refused, else the ConsulError.
 */
export function takeKey(
  client: ConsulClient,
  write: OwnKey,
): (signal: AbortSignal) => TE.TaskEither<ConsulError, boolean> {
  return (signal) => () => {
    let batch = batches.get(client)
    if (batch === undefined) batches.set(client, (batch = new OwnKeyBatch(client)))
    return batch.take(write, signal)
  }
}
