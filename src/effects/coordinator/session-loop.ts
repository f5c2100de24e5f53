import * as E from 'fp-ts/lib/Either.js'
import type { SchedulerLike, Subscription } from 'rxjs'
import type { ConsulClient, SessionCreateOptions } from '../../consul/client-api.js'
import type { ConsulError } from '../../base/consul-error.js'
import { BACKOFF, backoffDelay } from '../../base/backoff.js'
import { judgeFailure } from '../../base/failure-verdict.js'
import { isConsulError } from '../../base/failure-kinds.js'
import { SemaphoreError, toSemaphoreError } from '../../base/semaphore-error.js'
import type { ResolvedContenderOptions } from '../../options/contender-options.js'
import type { ContenderProtocol } from '../protocol/contender-protocol.js'
import { destroySession } from '../release/destroy-session.js'
import { sessionSignature, type ContenderShelf } from '../session-shelf.js'
import { unreachableError } from './unreachable-error.js'

/**
 * How long a contender that ends (closed, stopped, failed) waits for the answer to the session
 * request it has in flight, to destroy the session it makes (ms): as long as a client waits for
 * any answer by default (`requestTimeoutMs`). Past it the request is aborted, and a session
 * Consul may have made regardless expires by its TTL.
 */
export const ABANDONED_SESSION_WAIT_MS = 10_000

/** What a session loop needs: the contender's options, its client, protocol and clock. */
export interface SessionLoopOptions extends ResolvedContenderOptions {
  readonly client: ConsulClient
  readonly protocol: ContenderProtocol
  readonly scheduler: SchedulerLike
  readonly random: () => number
  /** Receives the destroy of a session whose request was out when the loop stopped. */
  readonly onRelease: (release: Promise<E.Either<ConsulError, void>>) => void
  /**
   * Where idle sessions of the process wait: one made with the same options is taken from it
   * instead of a create, and `shelve` puts one back.
   */
  readonly shelf?: ContenderShelf | undefined
}

/** Where a session loop reports. */
export interface SessionListener {
  /** A session request is being sent (the first, or a retry after its backoff). */
  readonly onCreating: () => void
  /**
   * A session was made (or an adopted one answered its first renewal); its create (or that
   * renewal) was sent at `sentAt` (scheduler ms), and it runs on a TTL of `ttlMs`.
   */
  readonly onSession: (session: string, sentAt: number, ttlMs: number) => void
  /** A transient failure: a new session is asked for after a backoff. */
  readonly onRetrying: (error: ConsulError) => void
  /** Whether a transient failure is retried now (a try-once contender that never held: no). */
  readonly mayRetry: () => boolean
  /** No session will come: a permanent failure, or none within the start-up timeout. */
  readonly onGiveUp: (error: SemaphoreError) => void
}

/** A session request in flight: its answer, and how to abort it. */
interface CreateCall {
  readonly controller: AbortController
  readonly answer: Promise<E.Either<ConsulError | SemaphoreError, CreatedSession>>
  readonly sentAt: number
}

/** A session ready to run: its id and TTL. */
interface CreatedSession {
  readonly session: string
  readonly ttlMs: number
}

/**
 * The sessions of one contender, apart from what it does with them: makes one, retries a
 * transient failure with the `session` backoff, and gives up on a permanent failure (`judgeFailure`:
 * also the ACL_FAILURES_BEFORE_PERMANENT-th ACL 500 in a row), or when no session came within
 * `startupTimeoutMs` (`Unreachable`). A request still waiting for a connection of a busy client
 * at the start-up timeout, while the agent answers that client, is waited for: only its failure
 * gives up. A request out when the loop stops is awaited in the background (at most
 * ABANDONED_SESSION_WAIT_MS) and the session it makes destroyed (`abandon`). With a shelf, a
 * session kept there with the same options is taken instead of a create (answered as a create
 * is, a microtask later, with the time its lease runs from).
 *
 * An adopted session (`ContenderOptions.session`) is never created, shelved or destroyed: its
 * first renewal stands for the create (answering its TTL), a retry renews it again, and a request
 * out when the loop stops is only aborted. Consul's refusal of a session for a critical or unknown
 * service check (`serviceChecks`) gives up at once, with what to do.
 *
 * ```
 * start ─► create ──ok──► onSession          run ends: again() ─► (backoff) ─► create
 *            │ transient: onRetrying ─► (backoff) ─► create
 *            └ permanent / start-up timeout: onGiveUp
 * ```
 *
 * @example
 * const loop = new SessionLoop(options, { onSession: begin, onRetrying: say, onGiveUp: fail })
 * loop.start()
 */
export class SessionLoop {
  private createCall: CreateCall | undefined
  private retryTimer: Subscription | undefined
  private startupTimer: Subscription | undefined
  /** The start-up timeout passed while a request waited for a connection (see the class). */
  private overdue = false
  private lastFailure: ConsulError | undefined
  /** Failures in a row (reset by `succeeded`), and ACL 500s among the last of them. */
  private attempt = 0
  private aclInRow = 0
  /** What every session of this loop is created with (without the abort signal). */
  private readonly request: SessionCreateOptions
  /** The request's signature on the shelf. */
  private readonly signature: string

