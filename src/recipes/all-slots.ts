/**
 * A slot of every one of several semaphores, or of none: one session, one contender key in each
 * prefix (made in one transaction), the prefixes watched together, and one transaction that writes
 * every `.lock` at once when the contender is first in line with a free slot in each
 * (`decideAll`). Nothing is held while it waits, so two callers that list the same semaphores in
 * opposite orders cannot each hold one and wait for the other.
 *
 * ```
 * session ─► join (one txn: a key per prefix) ─► watch every prefix ─► decideAll
 *                                                      │ TryAcquire: one txn, every .lock
 *                                                      ▼
 *                          holding ──(a slot gone, the lease over, a watch lost)──► give back, start over
 * ```
 */
import * as E from 'fp-ts/lib/Either.js'
import {
  BehaviorSubject,
  distinctUntilChanged,
  map,
  merge,
  Observable,
  type Subscription,
} from 'rxjs'
import { ALL_SLOTS_FLAGS, SEMAPHORE_FLAGS } from '../base/flags.js'
import type { KVSnapshot } from '../base/kv-snapshot.js'
import {
  fromConsulError,
  problemError,
  SemaphoreError,
  toSemaphoreError,
} from '../base/semaphore-error.js'
import type { ConsulError } from '../base/consul-error.js'
import { judgeFailure } from '../base/failure-verdict.js'
import type { TxnOp } from '../base/txn.js'
import { TXN_OPS_EVERY_VERSION, TXN_OPS_FROM_1_14 } from '../base/txn-ops-limit.js'
import type { ConsulClient } from '../consul/client-api.js'
import { borrowDefaultClient, type BorrowedClient } from '../consul/default-client.js'
import { agentTxnLimit, refusedAsTooLarge, type TxnLimit } from '../consul/txn-limit.js'
import { leaseDeadline } from '../core/contender/lease-deadline.js'
import { contenderKey } from '../core/keys/contender-key.js'
import { lockKey } from '../core/keys/lock-key.js'
import { releaseFromLockBody } from '../core/lock-body/release-from-lock-body.js'
import { decideAll, type AllSlotsTarget } from '../core/semaphore/decide-all.js'
import { closeOnDispose, type asyncDispose } from '../handle/close-on-dispose.js'
import {
  resolveSemaphoreOptions,
  validated,
  type SemaphoreOptions,
} from '../options/contender-options.js'

/**
 * One semaphore of `allSlots` / `withSlots`: its prefix and limit, and the session's options,
 * which every entry must give alike (one session holds a key in every prefix).
 */
export type AllSlotsEntry = Pick<
  SemaphoreOptions,
  'prefix' | 'limit' | 'consul' | 'ttl' | 'sessionName' | 'value' | 'leaseMargin'
>

/** What an all-or-nothing contender knows, after every change. */
export interface AllSlotsState {
  /** True only while it holds a slot of every listed semaphore. */
  readonly holding: boolean
  /** Its session, once created. */
  readonly session: string | undefined
  /**
   * The index of the transaction that granted every slot: strictly increasing over the grants of
   * each of the prefixes, as a semaphore's fencing token is. Undefined while not holding.
   */
  readonly fencingToken: bigint | undefined
  /** Its place in each prefix's queue (0: next), in the listed order, while it waits. */
  readonly ranks: readonly (number | undefined)[]
}

/** A contender for a slot of every one of several semaphores. */
export interface AllSlots {
  /** Whether it holds a slot of every one; each change once. */
  readonly holding$: Observable<boolean>
  /** Its state after every change. */
  readonly state$: Observable<AllSlotsState>
  /** Gives every slot back and destroys its session; resolves when Consul holds nothing of it. */
  close(): Promise<void>
  /** Calls `close()`. */
  [asyncDispose](): Promise<void>
}

/**
 * The most semaphores one contender may list on any agent: the grant checks its key and writes
 * `.lock` in each prefix, two operations each, in one transaction of at most 128 (Consul 1.14 on).
 * An agent before 1.14 takes 64 operations, so 32 semaphores: a contender that lists more asks
 * its agent's version when it starts, and fails before it writes anything if they do not fit.
 */
