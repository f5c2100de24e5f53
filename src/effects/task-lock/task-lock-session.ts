import * as E from 'fp-ts/lib/Either.js'
import { BehaviorSubject, asyncScheduler, type Observable, type SchedulerLike } from 'rxjs'
import type { ConsulClient } from '../../consul/client-api.js'
import type { ConsulError } from '../../base/consul-error.js'
import { leaseDeadline } from '../../core/contender/lease-deadline.js'
import type { TaskLockInput } from '../../core/task-lock/task-lock-loss.js'
import { sessionLease } from '../session-lease.js'
import { acquireTaskLock } from './task-lock-acquire.js'
import { finishTaskLock, type TaskKeyFinish } from './task-lock-finish.js'

export interface TaskLockSessionOptions {
  readonly client: ConsulClient
  readonly sessionName: string
  readonly ttl: string
  readonly ttlMs: number
  readonly lockDelay: string | undefined
  readonly checks: readonly string[] | undefined
  readonly serviceChecks?:
    readonly { readonly id: string; readonly namespace?: string }[] | undefined
  readonly leaseMarginMs: number
  readonly scheduler?: SchedulerLike | undefined
}

/** An acquisition's answer as the session sees it. */
export type TaskAcquisition =
  | {
      readonly type: 'acquired'
      readonly session: string
      readonly modifyIndex: bigint
      /** The lease of the session that holds the key: `lease` deadlines, then `session-gone`. */
      readonly lease: Observable<TaskLockInput>
    }
  | { readonly type: 'refused'; readonly reason: 'held' | 'lock-delay' }

/** What `close()` did. */
export interface TaskLockSessionClosed {
  /** Every session this object created, all destroyed (or left to their TTL on error). */
  readonly sessions: readonly string[]
  /** The first failure of the cleanup, if any. */
  readonly error: ConsulError | undefined
}

interface Generation {
  readonly session: string
  readonly lease: BehaviorSubject<TaskLockInput>
  gone: boolean
  stop(): void
}

interface HeldKey {
  readonly generation: Generation
  readonly value: string
}

/**
 * The one session an `exclusive` subscription holds all its task keys with: created on the first
 * acquisition, kept alive by one `sessionLease`, replaced by a new one when Consul invalidates it
 * (the keys of the old one are lost; their tasks learn it from the lease). It knows every key it
 * holds, so that `close()` can give them all back before destroying the session: destroying a
 * session that still holds keys would invalidate them and put them under lock-delay.
 *
 * Every call is tracked until it settles and never rejects (errors are Lefts), so that cleanup
 * that runs after an unsubscribe cannot become an unhandled rejection.
 */
export class TaskLockSession {
  readonly #options: TaskLockSessionOptions
  readonly #scheduler: SchedulerLike
  readonly #held = new Map<string, HeldKey>()
  readonly #pending = new Set<Promise<unknown>>()
  readonly #sessions: string[] = []
  #current: Promise<E.Either<ConsulError, Generation>> | undefined
  #closing = false

  constructor(options: TaskLockSessionOptions) {
    this.#options = options
    this.#scheduler = options.scheduler ?? asyncScheduler
  }

  /**
   * One non-blocking acquisition of `key` with `value`. A key this object already holds is
   * refused as 'held': the same task twice in one stream must not run twice at once.
   */
  acquire(key: string, value: string): Promise<E.Either<ConsulError, TaskAcquisition>> {
    return this.#track(this.#acquire(key, value, 1))
  }

  /** Gives `key` back ('release' or 'delete'), if this object holds it. */
  finish(key: string, how: TaskKeyFinish): Promise<E.Either<ConsulError, void>> {
    const held = this.#held.get(key)
    if (held === undefined) return Promise.resolve(E.right(undefined))
    this.#held.delete(key)
    const { generation, value } = held
    return this.#track(finishTaskLock(this.#options.client, key, generation.session, value, how))
  }

