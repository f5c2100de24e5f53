import type { ConsulError } from '../../base/consul-error.js'
import type { KVSnapshot } from '../../base/kv-snapshot.js'
import { BACKOFF, backoffDelay } from '../../base/backoff.js'
import { judgeFailure } from '../../base/failure-verdict.js'
import type { PrefixProblem } from '../events.js'
import { holdBackUntil } from '../semaphore/hold-back.js'
import { decideByRank } from './decide-patiently.js'
import { serviceCheckRefusal, type CheckRefusal } from './check-refusal.js'
import type { ContenderInput, DecidedSnapshot } from './contender-input.js'
import {
  initialContenderState,
  type ContenderAction,
  type ContenderState,
  type ContenderStateOptions,
} from './contender-state-model.js'
import { contenderStep, type ContenderCommand } from './contender-step.js'
import { sameContenderState } from './same-contender-state.js'

/**
 * What a contender is, for its whole life: asking for a session, waiting to ask again, running a
 * session, releasing it after close(), or done. Each phase carries only its own fields; `state` is
 * the core's state of the current (or last) session, the base of what the contender says.
 *
 * ```
 * start ─► creating ──session──► running ──close()──► closing ──end of run──► done
 *             ▲  │                  │
 *             │  │ transient        │ session gone, transient failure
 *             │  ▼                  ▼
 *             └─ between ◄──────────┘       (retry timer: creating again)
 * ```
 *
 * `done` also follows a permanent failure, a prefix problem, the start-up timeout, a try-once
 * answer, a close() while no session runs, and stop().
 */
export type ContenderLife = Unstarted | Creating | Between | Running | Closing | Done

/** Made, not started: `start` asks for the first session. */
export interface Unstarted {
  readonly phase: 'unstarted'
}

/** Before the first session and between sessions: what the start-up timeout and retries count. */
interface Seeking {
  readonly state: ContenderState
  /** Still true for a try-once contender that has not held (`tryAcquire`, `tryLead`). */
  readonly tryOnce: boolean
  /** Failures in a row, and ACL 500s among the last of them (`judgeFailure`). */
  readonly attempt: number
  readonly aclInRow: number
  /** The last transient failure: what the start-up timeout's error reports. */
  readonly lastFailure: ConsulError | undefined
  /** The client's answers when the contender started, while the start-up timeout counts. */
  readonly startupFrom: number | undefined
}

/** A session request is out (created, taken from the shelf, or an adopted session's renewal). */
export interface Creating extends Seeking {
  readonly phase: 'creating'
  /** The start-up timeout passed while this request waited for a busy client's connection. */
  readonly overdue: boolean
}

/** Waiting out a backoff before asking for a session again. */
export interface Between extends Seeking {
  readonly phase: 'between'
}

/** One session's run: its lease, its watch, its writes (`contenderStep` decides them). */
export interface Run {
  readonly session: string
  readonly leaseMarginMs: number | undefined
  /** When the last renewal (or the create) was sent, and its TTL: a kept session's lease. */
  readonly renewal: { readonly sentAt: number; readonly ttlMs: number }
  /** A join is out: snapshots come only once it answered. */
  readonly joining: boolean
  /** The index of the join's answer: older snapshots are not stepped on. */
  readonly seedIndex: bigint | undefined
  /**
   * Until when the port holds back the snapshots that leave this waiter far back
   * (`holdBackUntil` of the last one it stepped on); undefined: none is held back.
   */
  readonly holdUntil: number | undefined
}

export interface Running {
  readonly phase: 'running'
  readonly state: ContenderState
  readonly tryOnce: boolean
  readonly run: Run
}

/** close() asked the run to release; the run's end completes the contender. */
export interface Closing extends Omit<Running, 'phase'> {
  readonly phase: 'closing'
}

export interface Done {
  readonly phase: 'done'
}