export const MAX_SEMAPHORES = TXN_OPS_FROM_1_14 / 2

/**
 * A contender for a slot of every semaphore listed, or of none. It starts when `holding$` or
 * `state$` is first subscribed; after a loss (a slot taken away, its session gone, its lease over
 * or a watch lost) it gives every slot back and contends again, until `close()`.
 *
 * @example
 * ```ts
 * const both = allSlots([{ prefix: 'db/lock', limit: 4 }, { prefix: 'cache/lock', limit: 2 }])
 * both.holding$.pipe(switchMap((held) => (held ? migrate$ : EMPTY))).subscribe()
 * ```
 * @param entries - The semaphores, each with its prefix and limit.
 * @returns The contender.
 * @throws SemaphoreError('InvalidOptions') when an entry is wrong, a prefix is listed twice, the
 *   entries' session options differ, or there are more than MAX_SEMAPHORES. More than 32 on an
 *   agent before Consul 1.14 end `state$` with that error when it starts, before anything is
 *   written.
 */
export function allSlots(entries: readonly AllSlotsEntry[]): AllSlots {
  const plan = planAll(entries)
  const state = new BehaviorSubject<AllSlotsState>(IDLE)
  let run: AllSlotsRun | undefined
  let users = 0
  const start = (): void => {
    users += 1
    if (run === undefined || run.closed) run = new AllSlotsRun(plan, state)
  }
  const stop = (): void => {
    users -= 1
    if (users === 0) void run?.close()
  }
  const state$ = new Observable<AllSlotsState>((subscriber) => {
    start()
    const inner = state.subscribe(subscriber)
    return () => {
      inner.unsubscribe()
      stop()
    }
  })
  const holding$ = state$.pipe(
    map((s) => s.holding),
    distinctUntilChanged(),
  )
  const close = async (): Promise<void> => {
    await run?.close()
  }
  return closeOnDispose({ holding$, state$, close })
}

/**
 * Runs `work` while a slot of every listed semaphore is held, as `withSlot` does for one: `signal`
 * aborts the moment one of them is lost; every slot is given back when `work` settles.
 *
 * @example
 * ```ts
 * await withSlots([{ prefix: 'db/lock', limit: 4 }, { prefix: 'cache/lock', limit: 2 }], (signal) =>
 *   rebuildCache(signal),
 * )
 * ```
 * @param entries - The semaphores.
 * @param work - The work; `signal` aborts with SemaphoreError('SlotLost') when a slot is lost.
 * @param options - `signal` cancels the wait or the work.
 * @returns What `work` returned.
 */
export async function withSlots<T>(
  entries: readonly AllSlotsEntry[],
  work: (signal: AbortSignal, token: bigint) => Promise<T>,
  options: { readonly signal?: AbortSignal } = {},
): Promise<T> {
  const contender = allSlots(entries)
  const controller = new AbortController()
  const caller = options.signal
  let subscription: Subscription | undefined
  let onAbort: (() => void) | undefined
  try {
    const token = await new Promise<bigint>((resolve, reject) => {
      let held = false
      const stop = (error: unknown): void => {
        if (!held) reject(error)
        else if (!controller.signal.aborted) controller.abort(error)
      }
      onAbort = () =>
        stop(
          new SemaphoreError(
            'Aborted',
            held
              ? 'the caller aborted the work: every slot is given back'
              : 'the caller aborted the wait for a slot of every semaphore: nothing was held',
            { cause: caller?.reason },
          ),
        )
      if (caller?.aborted === true) return onAbort()
      caller?.addEventListener('abort', onAbort, { once: true })
      subscription = contender.state$.subscribe({
        next: (s) => {
          if (s.holding && !held && s.fencingToken !== undefined) {
            held = true
            resolve(s.fencingToken)
          } else if (!s.holding && held) {
            stop(new SemaphoreError('SlotLost', 'a slot of one of the semaphores was lost'))
          }
        },
        error: stop,
      })
    })
    return await work(controller.signal, token)
  } finally {
    if (onAbort !== undefined) caller?.removeEventListener('abort', onAbort)
    subscription?.unsubscribe()
    await contender.close()
  }
}