  constructor(
    private readonly options: SessionLoopOptions,
    private readonly listener: SessionListener,
  ) {
    this.request = {
      name: options.sessionName,
      ttl: options.ttl,
      behavior: options.protocol.behavior,
      ...(options.lockDelay !== undefined ? { lockDelay: options.lockDelay } : {}),
      ...(options.checks !== undefined ? { nodeChecks: options.checks } : {}),
      ...(options.serviceChecks !== undefined ? { serviceChecks: options.serviceChecks } : {}),
    }
    this.signature = sessionSignature(this.request)
  }

  /** Asks for the first session, and starts counting the start-up timeout. */
  start(): void {
    const { client, startupTimeoutMs, scheduler } = this.options
    const answers = (): number => client.network?.answers?.() ?? 0
    const answersBefore = answers()
    // The start-up timeout is for a first contact: a client the agent has answered before (a
    // process's later contenders, the next job of a pool) waits out an outage instead.
    if (Number.isFinite(startupTimeoutMs) && answersBefore === 0) {
      this.startupTimer = scheduler.schedule(() => {
        this.startupTimer = undefined
        // The agent answered this client meanwhile, and an attempt is still out: it waits its
        // turn for a connection of a busy client (thousands of contenders starting at once).
        if (this.createCall !== undefined && answers() > answersBefore) this.overdue = true
        else this.giveUpUnreachable()
      }, startupTimeoutMs)
    }
    this.create()
  }

  /** The last session is gone: asks for a new one after the session backoff's first delay. */
  again(): void {
    this.retryAfter(backoffDelay(BACKOFF.session, 1, { random: this.options.random }))
  }

  /** A session's run went well: the failures in a row start over. */
  succeeded(): void {
    this.attempt = 0
    this.aclInRow = 0
  }

  /**
   * A failure of a session's creation or of its run: retried when transient (and the listener
   * `mayRetry`), otherwise the loop gives up.
   */
  failed(error: unknown): void {
    // An adopted session that is gone or has no TTL, or a check Consul will not tie a session to.
    if (error instanceof SemaphoreError) return this.listener.onGiveUp(error)
    const refused = checkRefusal(error, this.options.serviceChecks)
    if (refused !== undefined) return this.listener.onGiveUp(refused)
    const verdict = judgeFailure(error, this.aclInRow)
    if (verdict.verdict === 'permanent' || !this.listener.mayRetry()) {
      return this.listener.onGiveUp(
        toSemaphoreError(
          verdict.verdict === 'permanent' ? verdict.error : error,
          this.options.prefix,
        ),
      )
    }
    // A retry verdict is given only for a transient ConsulError.
    const transient = error as ConsulError
    this.lastFailure = transient
    if (this.overdue) return this.giveUpUnreachable()
    this.aclInRow = verdict.aclInRow
    this.attempt++
    this.listener.onRetrying(transient)
    const { random } = this.options
    this.retryAfter(backoffDelay(BACKOFF.session, this.attempt, { error: transient, random }))
  }

  /**
   * Puts a session of this loop, given up cleanly (Consul holds nothing of it but the session),
   * on the shelf for the next contender; without a shelf, does nothing.
   *
   * @param renewal - When its last renewal (or create) was sent, and its TTL.
   */
  shelve(session: string, renewal: { readonly sentAt: number; readonly ttlMs: number }): void {
    // An adopted session is its owner's: it never goes on the shelf, for another to take.
    if (this.options.adoptedSession !== undefined) return
    this.options.shelf?.shelve(this.signature, { session, ...renewal }, this.options.scheduler)
  }

  /** Stops every timer; a request in flight is abandoned (its session destroyed once made). */
  stop(): void {
    this.startupTimer?.unsubscribe()
    this.startupTimer = undefined
    this.retryTimer?.unsubscribe()
    this.retryTimer = undefined
    this.abandon()
  }

  private create(): void {
    const { client, scheduler, shelf, ttlMs, adoptedSession } = this.options
    this.listener.onCreating()
    const controller = new AbortController()
    const created = (id: E.Either<ConsulError, string>) =>
      E.map((session: string): CreatedSession => ({ session, ttlMs }))(id)
    // An adopted session is never taken from the shelf, nor created: its first renewal says it
    // exists, and its TTL.
    const shelved =
      adoptedSession === undefined ? shelf?.take(this.signature, scheduler.now()) : undefined
    const call: CreateCall =
      adoptedSession !== undefined
        ? {
            controller,
            answer: adopt(client, adoptedSession, controller.signal),
            sentAt: scheduler.now(),
          }
        : shelved !== undefined
          ? {
              controller,
              answer: Promise.resolve(E.right({ session: shelved.session, ttlMs })),
              sentAt: shelved.sentAt,
            }
          : {
              controller,
              answer: client.session
                .create({ ...this.request, signal: controller.signal })()
                .then(created),
              sentAt: scheduler.now(),
            }
    const { answer } = call
    this.createCall = call
    void answer.then((created) => {
      if (this.createCall !== call) return
      this.createCall = undefined
      if (E.isLeft(created)) return this.failed(created.left)
      this.startupTimer?.unsubscribe()
      this.startupTimer = undefined
      this.overdue = false
      this.listener.onSession(created.right.session, call.sentAt, created.right.ttlMs)
    })
  }