/** A session ready to run: its ID, its TTL, and when the request its lease runs from was sent. */
export interface SessionGrant {
  readonly session: string
  readonly ttlMs: number
  readonly sentAt: number
}

/** Where a session comes from: an adopted session's renewal, the process's shelf, or a create. */
export type SessionSource = 'adopt' | 'shelf' | 'create'

/** The timers of a contender; setting one replaces it. */
export type LifeTimer = 'startup' | 'retry' | 'wake'

/** Why a contender gave up: the interpreter words each as a SemaphoreError. */
export type GiveUp =
  | { readonly why: 'failed'; readonly error: unknown }
  | { readonly why: 'unreachable'; readonly last: ConsulError | undefined }
  | { readonly why: 'problem'; readonly problem: PrefixProblem }
  | { readonly why: 'check-refused'; readonly refusal: CheckRefusal }
  | { readonly why: 'lease-margin'; readonly session: string; readonly ttlMs: number }
  | { readonly why: 'adopted-gone'; readonly session: string }

/** What the release of a run keeps and what it starts from. */
export interface RunRelease {
  /**
   * Keep the session (on the shelf), destroy it, leave an adopted one to its owner, or, 'gone',
   * give back the slot of a session Consul has ended (nothing left to destroy).
   */
  readonly keep: boolean | 'adopted' | 'gone'
  readonly snapshot: KVSnapshot | undefined
  readonly renewal: Run['renewal']
}

/**
 * What the interpreter does after a step, in order.
 *
 * - `create-session`: ask for a session from `from`; answer `session` or `session-failed`. A
 *   request out when the contender finishes is abandoned (the session it makes destroyed);
 * - `lease`: start renewing the run's session (its events are inputs; a permanent failure is a
 *   `run-failed`); `join`: the one-transaction join (answer `joined`); `follow`: the prefix's
 *   snapshots, decided (inputs), from the join's seed;
 * - `write` / `cancel-write`: as `contenderStep` asks;
 * - `timer`: set one named timer for `at` (undefined clears it); it fires as `<name>-due`, or
 *   `wake`;
 * - `hold-back`: until `until` (undefined: from now on no more), the port keeps back the snapshots
 *   that leave this waiter far back (`holdsBack`) and, if it kept any, hands the last one to the
 *   machine at `until` (`refresh-due`); a new `hold-back`, a snapshot that reaches the machine, and
 *   the end of the run drop what it kept, and its refresh with it. The machine takes no step for a
 *   snapshot held back: a waiter far back costs one step per refresh, none while the prefix is
 *   quiet;
 * - `end-run`: stop the run's lease, watch (with its refresh), join, write and wake; then release
 *   as given;
 * - `emit`: the state its observers hear; `stepped`: what the telemetry records of each step;
 * - `finish`: nothing runs any more; tell the observer (unless `quiet`).
 */
export type LifeCommand =
  | { readonly type: 'create-session'; readonly from: SessionSource }
  | ({ readonly type: 'lease'; readonly leaseMarginMs: number | undefined } & SessionGrant)
  | { readonly type: 'join'; readonly session: string }
  | { readonly type: 'follow'; readonly session: string; readonly seed: KVSnapshot | undefined }
  | { readonly type: 'write'; readonly session: string; readonly action: ContenderAction }
  | { readonly type: 'cancel-write' }
  | { readonly type: 'timer'; readonly name: LifeTimer; readonly at: number | undefined }
  | { readonly type: 'hold-back'; readonly until: number | undefined }
  | { readonly type: 'end-run'; readonly session: string; readonly release: RunRelease | false }
  | { readonly type: 'emit'; readonly state: ContenderState }
  | { readonly type: 'stepped'; readonly input: ContenderInput; readonly state: ContenderState }
  | {
      readonly type: 'finish'
      readonly outcome: 'closed' | 'refused' | GiveUp
      readonly quiet: boolean
    }