const IDLE: AllSlotsState = {
  holding: false,
  session: undefined,
  fencingToken: undefined,
  ranks: [],
}

/** The entries, checked: their targets and the one session's options. */
interface AllPlan {
  readonly targets: readonly AllSlotsTarget[]
  readonly consul: ConsulClient | undefined
  readonly ttlMs: number
  readonly ttl: string
  readonly sessionName: string
  readonly value: string
  readonly leaseMarginMs: number
}

function planAll(entries: readonly AllSlotsEntry[]): AllPlan {
  return validated((report) => {
    const list: readonly AllSlotsEntry[] = Array.isArray(entries) ? entries : []
    if (list.length === 0) {
      report('semaphores', 'list at least one semaphore ({ prefix, limit }).')
      return undefined as never
    }
    if (list.length > MAX_SEMAPHORES) {
      report(
        'semaphores',
        `${list.length} are more than ${MAX_SEMAPHORES}: the grant writes every .lock in one ` +
          `Consul transaction, two operations each, and no Consul version takes more than ` +
          `${TXN_OPS_FROM_1_14}. List fewer.`,
      )
    }
    const resolved = list.map((entry) =>
      resolveSemaphoreOptions(entry as SemaphoreOptions, 'rx-consul-semaphore all-slots'),
    )
    const first = resolved[0]
    const firstEntry = list[0]
    const prefixes = new Set<string>()
    resolved.forEach((r, i) => {
      if (prefixes.has(r.prefix)) report('semaphores', `the prefix "${r.prefix}" is listed twice.`)
      prefixes.add(r.prefix)
      const entry = list[i]
      if (
        entry?.consul !== firstEntry?.consul ||
        entry?.ttl !== firstEntry?.ttl ||
        entry?.sessionName !== firstEntry?.sessionName ||
        entry?.value !== firstEntry?.value ||
        entry?.leaseMargin !== firstEntry?.leaseMargin
      ) {
        report(
          'semaphores',
          `"${r.prefix}" gives other session options (consul, ttl, sessionName, value) than the ` +
            'first: one session holds a key in every prefix, so give them alike.',
        )
      }
    })
    return {
      targets: resolved.map((r) => ({ prefix: r.prefix, limit: r.limit })),
      consul: firstEntry?.consul,
      ttlMs: first?.ttlMs ?? 15_000,
      ttl: first?.ttl ?? '15s',
      sessionName: first?.sessionName ?? 'rx-consul-semaphore all-slots',
      value: first?.value ?? '',
      leaseMarginMs: first?.leaseMarginMs ?? 1500,
    }
  })
}

const utf8 = new TextEncoder()

/** How long a contender waits after a write failed for a transient reason before it writes again. */
const WRITE_RETRY_MS = 1000

/**
 * One life of the contender, from its first subscription to `close()`: sessions one after the
 * other (a new one after each loss), each with its keys, its watch and its renewals.
 */
class AllSlotsRun {
  closed = false
  private closing: Promise<void> | undefined
  private readonly borrowed: BorrowedClient | undefined
  private readonly client: ConsulClient
  private session: string | undefined
  private watch: Subscription | undefined
  private renewals: ReturnType<typeof setInterval> | undefined
  private expiry: ReturnType<typeof setTimeout> | undefined
  /** The pending waits between two attempts, and how to end each early (close). */
  private readonly waits = new Set<{ timer: ReturnType<typeof setTimeout>; done: () => void }>()
  private snapshots: (KVSnapshot | undefined)[] = []
  private granted: bigint | undefined
  private writing = false
  private deadline = 0
  /**
   * The agent's transaction limit, asked before the first session when the grant has more
   * operations than every version takes (`agentTxnLimit`); undefined while they fit in those.
   */
  private txnLimit: TxnLimit | undefined
  /** The writes answered in a row with a 500 naming an ACL problem (`judgeFailure`). */
  private aclInRow = 0

