/**
 * The jobs of a process share its contenders: every `withSlot` call on the same client, prefix and
 * options waits in one local queue, first in first out, behind at most `limit` contenders of the
 * process (its workers). A worker keeps its session across the jobs it serves, and makes one
 * Consul write per job that gives the next job a fresh fencing token (`Refencing`): it keeps its
 * slot when nobody else waits or within its quantum on the slot, else hands it on and rejoins at
 * the tail. The write is made when a job starts and another waits (ahead), so that the next job
 * starts as soon as this one ends; or, when the slot is not to be kept, when it ends.
 *
 * ```
 * withSlot ─► queue (FIFO) ─► worker holds ─► job runs under token t
 *                                  ▲                 │ settles
 *                                  │   more queued?  ▼
 *                                  └──── refence ◄─ yes          no ──► close (release)
 * ```
 */
import type { Subscription } from 'rxjs'
import type { ContenderHandle } from '../handle/contender-handle.js'
import { SemaphoreError } from '../base/semaphore-error.js'
import {
  resolveSemaphoreOptions,
  validated,
  withoutTrailingSlashes,
  type ReportProblem,
  type SemaphoreOptions,
} from '../options/contender-options.js'
import { slotContender, type SemaphoreState } from './semaphore.js'
import { SEMAPHORE_OPTION_NAMES } from '../options/known-options.js'
import type { SlotGuard } from '../handle/slot-guard.js'
import type { TxnOp, TxnResult } from '../consul/client-api.js'
import type { RevokeRequest } from '../core/revoke/revoke-request.js'
import { formatGoDuration } from '../consul/durations.js'

/** One `withSlot` call, from the queue to its settling. */
export interface PoolJob {
  /** Called with the worker's guard bound to this job's token, when its slot is held. */
  start(slot: JobSlot): void
  /** The job left the queue for good: its pool failed (`error`), nothing was started. */
  fail(error: SemaphoreError): void
  /**
   * Called while the job runs when it must stop (its signal aborts with `error`): its slot was
   * lost, or its holder was asked to give the slot back (`RevokeRequested`; the slot is given back
   * when the job settles). May be called more than once, and before `start` has made its signal
   * (then it does nothing). A method of the job rather than a callback that `start` stores on the
   * slot: a closure made in `start` and kept on the slot outlived every young collection in V8
   * (Maglev-compiled), and took the job's signal and guard with it to the old generation.
   */
  stop(error: SemaphoreError): void
  /** The pool's own mark, set while the job waits in its queue (false before and after). */
  queued: boolean
}

/** What a running job gets: its guard (bound to its own token) and how it says it is over. */
export interface JobSlot {
  readonly guard: SlotGuard
  /** The fencing token this job runs under (no other job of the prefix ran under it). */
  readonly token: bigint
  /**
   * The job is over: the slot goes to the next queued job (a renewal) or is given back. Resolves
   * when that is done for a given-back slot (rejects as `close()` does), at once otherwise.
   */
  readonly done: () => Promise<void>
}

/** A contender of the pool: one session, many jobs one after the other. */
interface Worker {
  readonly handle: ContenderHandle<SemaphoreState>
  subscription: Subscription | undefined
  state: SemaphoreState | undefined
  /** The job running on it, if any. */
  job: PoolSlot | undefined
  /** The last job's token: never handed to another job. */
  spent: bigint | undefined
  closing: boolean
}

/** A process's pool for one (client, prefix, options). */
export class SlotPool {
  /**
   * The queue, first in first out: the jobs from `head` on, those no longer `queued` (taken out
   * by `cancel`) skipped when reached. An array walked by an index rather than a Set: taking the
   * first job allocates nothing, where a Set of ten thousand jobs makes an iterator per job and
   * a new table each time it shrinks.
   */
  private readonly waiting: (PoolJob | undefined)[] = []
  private head = 0
  /** How many jobs are queued (`waiting` from `head` on, less those taken out). */
  private queued = 0
  private readonly workers = new Set<Worker>()
  /**
   * The greatest token of a job of this pool that has ended: a job starts only under a greater
   * one, so that a job that starts after another ended has the greater token.
   */
  private ended: bigint | undefined