/** What the interpreter feeds the machine: its own calls and answers, and a run's inputs. */
export type LifeInput =
  | { readonly type: 'start'; readonly answers: number }
  | ({
      readonly type: 'session'
      /** The coordinator lets this contender join in one transaction (`mayJoin`). */
      readonly mayJoin: boolean
    } & SessionGrant)
  | { readonly type: 'session-failed'; readonly error: unknown }
  | { readonly type: 'startup-due'; readonly answers: number }
  | { readonly type: 'retry-due' }
  | { readonly type: 'refresh-due'; readonly held: DecidedSnapshot }
  | { readonly type: 'joined'; readonly seed: KVSnapshot | undefined }
  | { readonly type: 'run-failed'; readonly error: unknown }
  | { readonly type: 'close' }
  | { readonly type: 'stop' }
  | Exclude<ContenderInput, { readonly type: 'session-created' | 'release-requested' }>

/** The inputs that only a session's run steps on. */
type RunInput = Exclude<
  LifeInput,
  {
    readonly type:
      | 'start'
      | 'session'
      | 'session-failed'
      | 'startup-due'
      | 'retry-due'
      | 'close'
      | 'stop'
      | 'refence'
  }
>

/** The contender's options that the machine reads. */
export interface LifeOptions {
  /** The per-session step's options (`tryOnce` is the life's own). */
  readonly step: Omit<ContenderStateOptions, 'tryOnce'>
  readonly tryOnce: boolean
  /** The session given to take over (`ContenderOptions.session`), never created nor destroyed. */
  readonly adoptedSession: string | undefined
  /** Sessions are taken from, and kept on, the process's shelf (a job pool's worker). */
  readonly shelf: boolean
  /** A margin as a fraction of the TTL, applied to an adopted session's own TTL. */
  readonly leaseMarginRatio: number | undefined
  readonly startupTimeoutMs: number
  readonly serviceChecks: readonly { readonly id: string }[] | undefined
  /** The protocol joins in one transaction (`ContenderProtocol.join`). */
  readonly joins: boolean
  /** The protocol holds back snapshots that change nothing for a waiter far back. */
  readonly herdFree: boolean
  /** How often a waiter far back steps on a snapshot held back from it (ms). */
  readonly refreshMs: number
  /** The jitter of the session retries, in [0, 1). */
  readonly random: () => number
}

/** The machine before `start`. */
export const unstarted: ContenderLife = { phase: 'unstarted' }

/** One step of the machine: the life after an input, and what to do about it. */
export interface LifeStep {
  readonly life: ContenderLife
  readonly commands: readonly LifeCommand[]
}

/**
 * A contender's whole life as one pure step: sessions and their retries, the start-up timeout, the
 * verdict on each failure, each run (through `contenderStep`), the stale and held-back snapshots,
 * what a release keeps, and how the contender ends. The interpreter carries out the commands.
 *
 * @example
 * const { life, commands } = lifeStep(unstarted, { type: 'start', answers: 0 }, now, options)
 * // commands: [{ type: 'timer', name: 'startup', at: now + 15000 }, { type: 'create-session', from: 'create' }]
 * @param life - The life before the input.
 * @param input - What happened.
 * @param now - Scheduler time of the input.
 * @param options - The contender's options.
 * @returns The life after it, and the commands to carry out.
 */
export function lifeStep(
  life: ContenderLife,
  input: LifeInput,
  now: number,
  options: LifeOptions,
): LifeStep {
  const commands: LifeCommand[] = []
  const next = new LifeSteps(options, now, commands).apply(life, input)
  return { life: next, commands }
}

/** One step's work: the rules of each input, writing into the step's command list. */
class LifeSteps {
  constructor(
    private readonly options: LifeOptions,
    private readonly now: number,
    private readonly commands: LifeCommand[],
  ) {}

