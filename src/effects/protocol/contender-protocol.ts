import type * as E from 'fp-ts/lib/Either.js'
import type { Observable, SchedulerLike } from 'rxjs'
import type { ConsulClient } from '../../consul/client-api.js'
import type { ConsulError } from '../../base/consul-error.js'
import type { KVEntry, KVSnapshot } from '../../base/kv-snapshot.js'
import type {
  ContenderAction,
  DecideStep,
  RefenceStep,
  SharedGrace,
} from '../../core/contender/contender-state-model.js'
import type { ReleaseOutcome } from '../../core/release/release-slot-plan.js'
import type { ViewCache } from '../../core/semaphore/view-cache.js'
import type { ContenderEvent, Decision, PrefixProblem } from '../../core/events.js'
import type { WatchTarget } from '../../core/semaphore/watch-target.js'
import type { FreshLock } from '../fresh-lock.js'
import type { SemaphoreError } from '../../base/semaphore-error.js'

/** What a protocol knows of one member: its prefix, client and the prefix's shared cache. */
export interface ProtocolMember {
  readonly client: ConsulClient
  readonly prefix: string
  readonly limit: number
  readonly followLimit: boolean
  readonly value: string
  readonly fairness: boolean
  /**
   * A contender that tries once (`tryAcquire`, `tryLead`): it keeps no place in a leader lock's
   * queue. Default false.
   */
  readonly tryOnce?: boolean | undefined
  readonly scheduler: SchedulerLike
  /** The views of the prefix's snapshots, shared by the contenders of the prefix. */
  readonly cache: ViewCache
  /**
   * The freshest `.lock` the process knows on the prefix (its coordinator's): the semaphore's
   * writes tell it their answers and build on it.
   */
  readonly fresh?: FreshLock | undefined
  /** The companions of one of its sessions (`ContenderStateOptions.companionsOf`). */
  readonly companionsOf: (session: string) => readonly string[]
  /**
   * Whether one of its sessions' own key may be in Consul before the performer's first write of
   * it: false only for a session the member created and did not join with. Default true.
   */
  readonly keyMayExist?: ((session: string) => boolean) | undefined
  /**
   * Whether the prefix's watch long-polls only this member's key now
   * (`PrefixCoordinator.watchesOwnKey`): its last snapshot may then be seconds old. Default false.
   */
  readonly watchesOwnKey?: (() => boolean) | undefined
  /**
   * Whether what the process knows of `.lock` is as fresh as a long poll makes it: while this
   * member watches its own key as a holder, its `.lock` poll has been out since its last answer
   * (`PrefixCoordinator.knowsCurrentLock`). Default false.
   */
  readonly knowsCurrentLock?: (() => boolean) | undefined
  /**
   * Tells the prefix's coordinator that this member's acquisition of a leader lock's `.lock` is
   * on its way (`PrefixCoordinator.acquiring`); the function returned tells it the answer: the
   * prefix as of the committed write, or undefined. Default: nobody is told.
   */
  readonly acquiring?: (() => (answered: KVSnapshot | undefined) => void) | undefined
}

/**
 * Makes the writes the core asks for, for one session: each action's events, fed back into the
 * core; the Observable is cancelled (with its request) when the core asks for something else, and
 * errors with a permanent failure.
 */
export type Performer = (action: ContenderAction) => Observable<ContenderEvent>

/** What a performer of either protocol is made with: one session's writes under one prefix. */
export interface PerformerOptions {
  readonly client: ConsulClient
  readonly prefix: string
  readonly session: string
  readonly scheduler?: SchedulerLike | undefined
  /** Source of the jitter of the write retries (and waits), in [0, 1); default Math.random. */
  readonly random?: (() => number) | undefined
  /**
   * Whether the session's own key may be in Consul before its first write (`keyMayExist` of the
   * member): every write of it is then made only where it is absent. Default true.
   */
  readonly keyMayExist?: boolean | undefined
}

/**
 * What makes a contender a semaphore contender (`semaphoreProtocol`) or a leader-election contender
 * (`leaderKeyProtocol`). Everything else (the session and its lease, the prefix's one watch, the core's
 * state machine, retries, starting over with a new session, release) is the prefix coordinator's
 * and its members' (`coordinator/`), the same for both.
 */
