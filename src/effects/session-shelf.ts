/**
 * The process's idle sessions: a session that a job pool's worker (`withSlot`) gave up cleanly
 * (its slot handed off or released, its contender key deleted, so Consul holds nothing of it but
 * the session) waits here for a short linger, and the pool's next worker on the same client,
 * whose session would be created with the same options, takes it instead of creating one. A
 * process that calls `withSlot` job after job (a loop, a job per request) then creates and
 * destroys a session once per run of jobs, not once per job. A handle's `close()` never shelves:
 * it destroys its session before it resolves.
 *
 * ```
 * release (clean) ─► shelve ──take (within the linger)──► the next contender begins with it
 *                      │
 *                      └─ linger over, exit, flush, its client closing ─► destroy
 * ```
 */
import * as E from 'fp-ts/lib/Either.js'
import { asyncScheduler, type SchedulerLike } from 'rxjs'
import type { ConsulClient, SessionCreateOptions } from '../consul/client-api.js'
import { beforeClientClose } from '../consul/close-hooks.js'
import { destroySession } from './release/destroy-session.js'

/**
 * How long a shelved session waits for the next contender before it is destroyed: 2 s. A replica
 * that runs its next `withSlot` job at once, or in a loop, finds it; a process that runs a job once
 * in a while holds no idle session on Consul for long.
 */
export const SESSION_LINGER_MS = 2000

/**
 * How many sessions the shelf keeps per client and signature: 32. A replica needs one; many
 * contenders of a process closed at once need no more than come back at once, and the rest of
 * them are not kept idle on Consul (the oldest goes first).
 */
export const SHELF_CAPACITY = 32

/** A session as the shelf keeps it: enough for its next contender to take its lease over. */
export interface ShelvedSession {
  readonly session: string
  /** When its last renewal (or its create) was sent, on the contender's scheduler (ms). */
  readonly sentAt: number
  /** Its TTL (ms). */
  readonly ttlMs: number
}

/**
 * The lease a session must have left to be taken: a quarter of its TTL. Its taker renews it at
 * once (more than half the TTL has passed since `sentAt` by then), with time to spare.
 */
const leaseLeftToTake = (ttlMs: number): number => ttlMs / 4

/**
 * The lease a session must have left to be shelved: the linger and what its taker needs after it.
 * A contender renews every TTL/2, so a session on schedule always has enough (at TTL 10 s, the
 * least Consul allows, 5 s left against 4.5 s asked).
 */
const leaseLeftToShelve = (ttlMs: number): number => SESSION_LINGER_MS + leaseLeftToTake(ttlMs)

/** One shelved session and what its stay holds. */
interface Shelved extends ShelvedSession {
  readonly client: ConsulClient
  readonly signature: string
  readonly scheduler: SchedulerLike
  /** Cancels the linger timer. */
  cancel: () => void
  /** Called once the session left the shelf (taken, or its destroy answered). */
  readonly leave: () => void
}

/** How a contender shelves a session (`SessionShelf.shelve`). */
export interface ShelveOptions {
  /** The scheduler `sentAt` is on; its clock and (virtual time aside) the linger's timer. */
  readonly scheduler?: SchedulerLike | undefined
  /**
   * Called when the session is put on the shelf: what it holds while it stays (the default client
   * a session of it needs open); the function it returns is called when the session leaves.
   */
  readonly hold?: (() => () => void) | undefined
}

/**
 * Idle sessions, per client (held weakly) and per session signature (`sessionSignature`: every
 * option the session was created with). A shelved session stays `SESSION_LINGER_MS` at most, is
 * destroyed after it (`destroySession`; a destroy that fails is counted, and the session expires
 * by its TTL), at most SHELF_CAPACITY of a kind are kept, and none longer than its lease safely allows: one with too little lease left is
 * destroyed at once. While it holds anything the shelf listens for `beforeExit` (destroying every
 * session then) and hooks its clients' `close()` (destroying theirs first). Timers are
 * unreferenced: an idle session never keeps the process alive.
 *
 * @example
 * ```ts
 * const shelf = new SessionShelf()
 * shelf.shelve(client, signature, { session, sentAt, ttlMs: 15_000 })
 * const reused = shelf.take(client, signature) // within the linger: the same session
 * ```
 */