  apply(life: ContenderLife, input: LifeInput): ContenderLife {
    if (life.phase === 'done') return life
    switch (input.type) {
      case 'start':
        return this.start(life, input.answers)
      case 'session':
        return life.phase === 'creating' ? this.begin(life, input) : life
      case 'session-failed':
        return life.phase === 'creating' ? this.failed(life, input.error) : life
      case 'startup-due':
        return this.startupDue(life, input.answers)
      case 'retry-due':
        return life.phase === 'between' ? this.create({ ...life, phase: 'creating' }) : life
      case 'close':
        if (life.phase === 'running') {
          return this.step(lifeOf('closing', life.state, life.tryOnce, life.run), {
            type: 'release-requested',
          })
        }
        return life.phase === 'closing' ? life : this.finish('closed', false)
      case 'refence':
        return life.phase === 'running' ? this.step(life, input) : life
      case 'stop':
        if (life.phase === 'running' || life.phase === 'closing') this.endRun(life, true)
        return this.finish('closed', true)
      default:
        if (life.phase !== 'running' && life.phase !== 'closing') return life
        return this.runInput(life, input)
    }
  }

  private start(life: Exclude<ContenderLife, Done>, answers: number): ContenderLife {
    if (life.phase !== 'unstarted') return life
    const { startupTimeoutMs, tryOnce } = this.options
    // The start-up timeout is for a first contact: a client the agent has answered before (a
    // process's later contenders, the next job of a pool) waits out an outage instead.
    const counts = Number.isFinite(startupTimeoutMs) && answers === 0
    if (counts) this.timer('startup', this.now + startupTimeoutMs)
    return this.create({
      phase: 'creating',
      state: initialContenderState,
      tryOnce,
      attempt: 0,
      aclInRow: 0,
      lastFailure: undefined,
      startupFrom: counts ? answers : undefined,
    })
  }

  private create(life: Omit<Creating, 'overdue'>): Creating {
    const { adoptedSession, shelf } = this.options
    const from = adoptedSession !== undefined ? 'adopt' : shelf ? 'shelf' : 'create'
    this.commands.push({ type: 'create-session', from })
    return { ...life, overdue: false }
  }

  /** A session: its run starts, with its lease, and joins the queue or follows the prefix. */
  private begin(life: Creating, input: Extract<LifeInput, { type: 'session' }>): ContenderLife {
    const { session, ttlMs, sentAt } = input
    if (life.startupFrom !== undefined) this.timer('startup', undefined)
    const leaseMarginMs = this.leaseMarginFor(ttlMs)
    if (leaseMarginMs === null) return this.finish({ why: 'lease-margin', session, ttlMs }, false)
    this.commands.push({ type: 'lease', session, ttlMs, sentAt, leaseMarginMs })
    // A new session starts with an empty state that keeps the reason of the last transition.
    const fresh: ContenderState = { ...initialContenderState, reason: life.state.reason }
    this.emit(fresh)
    const { joins, adoptedSession } = this.options
    // An adopted session does not join: its key may be there already, held, and the join's write
    // would turn it back into a waiter's; the first snapshot tells.
    const joining = joins && adoptedSession === undefined && input.mayJoin
    const run: Run = {
      session,
      leaseMarginMs,
      renewal: { sentAt, ttlMs },
      joining,
      seedIndex: undefined,
      holdUntil: undefined,
    }
    const running: Running = {
      phase: 'running',
      state: fresh,
      tryOnce: life.tryOnce,
      run,
    }
    const after = this.step(running, { type: 'session-created', session, ttlMs, sentAt })
    if (after.phase !== 'running') return after
    this.commands.push(
      joining ? { type: 'join', session } : { type: 'follow', session, seed: undefined },
    )
    return after
  }