  constructor(
    private readonly key: string,
    private readonly options: SemaphoreOptions,
    /** The most workers: the limit, over the permits each worker takes. */
    private readonly maxWorkers: number,
    /** The prefix, as the options give it. */
    readonly prefix: string,
  ) {}

  /** Queues `job`: it starts when a worker holds a token no job ran under. */
  submit(job: PoolJob): void {
    job.queued = true
    this.waiting.push(job)
    this.queued++
    void this.pump()
  }

  /**
   * Takes a queued job out (abort, wait timeout). Resolves once the workers that no job needs any
   * more after it left have given their slots back; nothing is sent when other jobs still wait.
   */
  cancel(job: PoolJob): Promise<void> {
    if (!job.queued) return SETTLED
    job.queued = false
    this.queued--
    return this.pump()
  }

  /** Takes the first queued job out of the queue, if any. */
  private takeNext(): PoolJob | undefined {
    const waiting = this.waiting
    while (this.head < waiting.length) {
      const job = waiting[this.head]
      waiting[this.head++] = undefined
      if (job?.queued === true) {
        job.queued = false
        this.queued--
        this.compact()
        return job
      }
    }
    this.compact()
    return undefined
  }

  /** Drops the slots before `head`, in place, once they are most of the array. */
  private compact(): void {
    const waiting = this.waiting
    if (this.head === waiting.length) {
      waiting.length = 0
      this.head = 0
    } else if (this.head >= 1024 && this.head * 2 >= waiting.length) {
      waiting.copyWithin(0, this.head)
      waiting.length -= this.head
      this.head = 0
    }
  }

  /**
   * Starts queued jobs on idle holders, adds workers for the rest, closes workers not needed.
   * Resolves when the workers it closed are released (never rejects: a failed release is the
   * worker's, and its session expires by its TTL).
   */
  private pump(): Promise<void> {
    // `forEach` rather than `for...of`, with a callback made once: a pump per `withSlot` call
    // allocates nothing (no iterator result per worker, no closure). A job started here may call
    // `withSlot` at once, and so pump within this pump: the count of this one is kept aside.
    const outer = this.free
    this.free = 0
    this.workers.forEach(this.offerTo)
    let free = this.free
    this.free = outer
    while (this.queued > free && this.workers.size < this.maxWorkers) {
      this.spawn()
      free++
    }
    if (this.queued > 0) return SETTLED
    const retired: Promise<void>[] = []
    for (const worker of this.workers) {
      if (worker.job === undefined) retired.push(this.retire(worker).catch(() => undefined))
    }
    if (this.workers.size === 0) dropPool(this.key)
    return retired.length === 0 ? SETTLED : Promise.all(retired).then(() => undefined)
  }

  /** `pump`'s count of the workers free for a job. */
  private free = 0

  /** `pump`'s step for each worker: offers it the next job, counts it if free. */
  private readonly offerTo = (worker: Worker): void => {
    if (this.queued > 0) this.offer(worker)
    if (worker.job === undefined && !worker.closing) this.free++
  }

  /** Starts the next queued job on `worker` if it holds a token no job has run under. */
  private offer(worker: Worker): void {
    const state = worker.state
    if (
      worker.job !== undefined ||
      worker.closing ||
      state?.holding !== true ||
      state.revokeRequested !== undefined ||
      state.fencingToken === undefined ||
      state.fencingToken === worker.spent
    ) {
      return
    }
    if (this.queued === 0) return
    const token = state.fencingToken
    if (this.ended !== undefined && token <= this.ended) {
      // A job under a greater token, written later, has already ended (a token written ahead
      // while another worker was handed a slot): one more write, so that a job that starts after
      // another ended runs under the greater token.
      worker.spent = token
      worker.handle.refence()
      return
    }
    const job = this.takeNext()
    if (job === undefined) return
    worker.spent = token
    const slot = new PoolSlot(this, worker, token, job)
    worker.job = slot
    // Another job waits: its token is written now, while this one runs, if the slot is kept.
    if (this.queued > 0) worker.handle.refence(true)
    job.start(slot)
  }

