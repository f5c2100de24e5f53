/**
 * The two waits of `rxsem run` as Observables: for a slot (or a reason not to run), then, while
 * the command runs, for the slot to be lost; and the stop signals that can cut either short.
 */
import {
  EMPTY,
  ReplaySubject,
  Subject,
  catchError,
  concatWith,
  defer,
  endWith,
  filter,
  first,
  firstValueFrom,
  map,
  merge,
  mergeMap,
  of,
  tap,
  timer,
  type Observable,
} from 'rxjs'
import type { SemaphoreState } from '../../recipes/semaphore.js'
import { tryOnceVerdictOf, type CliContender } from './contender.js'
import { askedToGiveBack, describeError } from '../report.js'

/**
 * The contender's states, subscribed once for the whole run and replayed (last state, error,
 * completion) to every later reader: resubscribing the library's `state$` after an error would
 * start a new contender.
 */
export function states(contender: CliContender): Observable<SemaphoreState> {
  const replay = new ReplaySubject<SemaphoreState>(1)
  contender.state$.subscribe(replay)
  return replay.asObservable()
}

/** How waiting for a slot ended. */
export type Waited =
  | { readonly type: 'held'; readonly state: SemaphoreState }
  | { readonly type: 'timeout'; readonly why: string }
  | { readonly type: 'signal'; readonly signal: NodeJS.Signals }
  | { readonly type: 'failed'; readonly error: unknown }

/**
 * `--timeout 0` waits this long at most for its one decision, should Consul stop answering after
 * the start-up check: a try-once contender ends on a failed request, but one that hangs fails only
 * at the transport's timeout.
 */
export const TRY_ONCE_BACKSTOP_MS = 10_000

/**
 * Waits for the first of: a held slot, an error (of the contender, or one `trouble` emits, such as
 * the watchdog's), the timeout, a signal. With `--timeout 0` (a try-once contender, see
 * `createContender`), "not held" by the try-once rule, or the contender's end before it held, is
 * a timeout at once. `onHeld` gets the held state in its own emission when the wait ends with it,
 * before the state's later subscribers and before the promise settles: the command's start goes
 * out first.
 */
export function waitForSlot(
  state$: Observable<SemaphoreState>,
  signals: Observable<NodeJS.Signals>,
  plan: { readonly timeoutMs: number | undefined; readonly prefix: string },
  trouble: Observable<unknown> = EMPTY,
  onHeld: (state: SemaphoreState) => void = () => {},
): Promise<Waited> {
  const { timeoutMs, prefix } = plan
  const tryOnce = timeoutMs === 0
  let last: SemaphoreState | undefined
  const verdicts: Observable<Waited> = state$.pipe(
    mergeMap((state): Observable<Waited> => {
      last = state
      if (state.holding) return of({ type: 'held', state })
      if (tryOnce && tryOnceVerdictOf(state, false) === 'not-held') {
        return of(notHeldNow(prefix, state))
      }
      return EMPTY
    }),
    concatWith(
      defer(() =>
        of<Waited>(
          tryOnce
            ? notHeldNow(prefix, last)
            : {
                type: 'failed',
                error: new Error('the contender stopped before holding a slot; please report this'),
              },
        ),
      ),
    ),
    catchError((error: unknown) => of<Waited>({ type: 'failed', error })),
  )
  const limitMs = tryOnce ? TRY_ONCE_BACKSTOP_MS : timeoutMs
  const deadline: Observable<Waited> =
    limitMs === undefined
      ? EMPTY
      : timer(limitMs).pipe(
          map((): Waited => ({
            type: 'timeout',
            why: tryOnce
              ? `no decision about a slot of ${prefix} within ${limitMs} ms (--timeout 0)`
              : `no slot of ${prefix} within ${limitMs} ms (--timeout)`,
          })),
        )
  return firstValueFrom(
    merge(
      verdicts,
      deadline,
      signals.pipe(map((signal): Waited => ({ type: 'signal', signal }))),
      trouble.pipe(map((error): Waited => ({ type: 'failed', error }))),
    ).pipe(
      // Only the first verdict gets here: firstValueFrom unsubscribes once it has one.
      tap((waited) => {
        if (waited.type === 'held') onHeld(waited.state)
      }),
    ),
  )
}

/** The answer of `--timeout 0` without a slot, after `state` (the last one seen). */
function notHeldNow(prefix: string, state: SemaphoreState | undefined): Waited {
  if (state === undefined) {
    return { type: 'timeout', why: `no slot of ${prefix} for this contender now (--timeout 0)` }
  }
  const held = `${state.holders.length} of ${state.limit} held`
  return {
    type: 'timeout',
    why:
      state.holders.length >= state.limit
        ? `no free slot of ${prefix} for this contender now (${held}, --timeout 0)`
        : // The try-once contender ended its run on a refusal its state does not show.
          `Consul gave this contender no slot of ${prefix} now (${held}: refused for the lock-delay ` +
          `after a holder's session ended, or its session ended; --timeout 0)`,
  }
}

/**
 * Emits once, with the reason, when the slot held at subscription is no longer held: holding
 * turned false (any reason: removed, session invalidated, watch failed, lease expired), or the
 * contender failed or ended.
 */
export function slotLost(state$: Observable<SemaphoreState>): Observable<string> {
  return state$.pipe(
    filter((state) => !state.holding),
    map((state) => state.reason ?? 'no longer held'),
    endWith('the contender ended'),
    catchError((error: unknown) => of(describeError(error))),
    first(),
  )
}

/**
 * Emits once, with what the request says, when someone asks the holder to give its slot back
 * (`rxsem evict --grace`) while it holds.
 */
export function revokeRequested(state$: Observable<SemaphoreState>): Observable<string> {
  return state$.pipe(
    mergeMap(({ holding, revokeRequested: request }) =>
      holding && request !== undefined ? of(askedToGiveBack(request)) : EMPTY,
    ),
    first(),
    catchError(() => EMPTY),
  )
}

/**
 * SIGINT, SIGTERM and SIGHUP as a stream, for as long as `rxsem run` lives. The handlers are
 * installed once, up front: a signal between two phases must never fall back to Node's default (die
 * at once, leaving the command to the watchdog and the slot to the TTL). SIGHUP comes when the
 * terminal or ssh connection of `rxsem run` goes away.
 */
export class StopSignals {
  private readonly subject = new Subject<NodeJS.Signals>()
  private readonly handler = (signal: NodeJS.Signals): void => this.subject.next(signal)

  constructor(private readonly names: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP']) {
    for (const name of names) process.on(name, this.handler)
  }

  /** Each signal as it arrives (hot: only signals after subscribing). */
  get received(): Observable<NodeJS.Signals> {
    return this.subject.asObservable()
  }

  /** Removes the handlers. */
  dispose(): void {
    for (const name of this.names) process.off(name, this.handler)
    this.subject.complete()
  }
}