  /**
   * The lease margin of a session of `ttlMs`: the options', or, for an adopted session and a
   * margin given as a fraction, that fraction of its own TTL; null when it is not less than the
   * TTL of an adopted session.
   */
  private leaseMarginFor(ttlMs: number): number | undefined | null {
    const { adoptedSession, leaseMarginRatio, step } = this.options
    if (adoptedSession === undefined) return step.leaseMarginMs
    const margin = leaseMarginRatio !== undefined ? leaseMarginRatio * ttlMs : step.leaseMarginMs
    return margin === undefined || margin < ttlMs ? margin : null
  }

  private runInput(life: Running | Closing, input: RunInput): ContenderLife {
    const { run } = life
    switch (input.type) {
      case 'joined':
        if (!run.joining) return life
        this.commands.push({ type: 'follow', session: run.session, seed: input.seed })
        return withRun(life, runWith(run, { joining: false, seedIndex: input.seed?.index }))
      case 'run-failed': {
        this.endRun(life, true)
        // A closed contender ends quietly: whatever failed, its user no longer listens for it.
        if (life.phase === 'closing') return this.finish('closed', false)
        return this.failed(this.seeking(life), input.error)
      }
      case 'refresh-due':
        // The end of the hold: the last snapshot held back (a hold ended or replaced since makes
        // it stale; the port drops it then, so this is only a guard).
        return run.holdUntil === undefined ? life : this.snapshot(life, input.held)
      case 'snapshot':
        return this.snapshot(life, input)
      case 'disconnected':
        // The first snapshot after a failure reaches the waiter: it reconnects.
        return this.step(this.holdBack(life, undefined), input)
      case 'session-renewed': {
        const renewal = { sentAt: input.sentAt, ttlMs: input.ttlMs }
        return this.step(withRun(life, runWith(run, { renewal })), input)
      }
      default:
        return this.step(life, input)
    }
  }

  /**
   * A snapshot that reached the waiter: nothing older than the join's answer (unless the index
   * went back). A waiter far back of a herd-free protocol then has the port hold back, until its
   * refresh, the snapshots that change nothing for it (`holdBackUntil`).
   */
  private snapshot(life: Running | Closing, input: DecidedSnapshot): ContenderLife {
    const { run } = life
    const { index } = input.snapshot
    if (run.seedIndex !== undefined && input.reset !== true && index < run.seedIndex) return life
    const decision = input.decision ?? decideByRank(input.snapshot, run.session, this.options.step)
    const decided = input.decision === decision ? input : { ...input, decision }
    const until = this.options.herdFree
      ? holdBackUntil(decision, this.now, this.options.refreshMs)
      : undefined
    return this.step(this.holdBack(life, until), decided)
  }

  /** A new hold (or none): the port drops a snapshot held back under the last one, and its refresh. */
  private holdBack<L extends Running | Closing>(life: L, until: number | undefined): L {
    const { run } = life
    if (until === run.holdUntil) return life
    this.commands.push({ type: 'hold-back', until })
    return withRun(life, runWith(run, { holdUntil: until }))
  }

  /** Steps the run on one input (`contenderStep`) and turns its commands into the life's. */
  private step(life: Running | Closing, input: ContenderInput): ContenderLife {
    const stepOptions = stepOptionsOf(this.options, life.run.leaseMarginMs, life.tryOnce)
    const { state, commands } = contenderStep(life.state, input, this.now, stepOptions)
    this.commands.push({ type: 'stepped', input, state })
    if (!sameContenderState(life.state, state)) this.emit(state)
    // Once it held, a try-once contender behaves as any contender.
    const after = lifeOf(life.phase, state, life.tryOnce && !state.holding, life.run)
    for (const command of commands) {
      const ended = this.runCommand(after, command)
      if (ended !== undefined) return ended
    }
    return after
  }

  private runCommand(life: Running | Closing, command: ContenderCommand): ContenderLife | void {
    switch (command.type) {
      case 'write':
        this.commands.push({ type: 'write', session: life.run.session, action: command.action })
        return
      case 'cancel-write':
        this.commands.push(command)
        return
      case 'wake':
        return this.timer('wake', command.at)
      case 'end':
        return this.ended(life, command)
    }
  }