export class SessionShelf {
  private readonly byClient = new WeakMap<ConsulClient, Map<string, Shelved[]>>()
  /** Clients with shelved sessions, and how to forget their close hook. */
  private readonly clients = new Map<ConsulClient, () => void>()
  private readonly destroys = new Set<Promise<void>>()
  private held = 0
  private readonly onExit = (): void => void this.flush()
  /** Destroys that failed (the session then expires by its TTL). */
  destroyFailures = 0

  /**
   * Keeps `session` for the next contender of `client` with the same `signature`, or destroys it
   * at once when its lease is too short for the linger.
   *
   * @returns Whether it was shelved.
   */
  shelve(
    client: ConsulClient,
    signature: string,
    session: ShelvedSession,
    options: ShelveOptions = {},
  ): boolean {
    const scheduler = options.scheduler ?? asyncScheduler
    const leaseLeft = session.sentAt + session.ttlMs - scheduler.now()
    const leave = options.hold?.() ?? ((): void => undefined)
    const entry: Shelved = {
      ...session,
      client,
      signature,
      scheduler,
      cancel: () => undefined,
      leave: once(leave),
    }
    if (leaseLeft < leaseLeftToShelve(session.ttlMs)) {
      this.destroy(entry)
      return false
    }
    const byClient = this.byClient.get(client) ?? new Map<string, Shelved[]>()
    this.byClient.set(client, byClient)
    const stack = byClient.get(signature) ?? []
    byClient.set(signature, stack)
    stack.push(entry)
    const oldest = stack.length > SHELF_CAPACITY ? stack[0] : undefined
    if (oldest !== undefined && this.remove(oldest)) this.destroy(oldest)
    entry.cancel = lingerTimer(scheduler, SESSION_LINGER_MS, () => {
      if (this.remove(entry)) this.destroy(entry)
    })
    if (!this.clients.has(client)) {
      this.clients.set(
        client,
        beforeClientClose(client, () => this.flush(client)),
      )
    }
    if (this.held++ === 0) process.on('beforeExit', this.onExit)
    return true
  }

  /**
   * The newest session shelved for `client` and `signature` with enough lease left, off the
   * shelf; or undefined.
   *
   * @param now - The time on the taker's scheduler (the clock `sentAt` is on).
   */
  take(client: ConsulClient, signature: string, now: number): ShelvedSession | undefined {
    const stack = this.byClient.get(client)?.get(signature)
    for (let i = (stack?.length ?? 0) - 1; i >= 0; i--) {
      const entry = stack?.[i]
      if (entry === undefined || entry.sentAt + entry.ttlMs - now < leaseLeftToTake(entry.ttlMs))
        continue
      this.remove(entry)
      entry.leave()
      return { session: entry.session, sentAt: entry.sentAt, ttlMs: entry.ttlMs }
    }
    return undefined
  }

  /** The sessions on the shelf now, of `client` or of every client. */
  sessions(client?: ConsulClient): string[] {
    const of = client === undefined ? [...this.clients.keys()] : [client]
    return of.flatMap((c) =>
      [...(this.byClient.get(c)?.values() ?? [])].flat().map((e) => e.session),
    )
  }

  /**
   * Destroys now every session on the shelf (of `client`, or of every client), and resolves once
   * those destroys, and any still in flight, have answered. Never rejects.
   */
  async flush(client?: ConsulClient): Promise<void> {
    const of = client === undefined ? [...this.clients.keys()] : [client]
    for (const c of of) {
      for (const stack of [...(this.byClient.get(c)?.values() ?? [])]) {
        for (const entry of [...stack]) if (this.remove(entry)) this.destroy(entry)
      }
    }
    await Promise.all([...this.destroys])
  }

  /** Takes `entry` off the shelf (cancelling its linger); false when it was not on it. */
  private remove(entry: Shelved): boolean {
    const byClient = this.byClient.get(entry.client)
    const stack = byClient?.get(entry.signature)
    const at = stack?.indexOf(entry) ?? -1
    if (stack === undefined || at < 0) return false
    stack.splice(at, 1)
    entry.cancel()
    if (stack.length === 0) byClient?.delete(entry.signature)
    if (byClient?.size === 0) {
      this.byClient.delete(entry.client)
      this.clients.get(entry.client)?.()
      this.clients.delete(entry.client)
    }
    if (--this.held === 0) process.off('beforeExit', this.onExit)
    return true
  }