  /** `slot.done()`: see JobSlot. */
  jobDone(worker: Worker, slot: PoolSlot): Promise<void> {
    if (worker.job !== slot) return SETTLED
    worker.job = undefined
    if (this.ended === undefined || slot.token > this.ended) this.ended = slot.token
    if (this.queued > 0 && !worker.closing && worker.state?.revokeRequested === undefined) {
      // One write for the next job: a new token on this slot, or a hand-on and a rejoin.
      worker.handle.refence()
      return this.pump()
    }
    const closed = this.retire(worker)
    void this.pump()
    return closed
  }

  private spawn(): void {
    const handle = slotContender(this.options, { pooled: true })
    const worker: Worker = {
      handle,
      subscription: undefined,
      state: undefined,
      job: undefined,
      spent: undefined,
      closing: false,
    }
    this.workers.add(worker)
    worker.subscription = handle.state$.subscribe({
      next: (state) => this.stateOf(worker, state),
      error: (error: unknown) => this.failed(worker, error),
      complete: () => this.forget(worker),
    })
  }

  private stateOf(worker: Worker, state: SemaphoreState): void {
    worker.state = state
    const job = worker.job
    if (job !== undefined) {
      // Lost under the job (not the renewal after it, which runs only once the job is over).
      if (!state.holding) job.stop(new SemaphoreError('SlotLost', 'the semaphore slot was lost'))
      else if (state.revokeRequested !== undefined) {
        job.stop(revokeRequestedError(this.prefix, state.revokeRequested))
      }
      return
    }
    if (state.holding) {
      // Asked to give the slot back between two jobs: it is, and a new worker queues for the rest.
      if (state.revokeRequested !== undefined) {
        void this.retire(worker).catch(() => undefined)
        void this.pump()
      } else if (this.queued > 0) this.offer(worker)
      // Holding with nothing to do (its job left the queue meanwhile): give the slot back.
      else void this.pump()
    }
  }

  /** Gives the worker's slot back (and its session) and lets it go once released. */
  private retire(worker: Worker): Promise<void> {
    if (worker.closing) return Promise.resolve()
    worker.closing = true
    this.workers.delete(worker)
    return worker.handle.close().finally(() => worker.subscription?.unsubscribe())
  }

  /** A worker's contender failed for good: its job and every queued job fail with it. */
  private failed(worker: Worker, error: unknown): void {
    const failure =
      error instanceof SemaphoreError
        ? error
        : new SemaphoreError('Unreachable', String(error), { cause: error })
    worker.job?.stop(failure)
    this.forget(worker)
    const queued: PoolJob[] = []
    for (let job = this.takeNext(); job !== undefined; job = this.takeNext()) queued.push(job)
    for (const job of queued) job.fail(failure)
    void this.pump()
  }

  private forget(worker: Worker): void {
    if (!this.workers.delete(worker)) return
    worker.closing = true
    void worker.handle.close().catch(() => undefined)
    void this.pump()
  }
}

/**
 * The abort reason of a job whose holder was asked to give its slot back.
 *
 * @example
 * revokeRequestedError('jobs', { graceMs: 30_000, reason: 'deploy' }).kind // 'RevokeRequested'
 */
export function revokeRequestedError(prefix: string, request: RevokeRequest): SemaphoreError {
  const reason = request.reason === undefined ? '' : ` (${request.reason})`
  const grace = request.graceMs === undefined ? '' : ` within ${formatGoDuration(request.graceMs)}`
  return new SemaphoreError(
    'RevokeRequested',
    `the holder was asked to give its slot of ${withoutTrailingSlashes(prefix)} back${reason}${grace}: ` +
      'stop the work; the slot is given back when it settles, and taken by force after the grace',
  )
}

/** A resolved promise, shared: what a pool method answers when there is nothing to wait for. */
const SETTLED = Promise.resolve()

/** A running job's slot: one object per job, its `done` and `stop` on the prototype. */
class PoolSlot implements JobSlot {
  readonly guard: SlotGuard

  constructor(
    private readonly pool: SlotPool,
    private readonly worker: Worker,
    readonly token: bigint,
    private readonly job: PoolJob,
  ) {
    this.guard = new JobGuard(worker.handle.guard, token)
  }

  done(): Promise<void> {
    return this.pool.jobDone(this.worker, this)
  }

  /** The job must stop (see PoolJob.stop). */
  stop(error: SemaphoreError): void {
    this.job.stop(error)
  }
}