  /** The step ended the run: release or not as it says, then what follows its reason. */
  private ended(
    life: Running | Closing,
    end: Extract<ContenderCommand, { type: 'end' }>,
  ): ContenderLife {
    this.endRun(life, end.release, end.why === 'session-gone')
    const { problem } = life.state
    if (end.why === 'problem' && problem !== undefined) {
      return this.finish({ why: 'problem', problem }, false, life.state)
    }
    // Released (only close() asks), refused (a try-once contender's answer: not held), or, for a
    // try-once contender that has not held yet, a lost session: nothing follows.
    if (life.phase === 'closing') return this.finish('closed', false)
    const { adoptedSession, random } = this.options
    // No session is made in place of an adopted one.
    if (end.why === 'session-gone' && adoptedSession !== undefined) {
      return this.finish({ why: 'adopted-gone', session: adoptedSession }, false, life.state)
    }
    if (end.why !== 'session-gone' || life.tryOnce) return this.finish('refused', false)
    this.timer('retry', this.now + backoffDelay(BACKOFF.session, 1, { random }))
    return { ...this.seeking(life), phase: 'between' }
  }

  /**
   * Ends a run: its lease, watch and writes stop, and, when asked, it releases. Only a contender
   * that keeps its sessions on a shelf, closed, keeps it; a failed or stopped one destroys it, and
   * an adopted session is its owner's. A session asked to give its slot back is destroyed too:
   * taken from the shelf, it would contend again under the name the request gives. A session
   * Consul has ended (`gone`) is neither kept nor destroyed: only its slot is given back.
   */
  private endRun(life: Running | Closing, release: boolean, gone = false): void {
    const { adoptedSession, shelf } = this.options
    const { run, state } = life
    const asked = state.decision?.type === 'Held' && state.decision.revokeRequested !== undefined
    const keep = gone
      ? 'gone'
      : adoptedSession !== undefined
        ? 'adopted'
        : shelf && life.phase === 'closing' && !asked
    this.commands.push({
      type: 'end-run',
      session: run.session,
      release: release && { keep, snapshot: state.snapshot, renewal: run.renewal },
    })
  }

  /** The seeking fields after a run: the failures in a row start over with every run. */
  private seeking(life: Running | Closing): Omit<Creating, 'phase' | 'overdue'> {
    const { state, tryOnce } = life
    return {
      state,
      tryOnce,
      attempt: 0,
      aclInRow: 0,
      lastFailure: undefined,
      startupFrom: undefined,
    }
  }

  /**
   * A failure of a session's creation or of its run: retried after the session backoff when it is
   * transient; otherwise, or for a try-once contender, or once the start-up timeout passed, the
   * contender gives up. Consul's refusal of a session for a critical or unknown service check
   * gives up at once: retrying would only repeat it.
   */
  private failed(
    life: Omit<Creating, 'phase' | 'overdue'> & { overdue?: boolean },
    error: unknown,
  ) {
    const refusal = serviceCheckRefusal(error, this.options.serviceChecks)
    if (refusal !== undefined)
      return this.finish({ why: 'check-refused', refusal }, false, life.state)
    const verdict = judgeFailure(error, life.aclInRow)
    if (verdict.verdict === 'permanent') {
      return this.finish({ why: 'failed', error: verdict.error }, false, life.state)
    }
    if (life.tryOnce) return this.finish({ why: 'failed', error }, false, life.state)
    // A retry verdict is given only for a transient ConsulError.
    const lastFailure = error as ConsulError
    if (life.overdue === true) {
      return this.finish({ why: 'unreachable', last: lastFailure }, false, life.state)
    }
    const attempt = life.attempt + 1
    // While no session can be made, no run steps: this state says why it waits. A holder whose
    // run failed says false first: its release has started.
    const waiting: ContenderState = {
      ...dropHold(life.state),
      connected: false,
      write: undefined,
      lastFailure: { during: 'session', error: lastFailure },
    }
    this.emit(waiting)
    const delay = backoffDelay(BACKOFF.session, attempt, {
      error: lastFailure,
      random: this.options.random,
    })
    this.timer('retry', this.now + delay)
    return {
      phase: 'between' as const,
      state: waiting,
      tryOnce: life.tryOnce,
      attempt,
      aclInRow: verdict.aclInRow,
      lastFailure,
      startupFrom: life.startupFrom,
    }
  }

