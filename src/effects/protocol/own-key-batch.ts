/**
 * Contenders' own keys taken at once on one client go to Consul together: while one such write
 * of the client is in flight, the keys asked for meanwhile wait, and go next in one transaction
 * of `lock` operations. A thousand contenders of one process that join together (a job server
 * starting, a pool filling its slots) then cost Consul a few dozen writes instead of a thousand,
 * and the process as many requests. A key asked for while none is in flight goes at once, alone,
 * as the plain `?acquire=` write it always was.
 *
 * ```
 * take(a) ─► PUT a?acquire= ──────────────► its answer
 * take(b), take(c), take(d) while it flies ─► PUT /v1/txn [lock b, lock c, lock d]
 *   committed ──────────────────────────────► true for each
 *   rolled back, c named ───────────────────► c alone (PUT c?acquire=, its answer); b, d again
 *   failed (unreachable, timeout, 5xx) ─────► that error for each
 *   failed otherwise (403, 413, ...) ───────► each alone
 * ```
 *
 * Each caller gets the answer its own plain write gets: taken (true), refused (false), or that
 * request's ConsulError, which it then handles (retries, reports) as its own. A key the
 * transaction could not take therefore goes again alone, whatever Consul named as the reason
 * (another session's lock, the lock-delay, a session gone, a key the token may not write).
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
}

/**
 * The value bytes one transaction carries at most: half of Consul's default cap on a
 * transaction's request (`limits.txn_max_req_len`, 512 KiB). A key whose value alone is larger
 * goes as a write of its own.
 */
const MAX_BATCH_VALUE_BYTES = 256 * 1024

interface Waiting {
  readonly write: OwnKey
  readonly bytes: Uint8Array
  readonly signal: AbortSignal
  readonly answer: (result: E.Either<ConsulError, boolean>) => void
  /** Sent as a plain write of its own: a transaction could not take it. */
  alone: boolean
}

const utf8 = new TextEncoder()

/** The keys of one client waiting for its write in flight, and whether one is. */
class OwnKeyBatch {
  private readonly waiting: Waiting[] = []
  private flying = false

  constructor(private readonly client: ConsulClient) {}

  take(write: OwnKey, signal: AbortSignal): Promise<E.Either<ConsulError, boolean>> {
    return new Promise((answer) => {
      const bytes = utf8.encode(write.value)
      this.waiting.push({ write, bytes, signal, answer, alone: false })
      if (!this.flying) this.send()
    })
  }

  /** Sends what waits: one key as a plain write, several as one transaction. */
  private send(): void {
    const batch = this.nextBatch()
    if (batch.length === 0) return
    this.flying = true
    const sent = batch.length === 1 ? this.sendOne(batch[0] as Waiting) : this.sendMany(batch)
    void sent.then(() => {
      this.flying = false
      this.send()
    })
  }

  /**
   * The next keys to send, oldest first: one to send alone, or at most one transaction's
   * operations on every Consul version and `MAX_BATCH_VALUE_BYTES` of values. Keys whose callers
   * gave up are dropped unsent (their calls were unsubscribed: nobody waits for the answer).
   */
  private nextBatch(): Waiting[] {
    const { waiting } = this
    const batch: Waiting[] = []
    let bytes = 0
    while (waiting.length > 0 && batch.length < TXN_OPS_EVERY_VERSION) {
      const next = waiting[0] as Waiting
      if (next.signal.aborted) {
        waiting.shift()
        continue
      }
      if (batch.length > 0 && (next.alone || bytes + next.bytes.length > MAX_BATCH_VALUE_BYTES)) {
        break
      }
      bytes += next.bytes.length
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
   * One transaction for `batch`. Not aborted by any one caller, whose key may then be written
   * after it gave up, as a plain write already on its way would be.
   */
  private async sendMany(batch: readonly Waiting[]): Promise<void> {
    const ops: TxnOp[] = batch.map(({ write, bytes }) => ({
      verb: 'lock',
      key: write.key,
      value: bytes,
      flags: write.flags,
      session: write.session,
    }))
    const result = await this.client.kv.txn(ops)()
    if (E.isLeft(result)) {
      const error = result.left
      if (isTransient(error) || error._tag === 'Aborted') {
        for (const { answer } of batch) answer(result)
      } else this.again(batch, () => true)
      return
    }
    if (result.right.committed) {
      for (const { answer } of batch) answer(E.right(true))
      return
    }
    // Rolled back: the keys Consul names go alone; the others were not written, only undone
    // with them, and go again in the next transaction.
    const named = new Set(result.right.errors.map((error) => error.opIndex))
    this.again(batch, (index) => named.size === 0 || named.has(index))
  }

  /**
   * Puts `batch` back at the head of the queue: first, one by one, those `alone` picks, to be
   * sent alone; then the others, in order, for the next transaction.
   */
  private again(batch: readonly Waiting[], alone: (index: number) => boolean): void {
    const apart: Waiting[] = []
    const rest: Waiting[] = []
    batch.forEach((waiting, index) => {
      if (alone(index)) {
        waiting.alone = true
        apart.push(waiting)
      } else rest.push(waiting)
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
 * const taken = await takeKey(client, { key, value: 'web-1', flags, session })(signal)()
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