  /**
   * Waits for every call in flight, releases every key still held, stops the leases and destroys
   * the sessions. Acquisitions asked for after this are refused.
   */
  async close(): Promise<TaskLockSessionClosed> {
    this.#closing = true
    let error: ConsulError | undefined
    const firstError = (result: E.Either<ConsulError, unknown>) => {
      if (E.isLeft(result)) error ??= result.left
    }
    for (;;) {
      // Finishes started by task finalizers that run after this one join the loop.
      await Promise.resolve()
      if (this.#pending.size === 0 && this.#held.size === 0) break
      for (const key of [...this.#held.keys()]) void this.finish(key, 'release').then(firstError)
      await Promise.allSettled([...this.#pending])
    }
    const generation = await this.#current
    if (generation !== undefined && E.isRight(generation)) generation.right.stop()
    for (const session of this.#sessions) {
      firstError(await this.#options.client.session.destroy(session)())
    }
    return { sessions: [...this.#sessions], error }
  }

  async #acquire(
    key: string,
    value: string,
    attempt: number,
  ): Promise<E.Either<ConsulError, TaskAcquisition>> {
    if (this.#closing || this.#held.has(key)) return E.right({ type: 'refused', reason: 'held' })
    const generation = await this.#generation()
    if (E.isLeft(generation)) return generation
    // Closed while the session was being made: write no key that close() would have to give back.
    if (this.#closing) return E.right({ type: 'refused', reason: 'held' })
    const { session, lease } = generation.right
    const answer = await acquireTaskLock(this.#options.client, key, session, value, this.#scheduler)
    if (E.isLeft(answer)) return answer
    switch (answer.right.type) {
      case 'refused':
        return E.right(answer.right)
      case 'session-gone':
        // Invalidated under us (TTL, node check): start over once with a new session.
        this.#retire(generation.right)
        return attempt > 1
          ? E.right({ type: 'refused', reason: 'held' })
          : this.#acquire(key, value, 2)
      case 'acquired':
        if (this.#held.has(key)) return E.right({ type: 'refused', reason: 'held' })
        this.#held.set(key, { generation: generation.right, value })
        return E.right({
          type: 'acquired',
          session,
          modifyIndex: answer.right.modifyIndex,
          lease,
        })
    }
  }

  /** The live session, created on first use and after the last one was invalidated. */
  #generation(): Promise<E.Either<ConsulError, Generation>> {
    const current = this.#current
    if (current !== undefined) {
      return current.then((g) => {
        if (E.isLeft(g) || !g.right.gone) return g
        // Only the first caller to see it gone creates the next one; the others wait for it.
        return this.#current === current ? this.#create() : this.#generation()
      })
    }
    return this.#create()
  }

  #create(): Promise<E.Either<ConsulError, Generation>> {
    const { client, ttlMs } = this.#options
    const scheduler = this.#scheduler
    const margin = { leaseMarginMs: this.#options.leaseMarginMs }
    const created = (async (): Promise<E.Either<ConsulError, Generation>> => {
      const createdAt = scheduler.now()
      const id = await client.session.create({
        name: this.#options.sessionName,
        ttl: this.#options.ttl,
        // As Go's Lock: an invalidated holder's keys stay (done markers are other keys), unheld.
        behavior: 'release',
        ...(this.#options.lockDelay !== undefined ? { lockDelay: this.#options.lockDelay } : {}),
        ...(this.#options.checks !== undefined ? { nodeChecks: this.#options.checks } : {}),
        ...(this.#options.serviceChecks !== undefined
          ? { serviceChecks: this.#options.serviceChecks }
          : {}),
      })()
      if (E.isLeft(id)) {
        this.#current = undefined
        return id
      }
      const session = id.right
      this.#sessions.push(session)
      const lease = new BehaviorSubject<TaskLockInput>({
        type: 'lease',
        deadline: leaseDeadline(createdAt, ttlMs, margin),
      })
      const generation: Generation = {
        session,
        lease,
        gone: false,
        stop: () => subscription.unsubscribe(),
      }
      const subscription = sessionLease({
        client,
        session,
        ttlMs,
        createdAt,
        scheduler,
        leaseMarginMs: margin.leaseMarginMs,
      }).subscribe({
        next: (event) => {
          if (event.type === 'session-renewed') {
            lease.next({
              type: 'lease',
              deadline: leaseDeadline(event.sentAt, event.ttlMs, margin),
            })
          } else if (event.type === 'session-gone') {
            this.#retire(generation)
          }
        },
        // A permanent renewal failure (403): the session cannot be kept, treat it as gone.
        error: () => this.#retire(generation),
      })
      return E.right(generation)
    })()
    this.#current = created
    return created
  }

  #retire(generation: Generation): void {
    if (generation.gone) return
    generation.gone = true
    generation.stop()
    generation.lease.next({ type: 'session-gone' })
  }

  #track<A>(promise: Promise<A>): Promise<A> {
    this.#pending.add(promise)
    const settled = () => void this.#pending.delete(promise)
    promise.then(settled, settled)
    return promise
  }
}