/**
 * A job's guard: its worker's, for as long as the worker holds under this job's token. Its
 * members are plain functions, as every guard's are (they may be passed on detached), each made
 * on first use: most jobs read one of them, if any. They are made by the functions below rather
 * than in the getters: a closure made in a Maglev-compiled getter (V8 13.6, Node 24) and kept on
 * the guard outlived every young collection, and took the guard to the old generation with it.
 */
class JobGuard implements SlotGuard {
  private holdingCheck: (() => boolean) | undefined
  private holdingAssert: (() => bigint) | undefined
  private fenced: SlotGuard['fencedTxn'] | undefined

  constructor(
    private readonly worker: SlotGuard,
    readonly token: bigint,
  ) {}

  get isHolding(): () => boolean {
    return (this.holdingCheck ??= isHoldingOf(this))
  }

  get assertHolding(): () => bigint {
    return (this.holdingAssert ??= assertHoldingOf(this))
  }

  get fencedTxn(): SlotGuard['fencedTxn'] {
    return (this.fenced ??= fencedTxnOf(this))
  }

  /** Whether the worker still holds under this job's token. */
  holds(): boolean {
    try {
      return this.worker.assertHolding() === this.token
    } catch {
      return false
    }
  }

  /** The worker's `fencedTxn`, while it holds under this job's token. */
  txn(ops: readonly TxnOp[], options?: { signal?: AbortSignal }): Promise<TxnResult> {
    return this.holds() ? this.worker.fencedTxn(ops, options) : Promise.reject(this.lost())
  }

  /** The error of a check made once the job's slot is no longer held. */
  lost(): SemaphoreError {
    return new SemaphoreError(
      'SlotLost',
      `this job's slot (fencing token ${this.token}) is no longer held. Stop touching the ` +
        'guarded resource.',
    )
  }
}

/** `guard.isHolding`, detached. */
function isHoldingOf(guard: JobGuard): () => boolean {
  return () => guard.holds()
}

/** `guard.assertHolding`, detached. */
function assertHoldingOf(guard: JobGuard): () => bigint {
  return () => {
    if (!guard.holds()) throw guard.lost()
    return guard.token
  }
}

/** `guard.fencedTxn`, detached. */
function fencedTxnOf(guard: JobGuard): SlotGuard['fencedTxn'] {
  return (ops, options) => guard.txn(ops, options)
}

const pools = new Map<string, SlotPool>()

/**
 * The pool of `options`' client, prefix and options, made on first use (the options validated
 * then) and dropped once it has neither jobs nor workers. `options` may carry more than the
 * semaphore's (a job's own, as `withSlot` has them): only the semaphore's make the pool's key
 * and its contenders.
 *
 * @example
 * ```ts
 * slotPool({ prefix: 'service/db/lock', limit: 3 }).submit(job)
 * ```
 * @param options - The semaphore's options, and perhaps the job's own.
 * @param checkMore - The job's own options, checked each call (with the semaphore's, the first);
 *   none when it has nothing to check.
 * @returns The pool.
 * @throws SemaphoreError('InvalidOptions') naming every wrong option.
 */
export function slotPool(
  options: SemaphoreOptions,
  checkMore?: (report: ReportProblem) => void,
): SlotPool {
  const key = poolKey(options)
  const known = pools.get(key)
  if (known !== undefined) {
    // Most calls have nothing to check once their pool exists: no check is made for them.
    if (options.session !== undefined || checkMore !== undefined) {
      validated(jobCheck(options, checkMore))
    }
    return known
  }
  const check = jobCheck(options, checkMore)
  const { limit, permits } = resolveSemaphoreOptions(options, 'rx-consul-semaphore', check)
  // Workers of several permits each: the process holds at most `limit` slots, as with one.
  const own = semaphoreOptionsOf(options)
  const pool = new SlotPool(key, own, Math.floor(limit / permits), options.prefix)
  pools.set(key, pool)
  return pool
}