  constructor(
    private readonly plan: AllPlan,
    private readonly state: BehaviorSubject<AllSlotsState>,
  ) {
    if (plan.consul === undefined) this.borrowed = borrowDefaultClient()
    this.client = plan.consul ?? (this.borrowed as BorrowedClient).client
    void this.begin()
  }

  /**
   * Whether the grant fits the agent's transactions; when not, fails the contender with a
   * SemaphoreError('InvalidOptions') that says so, nothing written. Asks only for more than 64.
   */
  private async grantFits(): Promise<boolean> {
    // The grant: a check of the key and a CAS of `.lock` in each prefix.
    const needed = 2 * this.plan.targets.length
    if (needed <= TXN_OPS_EVERY_VERSION || this.txnLimit !== undefined) return true
    const read = await agentTxnLimit(this.client, needed)()
    if (this.closed) return false
    // Only a caller's abort fails the read, and none is given: the limit is always known here.
    if (E.isLeft(read)) return true
    this.txnLimit = read.right
    if (needed <= read.right.ops) return true
    this.fail(
      new SemaphoreError(
        'InvalidOptions',
        `allSlots lists ${this.plan.targets.length} semaphores, and its grant writes every .lock ` +
          `in one transaction of two operations each, ${needed} in all: ${read.right.why}. List ` +
          `at most ${read.right.ops / 2} on this agent. Nothing was written.`,
      ),
    )
    return false
  }

  /** Creates a session and its keys, then watches every prefix. */
  private async begin(): Promise<void> {
    if (!(await this.grantFits())) return
    while (!this.closed) {
      const sentAt = Date.now()
      const created = await this.client.session.create({
        name: this.plan.sessionName,
        ttl: this.plan.ttl,
        behavior: 'delete',
      })()
      if (this.closed) {
        if (E.isRight(created)) await this.destroy(created.right)
        return
      }
      if (E.isLeft(created)) {
        await this.pause(1000)
        continue
      }
      const session = created.right
      this.session = session
      this.leaseFrom(session, sentAt)
      this.publish({ holding: false, session, fencingToken: undefined, ranks: [] })
      this.renewals = setInterval(() => void this.renew(session), this.plan.ttlMs / 2)
      if (
        !(await this.join(
          session,
          this.plan.targets.map((t) => t.prefix),
        ))
      ) {
        await this.endSession()
        continue
      }
      // Closed, or lost, while the keys were made: that session is already being given back.
      if (this.session === session) this.follow(session)
      return
    }
  }

  /**
   * Makes the session's key in `prefixes`, in one transaction: true once made. A refusal no retry
   * fixes fails the contender; after a transient failure it waits a moment first (`failedWrite`).
   */
  private async join(session: string, prefixes: readonly string[]): Promise<boolean> {
    const value = utf8.encode(this.plan.value)
    const ops: TxnOp[] = prefixes.map((prefix) => ({
      verb: 'lock',
      key: contenderKey(prefix, session),
      value,
      flags: ALL_SLOTS_FLAGS,
      session,
    }))
    const answer = await this.client.kv.txn(ops)()
    if (E.isLeft(answer)) await this.failedWrite(answer.left, 'making its keys')
    else this.aclInRow = 0
    return E.isRight(answer) && answer.right.committed
  }

  /**
   * After a write Consul did not take, judged as every retry loop of the library judges
   * (`judgeFailure`): a failure no retry fixes (a refusal: ACLs, a bad request, or the fifth 500
   * in a row naming an ACL problem) fails the contender, saying what it was doing; a transient
   * one (unreachable, a timeout, a 5xx) waits WRITE_RETRY_MS before the next decision writes
   * again, so that an agent that answers at once with an error is not asked again and again.
   */
  private async failedWrite(error: ConsulError, doing: string): Promise<void> {
    if (this.closed) return
    const verdict = judgeFailure(error, this.aclInRow)
    if (verdict.verdict === 'permanent') {
      return this.fail(fromConsulError(verdict.error, `allSlots, ${doing}`))
    }
    this.aclInRow = verdict.aclInRow
    await this.pause(WRITE_RETRY_MS)
  }

