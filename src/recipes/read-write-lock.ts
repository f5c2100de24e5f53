/**
 * A read-write lock on Consul's semaphore format: a semaphore of `maxReaders` slots where a reader
 * takes one slot and a writer takes every slot, in one write (several permits). Readers share;
 * a writer holds alone; the queue is served in arrival order around a waiting writer, so readers
 * that arrive after it wait behind it, and a writer is not passed by a stream of readers.
 *
 * ```
 * prefix/.lock  {"Limit":16,"Holders":{r1,r2}}       two readers hold, 14 slots free
 * prefix/r1, prefix/r2                               the readers' keys
 * prefix/w      (waiting: 16 permits)                the writer, first in line: waits for all 16
 * prefix/r3                                          arrived after the writer: waits behind it
 * ```
 *
 * `consul lock -n <maxReaders>` reads the same prefix: it counts a writer as `maxReaders` holders.
 */
import { SemaphoreError } from '../base/semaphore-error.js'
import {
  CONTENDER_OPTION_NAMES,
  rejectUnknownOptions,
  type OptionNames,
} from '../options/known-options.js'
import {
  MAX_PERMITS,
  MAX_PERMITS_EVERY_VERSION,
  type SemaphoreOptions,
} from '../options/contender-options.js'
import { closeOnDispose, type asyncDispose } from '../handle/close-on-dispose.js'
import type { SlotGuard } from '../handle/slot-guard.js'
import { semaphore, type Semaphore } from './semaphore.js'
import { withSlot, type WithSlotOptions } from './with-slot.js'

/** Default of `maxReaders`. */
export const DEFAULT_MAX_READERS = 16

/**
 * Options of `readWriteLock`: those of a semaphore, but for its slots, which `maxReaders` sets
 * (the writer's sessions are its own, so `session` is not taken either).
 *
 * @example
 * ```ts
 * const options: ReadWriteLockOptions = { prefix: 'service/config/rw', maxReaders: 8 }
 * const { reader, writer } = readWriteLock(options)
 * ```
 */
export interface ReadWriteLockOptions extends Omit<
  SemaphoreOptions,
  'limit' | 'permits' | 'followLimit' | 'session'
> {
  /**
   * How many readers may hold at once (default 16; 1 to 61): the semaphore's limit, which every
   * reader and writer of the prefix must agree on. A writer takes that many slots, so it makes
   * that many sessions while it waits and holds: a larger value costs each writer more.
   */
  readonly maxReaders?: number
}

/**
 * A read-write lock's two contenders: both are semaphores of the same prefix (`holding$`,
 * `state$`, `close()`, the guard), and nothing happens until one of them is subscribed.
 */
export interface ReadWriteLock {
  /** Holds one of `maxReaders` slots: alongside other readers, never alongside a writer. */
  readonly reader: Semaphore
  /** Holds every slot: alone. Its `state$` shows it as a holder of its first session. */
  readonly writer: Semaphore
  /** Closes both contenders (see `Semaphore.close`). */
  close(): Promise<void>
  /** Calls `close()`. */
  [asyncDispose](): Promise<void>
}

/**
 * A reader and a writer of the read-write lock under `options.prefix`.
 *
 * @example
 * ```ts
 * const { reader, writer } = readWriteLock({ prefix: 'service/config/rw' })
 * writer.holding$.pipe(switchMap((held) => (held ? rewriteConfig$ : EMPTY))).subscribe()
 * ```
 * @param options - The semaphore's options, with `maxReaders` for its limit.
 * @returns The two contenders.
 * @throws SemaphoreError('InvalidOptions') at once when an option is wrong.
 */
export function readWriteLock(options: ReadWriteLockOptions): ReadWriteLock {
  rejectUnknownOptions(options, 'readWriteLock', READ_WRITE_LOCK_OPTION_NAMES)
  const { maxReaders: _, ...rest } = options
  const limit = maxReadersOf(options)
  const reader = semaphore({ ...rest, limit })
  const writer = semaphore({ ...rest, limit, permits: limit })
  const close = async (): Promise<void> => {
    await Promise.all([reader.close(), writer.close()])
  }
  return closeOnDispose({ reader, writer, close })
}