/** The checks of a job's options beyond the semaphore's: its pool makes the sessions. */
function jobCheck(
  options: SemaphoreOptions,
  checkMore: ((report: ReportProblem) => void) | undefined,
): (report: ReportProblem) => void {
  return (report) => {
    // A pool's workers each make a session, and keep it across jobs: none is anybody else's.
    if (options.session !== undefined) {
      report(
        'session',
        'withSlot makes the sessions of its workers itself; use semaphore() or tryAcquire() with an existing session.',
      )
    }
    checkMore?.(report)
  }
}

/** The semaphore's options among `options` (those a pool's contenders are made with). */
function semaphoreOptionsOf(options: SemaphoreOptions): SemaphoreOptions {
  const own: Record<string, unknown> = {}
  for (const name of KEY_NAMES) if (name in options) own[name] = options[name]
  return own as unknown as SemaphoreOptions
}

/** A pool without jobs or workers leaves the map, and the key memo (`lastKey`) if it is its. */
function dropPool(key: string): void {
  pools.delete(key)
  if (lastKey?.key === key) lastKey = undefined
}

/** How many pools the process has now (for tests and benchmarks). */
export function slotPoolCount(): number {
  return pools.size
}

const objectIds = new WeakMap<object, number>()
let nextObjectId = 0

function objectId(value: object): number {
  let id = objectIds.get(value)
  if (id === undefined) objectIds.set(value, (id = ++nextObjectId))
  return id
}

/** The semaphore's option names in one fixed order: a pool key lists its values in it. */
const KEY_NAMES = Object.keys(SEMAPHORE_OPTION_NAMES).sort() as (keyof SemaphoreOptions)[]

/**
 * The last key `poolKey` made, and the option values it was made of, when none of them is a value
 * the key compares by value (a plain object or array, which could have changed since): a call
 * whose values are the same (===) has the same key. Most calls repeat the options of the one
 * before (`withSlot({ prefix, limit }, job)` in a loop), and a key built anew allocates a string
 * per option name: more than the rest of the call.
 */
let lastKey: { readonly values: readonly unknown[]; readonly key: string } | undefined

/**
 * The pool key of a set of options: plain values by value (object keys sorted), anything else (a
 * client, a scheduler, a telemetry provider, a function) by identity. Jobs share a pool only when
 * every option is the same. Built from the known option names in a fixed order.
 */
function poolKey(options: SemaphoreOptions): string {
  const last = lastKey
  if (last !== undefined && sameValues(options, last.values)) return last.key
  const values: unknown[] = []
  let byIdentity = true
  let key = ''
  for (const name of KEY_NAMES) {
    const raw = options[name]
    values.push(raw)
    if (comparedByValue(raw)) byIdentity = false
    const value = name === 'prefix' ? withoutTrailingSlashes(options.prefix) : raw
    key += `${value === undefined ? '' : keyPart(value)}\u0000`
  }
  lastKey = byIdentity ? { values, key } : undefined
  return key
}

/** Whether `options` has `values` (KEY_NAMES' order, as given) for its semaphore options. */
function sameValues(options: SemaphoreOptions, values: readonly unknown[]): boolean {
  // An indexed loop: nothing allocated, in whatever tier V8 runs it.
  for (let i = 0; i < KEY_NAMES.length; i++) {
    if (options[KEY_NAMES[i] as keyof SemaphoreOptions] !== values[i]) return false
  }
  return true
}

/** Whether a key names `value` by its content (see `plainKey`), not by its identity. */
function comparedByValue(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    (Array.isArray(value) || Object.getPrototypeOf(value) === Object.prototype)
  )
}

function keyPart(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value)
    case 'number':
    case 'boolean':
      return String(value)
    case 'bigint':
      return `${value}n`
    case 'function':
      return `#${objectId(value)}`
    default:
      return plainKey(value)
  }
}

/** An object option: plain objects and arrays by value (keys sorted), others by identity. */
function plainKey(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) => {
    if (typeof inner === 'bigint') return `${inner}n`
    if (typeof inner === 'function') return `#${objectId(inner)}`
    if (inner === null || typeof inner !== 'object' || Array.isArray(inner)) return inner
    if (Object.getPrototypeOf(inner) !== Object.prototype) return `#${objectId(inner)}`
    const sorted: Record<string, unknown> = {}
    for (const key of Object.keys(inner).sort())
      sorted[key] = (inner as Record<string, unknown>)[key]
    return sorted
  })
}
