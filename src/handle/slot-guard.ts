/**
 * The synchronous guard and the fenced write of a contender: what guarded work calls right before
 * it touches the resource, so that a pause (a stopped VM, a long GC, a frozen container) cannot
 * make it act on a slot it lost while it did not run (docs/safety.md).
 */
import * as E from 'fp-ts/lib/Either.js'
import type { ConsulClient, TxnOp, TxnResult } from '../consul/client-api.js'
import { agentTxnLimit, refusedAsTooLarge, type TxnLimit } from '../consul/txn-limit.js'
import { SemaphoreError, fromConsulError } from '../base/semaphore-error.js'
import { TXN_OPS_EVERY_VERSION } from '../base/txn-ops-limit.js'

/**
 * What a holder can check and do on its own, without waiting for `holding$`. The members are
 * plain functions: they may be passed on detached from their contender (`slot.isHolding`).
 *
 * @example
 * ```ts
 * sem.holding$.pipe(switchMap((held) => (held ? interval(10) : EMPTY))).subscribe(() => {
 *   if (!sem.isHolding()) return // paused past the lease: no timer of the library ran yet
 *   writeRow({ fencingToken: sem.assertHolding() })
 * })
 * ```
 */
export interface SlotGuard {
  /**
   * Whether this contender holds its slot right now, against the wall clock: its last state says
   * it holds, and the lease deadline (last renewal sent + TTL − margin) has not passed. Unlike
   * `holding$`, it needs no timer of the library to have run, so it is right even in the first
   * callback after the process was stopped for longer than the TTL.
   */
  readonly isHolding: () => boolean
  /**
   * The fencing token of the slot held right now (as `isHolding()` decides it); throws a
   * SemaphoreError('SlotLost') when it is not held. Hand the token to the resource along with the
   * write, so that it can refuse a token smaller than one it has already seen.
   */
  readonly assertHolding: () => bigint
  /**
   * Commits `ops` in one Consul transaction only while this contender holds: the transaction
   * starts with a `check-session` of the contender's own key (`<prefix>/<session>` for a
   * semaphore, `<prefix>/.lock` for a leader election), so Consul itself refuses the whole write
   * once the session is gone or the key was taken away, however late the request arrives.
   * Rejects with SemaphoreError('SlotLost') when not holding (nothing is sent) or when Consul
   * refused the check (nothing was written), and with SemaphoreError('InvalidOptions') when `ops`
   * and the check do not fit in one transaction of the agent (nothing is sent): 64 operations
   * before Consul 1.14, 128 from it on, so 63 or 127 of yours. For up to 63 nothing is asked; for
   * more, the client first asks the agent's version (`GET /v1/agent/self`, once per client), and
   * counts on 64 when it cannot read it (a token without `agent:read`, a client not made by
   * `createConsulClient`). Resolves with Consul's answer for `ops` (results and error indexes as
   * if `ops` were the whole transaction), which may be a rollback that one of `ops` caused (a
   * `cas` that lost, for example).
   */
  readonly fencedTxn: (
    ops: readonly TxnOp[],
    options?: { signal?: AbortSignal },
  ) => Promise<TxnResult>
}

/** What the guard reads about its contender. */
export interface GuardedContender {
  /** The contender's latest state (renewals included), or undefined when not running. */
  readonly current: () =>
    | {
        readonly holding: boolean
        readonly session: string | undefined
        readonly fencingToken: bigint | undefined
        readonly leaseDeadline: number | undefined
      }
    | undefined
  /** The key whose lock proves that this contender holds, for `session`. */
  readonly guardKey: (session: string) => string
  /** The client of the running contender. */
  readonly client: () => ConsulClient
  /** Now, on the clock of the lease deadline (the contender's scheduler). */
  readonly now: () => number
}

/**
 * The guard of one contender.
 *
 * @example
 * const guard = slotGuard({ current: () => last, guardKey: (s) => `${prefix}/${s}`, client, now })
 * @returns The guard.
 */
export function slotGuard(contender: GuardedContender): SlotGuard {
  /** The held state, or undefined when not holding right now. */
  const held = () => {
    const state = contender.current()
    return state !== undefined &&
      state.holding &&
      state.session !== undefined &&
      state.fencingToken !== undefined &&
      state.leaseDeadline !== undefined &&
      contender.now() < state.leaseDeadline
      ? { session: state.session, fencingToken: state.fencingToken }
      : undefined
  }
  const notHeld = (why: string): SemaphoreError =>
    new SemaphoreError(
      'SlotLost',
      `${why}. Stop touching the guarded resource; holding$ says when the slot is held again.`,
    )
  return {
    isHolding: () => held() !== undefined,
    assertHolding: () => {
      const now = held()
      if (now === undefined) throw notHeld('this contender does not hold its slot now')
      return now.fencingToken
    },
    fencedTxn: async (ops, options = {}) => {
      const unheld = () =>
        notHeld('fenced write refused before sending: this contender does not hold its slot')
      // The fence's `check-session` is one operation of the transaction.
      const needed = ops.length + 1
      let limit: TxnLimit | undefined
      if (needed > TXN_OPS_EVERY_VERSION) {
        // More than every version takes: the agent's limit decides (asked once per client).
        if (held() === undefined) throw unheld()
        const read = await agentTxnLimit(contender.client(), needed, options)()
        if (E.isLeft(read)) throw fromConsulError(read.left, 'the fenced write was not sent')
        limit = read.right
        if (needed > limit.ops) {
          throw new SemaphoreError(
            'InvalidOptions',
            `fencedTxn was given ${ops.length} operations; it takes at most ${limit.ops - 1} on ` +
              `this agent, the fence's session check being one more: ${limit.why}. Nothing was ` +
              'sent. Split the write into several fenced transactions.',
          )
        }
      }
      const now = held()
      if (now === undefined) throw unheld()
      const key = contender.guardKey(now.session)
      const answer = await contender
        .client()
        .kv.txn([{ verb: 'check-session', key, session: now.session }, ...ops], options)()
      if (E.isLeft(answer)) {
        const error = answer.left
        const tooLarge = refusedAsTooLarge(
          error,
          `the fenced write of ${needed} operations, nothing was written`,
          limit,
          'Split the write into several fenced transactions.',
        )
        if (tooLarge !== undefined) throw tooLarge
        // Whether it was written is unknown (the answer was lost), so it is not retried here.
        throw fromConsulError(error, 'the fenced write failed, it may or may not be written')
      }
      const result = answer.right
      if (result.committed) return { committed: true, results: result.results.slice(1) }
      if (result.errors.some((e) => e.opIndex === 0)) {
        throw notHeld(
          `Consul refused the fenced write, nothing was written: session ${now.session} no ` +
            `longer holds ${key}`,
        )
      }
      return {
        committed: false,
        errors: result.errors.map((e) => ({ ...e, opIndex: e.opIndex - 1 })),
      }
    },
  }
}