/** Options of `withReadLock` and `withWriteLock`: the lock's, and those of `withSlot`'s wait. */
export interface WithReadWriteLockOptions extends ReadWriteLockOptions {
  /** How long to wait for the lock, and only that (see `WithSlotOptions.waitTimeout`). */
  readonly waitTimeout?: WithSlotOptions['waitTimeout']
  /** Cancels the wait or the work (see `WithSlotOptions.signal`). */
  readonly signal?: AbortSignal | undefined
}

/**
 * Runs `work` while a read lock is held, as `withSlot` runs it under a slot: readers of one
 * process share its contenders, and the work's signal aborts when the lock is lost or asked back.
 *
 * @example
 * ```ts
 * const config = await withReadLock({ prefix: 'service/config/rw' }, (signal) => readConfig(signal))
 * ```
 * @param options - The lock's options, and optionally `waitTimeout` and `signal`.
 * @param work - The work to run under the read lock.
 * @returns What `work` returned (rejects as `withSlot` does).
 */
export function withReadLock<T>(
  options: WithReadWriteLockOptions,
  work: (signal: AbortSignal, slot: SlotGuard) => Promise<T>,
): Promise<T> {
  return withLock(options, 'withReadLock', false, work)
}

/**
 * Runs `work` while the write lock is held: no reader and no other writer holds meanwhile. A
 * writer waiting first in line is served before any reader that arrived after it.
 *
 * @example
 * ```ts
 * await withWriteLock({ prefix: 'service/config/rw' }, (signal, slot) => rewriteConfig(signal, slot))
 * ```
 * @param options - The lock's options, and optionally `waitTimeout` and `signal`.
 * @param work - The work to run under the write lock.
 * @returns What `work` returned (rejects as `withSlot` does).
 */
export function withWriteLock<T>(
  options: WithReadWriteLockOptions,
  work: (signal: AbortSignal, slot: SlotGuard) => Promise<T>,
): Promise<T> {
  return withLock(options, 'withWriteLock', true, work)
}

function withLock<T>(
  options: WithReadWriteLockOptions,
  api: string,
  write: boolean,
  work: (signal: AbortSignal, slot: SlotGuard) => Promise<T>,
): Promise<T> {
  let limit: number
  try {
    rejectUnknownOptions(options, api, WITH_LOCK_OPTION_NAMES)
    limit = maxReadersOf(options)
  } catch (error: unknown) {
    return Promise.reject(error)
  }
  const { maxReaders: _, ...rest } = options
  return withSlot({ ...rest, limit, ...(write ? { permits: limit } : {}) }, work)
}

/** `maxReaders`, checked: a whole number from 1 to MAX_PERMITS (a writer's grant must fit). */
function maxReadersOf(options: ReadWriteLockOptions): number {
  const maxReaders: unknown = options.maxReaders ?? DEFAULT_MAX_READERS
  if (
    typeof maxReaders !== 'number' ||
    !Number.isSafeInteger(maxReaders) ||
    maxReaders < 1 ||
    maxReaders > MAX_PERMITS
  ) {
    throw new SemaphoreError(
      'InvalidOptions',
      `option maxReaders: ${JSON.stringify(maxReaders)} must be a whole number from 1 to ` +
        `${MAX_PERMITS}. A writer takes every reader's slot in one Consul transaction of ` +
        `maxReaders + 2 operations, and no Consul version takes more than ${MAX_PERMITS + 2} ` +
        `(more than ${MAX_PERMITS_EVERY_VERSION} readers need Consul 1.14 or later).`,
    )
  }
  return maxReaders
}

const { session: _session, ...LOCK_CONTENDER_NAMES } = CONTENDER_OPTION_NAMES

/** The names of the options `readWriteLock` takes. */
const READ_WRITE_LOCK_OPTION_NAMES = {
  ...LOCK_CONTENDER_NAMES,
  fairness: true,
  maxReaders: true,
} as const satisfies OptionNames<ReadWriteLockOptions>

/** The names of the options `withReadLock` and `withWriteLock` take. */
const WITH_LOCK_OPTION_NAMES = {
  ...READ_WRITE_LOCK_OPTION_NAMES,
  waitTimeout: true,
  signal: true,
} as const satisfies OptionNames<WithReadWriteLockOptions>