  private retryAfter(delayMs: number): void {
    this.retryTimer = this.options.scheduler.schedule(() => {
      this.retryTimer = undefined
      this.create()
    }, delayMs)
  }

  /** Gives up: no session within the start-up timeout, with the last failure seen. */
  private giveUpUnreachable(): void {
    const { client, startupTimeoutMs } = this.options
    this.listener.onGiveUp(unreachableError(client, startupTimeoutMs, this.lastFailure))
  }

  /**
   * The session request in flight when the loop stops: awaited in the background (for at most
   * ABANDONED_SESSION_WAIT_MS), and the session it makes destroyed, through `onRelease`, so that
   * close() resolves only once Consul is clean. Aborted instead, a request already sent made a
   * session all the same, left to its TTL. A request that fails made none (or none this contender
   * can know of: that one, too, expires by its TTL).
   */
  private abandon(): void {
    const call = this.createCall
    if (call === undefined) return
    this.createCall = undefined
    const { client, scheduler, random, adoptedSession } = this.options
    // An adopted session is never destroyed: its renewal in flight only needs stopping.
    if (adoptedSession !== undefined) return call.controller.abort()
    const bound = scheduler.schedule(() => call.controller.abort(), ABANDONED_SESSION_WAIT_MS)
    this.options.onRelease(
      call.answer.then((created) => {
        bound.unsubscribe()
        if (E.isLeft(created)) return E.right<ConsulError, void>(undefined)
        return destroySession({ client, session: created.right.session, scheduler, random })
      }),
    )
  }
}

/**
 * Takes an existing session over (`ContenderOptions.session`): one renewal, which says that it
 * exists and what TTL it runs on, and starts its lease afresh. A session that does not exist is
 * SessionGone; one without a TTL is refused, since the lease deadline counts from it.
 */
async function adopt(
  client: ConsulClient,
  session: string,
  signal: AbortSignal,
): Promise<E.Either<ConsulError | SemaphoreError, CreatedSession>> {
  const renewed = await client.session.renew(session, { signal })()
  if (E.isLeft(renewed)) return renewed
  const info = renewed.right
  if (info === null) return E.left(adoptedSessionGone(session, 'does not exist'))
  if (info.ttlMs === undefined) {
    return E.left(
      new SemaphoreError(
        'InvalidOptions',
        `option session: session ${session} has no TTL, so no lease deadline can be counted for ` +
          'it and holding$ could not be kept safe: give a session created with a TTL (10s to 24h).',
      ),
    )
  }
  return E.right({ session, ttlMs: info.ttlMs })
}

/**
 * The error of a contender whose adopted session is gone (`ContenderOptions.session`): it cannot
 * make another in its place.
 *
 * @example
 * observer.error(adoptedSessionGone(session, 'ended while the contender used it'))
 * @returns SemaphoreError('SessionGone').
 */
export function adoptedSessionGone(session: string, what: string): SemaphoreError {
  return new SemaphoreError(
    'SessionGone',
    `the session given as option session (${session}) ${what} (destroyed, or expired by its ` +
      'TTL): a contender never makes a session in place of one it was given. Give it a live ' +
      'session, or leave the option out to have it make its own.',
  )
}

/**
 * A session create that Consul refused for one of the contender's service checks
 * (`serviceChecks`): a check in critical state, or one the agent does not know. Consul answers it
 * with a 500 that retrying would only repeat until the application is healthy again (or the ID is
 * fixed), so the contender fails with what to do. A refusal for a node check (`checks`:
 * serfHealth critical while the node is cut off) stays transient: it passes with the partition.
 */
function checkRefusal(
  error: unknown,
  serviceChecks: readonly { readonly id: string }[] | undefined,
): SemaphoreError | undefined {
  if (serviceChecks === undefined) return undefined
  if (!isConsulError(error) || error._tag !== 'ServerError') return undefined
  const critical = /Check '(.*)' is in critical state/.exec(error.body)
  const missing = /Missing (?:service )?check '(.*)' registration/.exec(error.body)
  const id = critical?.[1] ?? missing?.[1]
  if (id === undefined || !serviceChecks.some((check) => check.id === id)) return undefined
  const why =
    critical !== null
      ? `its service check '${id}' is critical, and Consul makes no session tied to a failing check: ` +
        'the contender can run once the check passes'
      : `no check '${id}' is registered on the agent's node: give the ID of a check ` +
        'the agent has (`consul catalog` or GET /v1/agent/checks lists them), or register it first'
  return new SemaphoreError(
    'Consul',
    `Consul refused to create the session (${error.body}): ${why}.`,
    {
      cause: error,
    },
  )
}
