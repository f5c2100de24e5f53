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

/** One `withSlot` call, from the queue to its settling. */
export interface PoolJob {
  /** Called with the worker's guard bound to this job's token, when its slot is held. */
  start(slot: JobSlot): void
  /** The job left the queue for good: its pool failed (`error`), nothing was started. */
  fail(error: SemaphoreError): void
}

/** What a running job gets: its guard (bound to its own token) and how it says it is over. */
export interface JobSlot {
  readonly guard: SlotGuard
  /** The fencing token this job runs under (no other job of the prefix ran under it). */
  readonly token: bigint
  /** Called when the slot is lost while the job runs (its signal aborts). */
  onLost: ((error: SemaphoreError) => void) | undefined
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
  job: JobSlot | undefined
  /** The last job's token: never handed to another job. */
  spent: bigint | undefined
  closing: boolean
}

/** A process's pool for one (client, prefix, options). */
export class SlotPool {
  private readonly queue = new Set<PoolJob>()
  private readonly workers = new Set<Worker>()
  /**
   * The greatest token of a job of this pool that has ended: a job starts only under a greater
   * one, so that a job that starts after another ended has the greater token.
   */
  private ended: bigint | undefined

  constructor(
    private readonly key: string,
    private readonly options: SemaphoreOptions,
    private readonly limit: number,
    /** The prefix, as the options give it. */
    readonly prefix: string,
  ) {}

  /** Queues `job`: it starts when a worker holds a token no job ran under. */
  submit(job: PoolJob): void {
    this.queue.add(job)
    void this.pump()
  }

  /**
   * Takes a queued job out (abort, wait timeout). Resolves once the workers that no job needs any
   * more after it left have given their slots back; nothing is sent when other jobs still wait.
   */
  cancel(job: PoolJob): Promise<void> {
    return this.queue.delete(job) ? this.pump() : Promise.resolve()
  }

  /**
   * Starts queued jobs on idle holders, adds workers for the rest, closes workers not needed.
   * Resolves when the workers it closed are released (never rejects: a failed release is the
   * worker's, and its session expires by its TTL).
   */
  private pump(): Promise<void> {
    for (const worker of this.workers) {
      if (this.queue.size === 0) break
      this.offer(worker)
    }
    let free = 0
    for (const worker of this.workers) if (worker.job === undefined && !worker.closing) free++
    while (this.queue.size > free && this.workers.size < this.limit) {
      this.spawn()
      free++
    }
    const retired: Promise<void>[] = []
    if (this.queue.size === 0) {
      for (const worker of this.workers) {
        if (worker.job === undefined) retired.push(this.retire(worker).catch(() => undefined))
      }
    }
    if (this.workers.size === 0 && this.queue.size === 0) pools.delete(this.key)
    return retired.length === 0 ? Promise.resolve() : Promise.all(retired).then(() => undefined)
  }

  /** Starts the next queued job on `worker` if it holds a token no job has run under. */
  private offer(worker: Worker): void {
    const state = worker.state
    if (
      worker.job !== undefined ||
      worker.closing ||
      state?.holding !== true ||
      state.fencingToken === undefined ||
      state.fencingToken === worker.spent
    ) {
      return
    }
    const next = this.queue.values().next()
    if (next.done === true) return
    const token = state.fencingToken
    if (this.ended !== undefined && token <= this.ended) {
      // A job under a greater token, written later, has already ended (a token written ahead
      // while another worker was handed a slot): one more write, so that a job that starts after
      // another ended runs under the greater token.
      worker.spent = token
      worker.handle.refence()
      return
    }
    const job = next.value
    this.queue.delete(job)
    worker.spent = token
    const slot: JobSlot = {
      guard: jobGuard(worker.handle.guard, token),
      token,
      onLost: undefined,
      done: () => this.jobDone(worker, slot),
    }
    worker.job = slot
    // Another job waits: its token is written now, while this one runs, if the slot is kept.
    if (this.queue.size > 0) worker.handle.refence(true)
    job.start(slot)
  }

  private jobDone(worker: Worker, slot: JobSlot): Promise<void> {
    if (worker.job !== slot) return Promise.resolve()
    worker.job = undefined
    if (this.ended === undefined || slot.token > this.ended) this.ended = slot.token
    if (this.queue.size > 0 && !worker.closing) {
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
      if (!state.holding)
        job.onLost?.(new SemaphoreError('SlotLost', 'the semaphore slot was lost'))
      return
    }
    if (state.holding) {
      if (this.queue.size > 0) this.offer(worker)
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
    worker.job?.onLost?.(failure)
    this.forget(worker)
    const queued = [...this.queue]
    this.queue.clear()
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

/** A job's guard: its worker's, for as long as the worker holds under this job's token. */
function jobGuard(worker: SlotGuard, token: bigint): SlotGuard {
  const isHolding = (): boolean => {
    try {
      return worker.assertHolding() === token
    } catch {
      return false
    }
  }
  const lost = (): SemaphoreError =>
    new SemaphoreError(
      'SlotLost',
      `this job's slot (fencing token ${token}) is no longer held. Stop touching the guarded ` +
        'resource.',
    )
  return {
    isHolding,
    assertHolding: () => {
      if (!isHolding()) throw lost()
      return token
    },
    fencedTxn: (ops, options) =>
      isHolding() ? worker.fencedTxn(ops, options) : Promise.reject(lost()),
  }
}

const pools = new Map<string, SlotPool>()

/**
 * The pool of `options`' client, prefix and options, made on first use (the options validated
 * then) and dropped once it has neither jobs nor workers.
 *
 * @example
 * ```ts
 * slotPool({ prefix: 'service/db/lock', limit: 3 }).submit(job)
 * ```
 * @param options - The semaphore's options, without the job's own.
 * @param checkMore - The job's own options, checked each call (with the semaphore's, the first).
 * @returns The pool.
 * @throws SemaphoreError('InvalidOptions') naming every wrong option.
 */
export function slotPool(
  options: SemaphoreOptions,
  checkMore: (report: ReportProblem) => void,
): SlotPool {
  const checkJob = (report: ReportProblem): void => {
    // A pool's workers each make a session, and keep it across jobs: none is anybody else's.
    if (options.session !== undefined) {
      report(
        'session',
        'withSlot makes the sessions of its workers itself; use semaphore() or tryAcquire() with an existing session.',
      )
    }
    checkMore(report)
  }
  const key = poolKey(options)
  const known = pools.get(key)
  if (known !== undefined) {
    validated(checkJob)
    return known
  }
  const { limit } = resolveSemaphoreOptions(options, 'rx-consul-semaphore', checkJob)
  const pool = new SlotPool(key, options, limit, options.prefix)
  pools.set(key, pool)
  return pool
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
 * The pool key of a set of options: plain values by value (object keys sorted), anything else (a
 * client, a scheduler, a telemetry provider, a function) by identity. Jobs share a pool only when
 * every option is the same. Built from the known option names in a fixed order, so that a call
 * with only primitive options (the common `{ prefix, limit }`) costs one short string.
 */
function poolKey(options: SemaphoreOptions): string {
  let key = ''
  for (const name of KEY_NAMES) {
    const value = name === 'prefix' ? withoutTrailingSlashes(options.prefix) : options[name]
    key += `${value === undefined ? '' : keyPart(value)}\u0000`
  }
  return key
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