  /** Destroys the session of an entry off the shelf, then lets go what its stay held. */
  private destroy(entry: Shelved): void {
    const { client, session, scheduler } = entry
    const done: Promise<void> = destroySession({ client, session, scheduler })
      .catch((error: unknown) => E.left(error))
      .then((result) => {
        if (E.isLeft(result)) this.destroyFailures++
      })
      .finally(() => {
        this.destroys.delete(done)
        entry.leave()
      })
    this.destroys.add(done)
  }
}

/**
 * The signature of a session: every option it is created with. Two contenders may share a
 * session only when theirs are equal.
 *
 * @example
 * ```ts
 * const signature = sessionSignature({ name: 'rxsem', ttl: '15s', behavior: 'delete' })
 * ```
 */
export function sessionSignature(options: SessionCreateOptions): string {
  const { name, ttl, behavior, lockDelay, nodeChecks, serviceChecks, node } = options
  return JSON.stringify([name, ttl, behavior, lockDelay, nodeChecks, serviceChecks, node])
}

/** The process's shelf: the one every contender that is given a shelf uses. */
export const processShelf = new SessionShelf()

/**
 * Destroys now every session that `withSlot`'s workers keep idle for the process's next job, and
 * resolves once Consul has answered every destroy (a destroy that fails leaves that session to
 * expire by its TTL; this never rejects). Call it before a process that ran `withSlot` jobs ends
 * with `process.exit()`: without it, a session given back in the last 2 s stays in Consul, holding
 * no slot and no key, until its TTL. A process that ends by itself needs no call (the sessions are
 * destroyed before it exits), and `close()` of a `semaphore`, `leaderElection` or `tryAcquire`
 * handle leaves no session to destroy. Later `withSlot` jobs run as before, with new sessions.
 *
 * @example
 * ```ts
 * import { destroyIdleSessions, withSlot } from 'rx-consul-semaphore'
 *
 * await withSlot({ prefix: 'service/encode/lock', limit: 4 }, () => encode(file))
 * await destroyIdleSessions()
 * process.exit(0)
 * ```
 * @returns A promise that resolves once no idle session of the process is left in Consul.
 */
export function destroyIdleSessions(): Promise<void> {
  return processShelf.flush()
}

/**
 * @internal Destroys now the sessions the process's shelf keeps (of `client`, or all), and
 * resolves when done. For tests, and for what must leave Consul clean before it goes on.
 */
export function flushShelf(client?: ConsulClient): Promise<void> {
  return processShelf.flush(client)
}

/**
 * A shelf as one contender sees it: its client's sessions, taken and shelved by signature.
 */
export interface ContenderShelf {
  readonly take: (signature: string, now: number) => ShelvedSession | undefined
  readonly shelve: (signature: string, session: ShelvedSession, scheduler: SchedulerLike) => void
}

/**
 * The shelf a contender of `client` uses.
 *
 * @example
 * ```ts
 * const shelf = contenderShelf(borrowed.client, { hold: () => borrowDefaultClient().release })
 * ```
 * @param client - The contender's client.
 * @param options - The shelf (default the process's), and what a shelved session holds while it
 *   stays (the default client).
 * @returns The contender's view of it.
 */
export function contenderShelf(
  client: ConsulClient,
  options: { readonly shelf?: SessionShelf; readonly hold?: () => () => void } = {},
): ContenderShelf {
  const shelf = options.shelf ?? processShelf
  return {
    take: (signature, now) => shelf.take(client, signature, now),
    shelve: (signature, session, scheduler) =>
      void shelf.shelve(client, signature, session, { scheduler, hold: options.hold }),
  }
}

/** A timer of `ms` on `scheduler`: unreferenced on the real clock, on the scheduler otherwise. */
function lingerTimer(scheduler: SchedulerLike, ms: number, run: () => void): () => void {
  if (scheduler === asyncScheduler) {
    const timer = setTimeout(run, ms)
    timer.unref()
    return () => clearTimeout(timer)
  }
  // Virtual time (tests): the scheduler's own timer.
  const subscription = scheduler.schedule(run, ms)
  return () => subscription.unsubscribe()
}

function once(run: () => void): () => void {
  let done = false
  return () => {
    if (done) return
    done = true
    run()
  }
}