  private follow(session: string): void {
    const { targets } = this.plan
    this.snapshots = targets.map(() => undefined)
    this.watch = merge(
      ...targets.map((target, i) =>
        this.client.watchPrefix(`${target.prefix}/`).pipe(map((event) => ({ i, event }))),
      ),
    ).subscribe({
      next: ({ i, event }) => {
        if (event.type === 'snapshot') {
          this.snapshots[i] = event.snapshot
          this.decide(session)
        } else if (this.state.value.holding) {
          // Nothing vouches for that slot until the watch answers again: drop now.
          this.lost(session)
        }
      },
      // A watch ends only for a failure no retry fixes (ACLs, a prefix Consul refuses).
      error: (error: unknown) => this.fail(toSemaphoreError(error)),
    })
  }

  private decide(session: string): void {
    if (this.closed || this.session !== session) return
    const snapshots = this.snapshots
    if (snapshots.some((s) => s === undefined)) return
    const decision = decideAll(snapshots as KVSnapshot[], this.plan.targets, session, this.granted)
    const now = this.state.value
    switch (decision.type) {
      case 'Held':
      case 'Unconfirmed':
        return
      case 'Partial':
        return this.lost(session)
      case 'Problem':
        // The prefix problem's own words name the key and what to do (problemError).
        return this.fail(problemError(decision.problem))
      case 'Join':
        if (now.holding) return this.lost(session)
        if (!this.writing) {
          this.writing = true
          void this.join(session, decision.prefixes).finally(() => this.written(session))
        }
        return
      case 'Wait':
        if (now.holding) return this.lost(session)
        this.publish({ ...now, ranks: decision.ranks })
        return
      case 'TryAcquire':
        if (now.holding || this.writing) return
        this.writing = true
        void this.grant(session, decision.writes).finally(() => this.written(session))
    }
  }

  /**
   * A write is over: decide again on the latest snapshots, which may have come while it was out
   * (and were not decided on then) and may be all that comes while the prefixes stay quiet.
   */
  private written(session: string): void {
    this.writing = false
    this.decide(session)
  }

  /** Writes every `.lock` in one transaction, each only while this session holds its key. */
  private async grant(
    session: string,
    writes: readonly { prefix: string; body: Uint8Array; cas: bigint }[],
  ): Promise<void> {
    const ops: TxnOp[] = writes.flatMap((write): TxnOp[] => [
      { verb: 'check-session', key: contenderKey(write.prefix, session), session },
      {
        verb: 'cas',
        key: lockKey(write.prefix),
        value: write.body,
        flags: SEMAPHORE_FLAGS,
        index: write.cas,
      },
    ])
    const answer = await this.client.kv.txn(ops)()
    if (this.closed || this.session !== session) return
    if (E.isLeft(answer)) {
      // Too large for the agent (it applied none of it): trying again cannot help.
      const tooLarge = refusedAsTooLarge(
        answer.left,
        `the grant of ${ops.length} operations, one transaction for every .lock`,
        this.txnLimit,
        'List fewer semaphores.',
      )
      if (tooLarge !== undefined) return this.fail(tooLarge)
      return this.failedWrite(answer.left, 'writing every .lock')
    }
    this.aclInRow = 0
    if (answer.right.committed) {
      const index = answer.right.results.reduce(
        (most, entry) => (entry.modifyIndex > most ? entry.modifyIndex : most),
        0n,
      )
      if (Date.now() >= this.deadline) return this.lost(session)
      this.granted = index
      this.publish({ holding: true, session, fencingToken: index, ranks: [] })
    }
  }