  /**
   * The start-up timeout: no session yet. A request still waiting for a connection of a busy
   * client, while the agent answers that client, is waited for (only its failure gives up).
   */
  private startupDue(life: ContenderLife, answers: number): ContenderLife {
    if (life.phase !== 'creating' && life.phase !== 'between') return life
    if (life.startupFrom === undefined) return life
    if (life.phase === 'creating' && answers > life.startupFrom) {
      return { ...life, overdue: true, startupFrom: undefined }
    }
    return this.finish({ why: 'unreachable', last: life.lastFailure }, false)
  }

  private timer(name: LifeTimer, at: number | undefined): void {
    this.commands.push({ type: 'timer', name, at })
  }

  private emit(state: ContenderState): void {
    this.commands.push({ type: 'emit', state })
  }

  private finish(
    outcome: 'closed' | 'refused' | GiveUp,
    quiet: boolean,
    state?: ContenderState,
  ): Done {
    // A holder that gives up says false first: holding$ never ends on true.
    if (state?.holding === true) this.emit(dropHold(state))
    this.commands.push({ type: 'finish', outcome, quiet })
    return { phase: 'done' }
  }
}

/** A holder's state once it gave its slot up: not holding, no token, released. */
function dropHold(state: ContenderState): ContenderState {
  if (!state.holding) return state
  return { ...state, holding: false, reason: 'released', fencingToken: undefined, phase: 'retired' }
}

/**
 * The per-session step's options of a run: the contender's, with the run's lease margin and the
 * try-once flag. The last one made is kept per contender and made again only when one of the two
 * changes (a new run's margin, the end of try-once), since the step is taken on every input of
 * every contender.
 */
const stepOptionsMemo = new WeakMap<LifeOptions, ContenderStateOptions>()
function stepOptionsOf(
  options: LifeOptions,
  leaseMarginMs: number | undefined,
  tryOnce: boolean,
): ContenderStateOptions {
  const known = stepOptionsMemo.get(options)
  if (known !== undefined && known.leaseMarginMs === leaseMarginMs && known.tryOnce === tryOnce) {
    return known
  }
  const made = { ...options.step, leaseMarginMs, tryOnce }
  stepOptionsMemo.set(options, made)
  return made
}

/*
 * A waiting contender is stepped, or holds a snapshot back, on every snapshot of its prefix: the
 * run phases and their runs are made here, always with the same fields in the same order, so that
 * every one has the same shape (a spread of objects of varying shapes is several times slower).
 */

function lifeOf<P extends 'running' | 'closing'>(
  phase: P,
  state: ContenderState,
  tryOnce: boolean,
  run: Run,
): Extract<Running | Closing, { phase: P }> {
  return { phase, state, tryOnce, run } as Extract<Running | Closing, { phase: P }>
}

function withRun<L extends Running | Closing>(life: L, run: Run): L {
  return lifeOf(life.phase, life.state, life.tryOnce, run) as L
}

function runWith(run: Run, change: Partial<Run>): Run {
  return {
    session: run.session,
    leaseMarginMs: run.leaseMarginMs,
    renewal: change.renewal ?? run.renewal,
    joining: change.joining ?? run.joining,
    seedIndex: 'seedIndex' in change ? change.seedIndex : run.seedIndex,
    holdUntil: 'holdUntil' in change ? change.holdUntil : run.holdUntil,
  }
}