export interface ContenderProtocol {
  /** Tells coordinators apart in the registry: a prefix has one coordinator per protocol. */
  readonly kind: 'semaphore' | 'lock'
  /**
   * Behavior of the sessions: 'delete' for the semaphore (its contender keys go with the session),
   * 'release' for the lock, as Go's `Lock` does (the key and its value stay, the holder is cleared).
   */
  readonly behavior: 'release' | 'delete'
  /**
   * What the process long-polls next for its members of the prefix, from their decisions on the
   * last snapshot (`alone`: the session of its only member, when it may watch its own key): the
   * semaphore's `watchTarget`, the leader lock's `leaderWatchTarget`.
   */
  readonly watchTarget: (
    snapshot: KVSnapshot,
    prefix: string,
    decisions: Iterable<Decision | undefined>,
    alone: string | undefined,
  ) => WatchTarget
  /**
   * The keys of dead waiters (their session ended) that this process removes, by a delete on
   * their ModifyIndex, from its members' decisions on the last snapshot: the leader lock's
   * (`deadWaitersToRemove`). The semaphore's sessions have behavior `delete`: Consul removes
   * their keys.
   */
  readonly sweep?: (
    snapshot: KVSnapshot,
    prefix: string,
    decisions: Iterable<Decision | undefined>,
  ) => readonly KVEntry[]
  /**
   * Whether a member may join in one transaction on a prefix whose `.lock` the client last saw
   * as `lock` (null: none): the join writes its key before it reads `.lock`, and nothing may be
   * written under a prefix whose `.lock` the member may not write.
   */
  readonly joinsOn?: (lock: KVEntry | null, member: ProtocolMember) => boolean
  /** The core's decide step for a contender. */
  readonly decide: (contender: ProtocolMember) => DecideStep
  /** The fairness grace a contender shares with the others of its prefix, if any. */
  readonly sharedGrace: (contender: ProtocolMember) => SharedGrace | undefined
  /**
   * The performer of one session's writes (made once per session, so it may keep per-session
   * state, such as a backoff): `semaphorePerformer` or `leaderKeyPerformer`, of one shape.
   */
  readonly performer: (contender: ProtocolMember, session: string) => Performer
  /**
   * Joins the queue in one transaction (its key, then the prefix), when the coordinator allows it
   * (the process's only contender, on a prefix whose `.lock` it has seen to be writable): the
   * prefix as of its own write, or undefined to start as the others do.
   */
  readonly join?: (contender: ProtocolMember, session: string) => Observable<KVSnapshot | undefined>
  /**
   * The re-fence between two jobs of a process (`RefenceStep`): the semaphore's; the leader key has
   * none (a `refence` input then changes nothing).
   */
  readonly refence?: (contender: ProtocolMember) => RefenceStep
  /**
   * Gives the slot back and destroys the session (never rejects: errors are Lefts). `lastSeen` is
   * the last snapshot the contender decided on, a hint that may save a read. A semaphore's release
   * answers how the slot went back (a hand-off, for the telemetry); a lock's, nothing.
   * `keepSession` asks to keep the session after a clean release, for another contender: a
   * semaphore's release then ends without the destroy and its outcome says `sessionKept`; a lock's
   * destroys it all the same. 'adopted': the session is not the contender's
   * (`ContenderOptions.session`) and is never destroyed, by either protocol, whatever the outcome.
   * 'gone': Consul has ended the session; a semaphore's release gives back the slot `.lock` still
   * lists under it (handing it on) and destroys nothing; a lock's has nothing to do (Consul
   * released the key with the session).
   */
  readonly release: (
    contender: ProtocolMember,
    session: string,
    lastSeen: KVSnapshot | undefined,
    keepSession?: boolean | 'adopted' | 'gone',
  ) => Promise<E.Either<ConsulError, ReleaseOutcome | void>>
  /** The public error for a prefix problem the core found. */
  readonly problemError: (problem: PrefixProblem) => SemaphoreError
}