  private async renew(session: string): Promise<void> {
    const sentAt = Date.now()
    const answer = await this.client.session.renew(session)()
    if (this.session !== session || this.closed) return
    if (E.isRight(answer) && answer.right === null) return this.lost(session)
    if (E.isRight(answer) && answer.right !== null) this.leaseFrom(session, sentAt)
  }

  /** The lease runs from `sentAt`; at its deadline, a holder that did not renew drops. */
  private leaseFrom(session: string, sentAt: number): void {
    this.deadline = leaseDeadline(sentAt, this.plan.ttlMs, {
      leaseMarginMs: this.plan.leaseMarginMs,
    })
    if (this.expiry !== undefined) clearTimeout(this.expiry)
    this.expiry = setTimeout(
      () => {
        if (Date.now() >= this.deadline) this.lost(session)
      },
      Math.max(0, this.deadline - Date.now()),
    )
  }

  /** A loss: holding drops at once, everything is given back, and a new session contends. */
  private lost(session: string): void {
    if (this.session !== session || this.closed) return
    this.publish({ holding: false, session: undefined, fencingToken: undefined, ranks: [] })
    void this.endSession().then(() => this.begin())
  }

  private fail(error: SemaphoreError): void {
    this.publish({ ...IDLE })
    void this.close().then(() => this.state.error(error))
  }

  /**
   * Gives back what this session holds: the session destroyed first, which deletes its key in
   * every prefix in one step (so no prefix shows it holding while another has let it go), then
   * every `.lock` that still lists it written without it, in one transaction on a fresh read (a
   * `.lock` written meanwhile keeps a dead holder, which its next writer prunes).
   */
  private async endSession(): Promise<void> {
    const session = this.session
    this.session = undefined
    this.granted = undefined
    this.snapshots = []
    this.watch?.unsubscribe()
    this.watch = undefined
    if (this.renewals !== undefined) clearInterval(this.renewals)
    this.renewals = undefined
    if (this.expiry !== undefined) clearTimeout(this.expiry)
    this.expiry = undefined
    if (session === undefined) return
    await this.destroy(session)
    const { targets } = this.plan
    const read = await this.client.kv.txn(
      targets.map((target): TxnOp => ({ verb: 'get-tree', key: lockKey(target.prefix) })),
    )()
    if (E.isLeft(read) || !read.right.committed) return
    const listing: KVSnapshot = { index: 0n, entries: read.right.results }
    const ops = targets.flatMap((target): TxnOp[] => {
      const release = releaseFromLockBody(listing, { prefix: target.prefix, session })
      return release.type === 'WriteRelease'
        ? [
            {
              verb: 'cas',
              key: lockKey(target.prefix),
              value: release.body,
              flags: SEMAPHORE_FLAGS,
              index: release.cas,
            },
          ]
        : []
    })
    if (ops.length > 0) await this.client.kv.txn(ops)()
  }

  private async destroy(session: string): Promise<void> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const answer = await this.client.session.destroy(session)()
      if (E.isRight(answer)) return
      await this.pause(200 * (attempt + 1))
    }
  }

  private publish(next: AllSlotsState): void {
    if (!this.state.closed) this.state.next(next)
  }

  /** Waits `ms`, or until `close()`. */
  private pause(ms: number): Promise<void> {
    if (this.closed) return Promise.resolve()
    return new Promise<void>((done) => {
      const wait = {
        timer: setTimeout(() => wait.done(), ms),
        done: () => {
          this.waits.delete(wait)
          done()
        },
      }
      this.waits.add(wait)
    })
  }

  close(): Promise<void> {
    this.closed = true
    for (const wait of this.waits) {
      clearTimeout(wait.timer)
      wait.done()
    }
    // Never rejects: each step gives up on its own (the session then expires by its TTL, and the
    // next writer of each prefix prunes it).
    this.closing ??= (async () => {
      this.publish({ ...IDLE })
      await this.endSession()
      await this.borrowed?.release()
    })()
    return this.closing
  }
}
