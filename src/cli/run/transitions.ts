/**
 * What `rxsem run` says about a change of its contender's state: the key lines (waiting, holding,
 * lost) for everyone, and every other transition with its reason for `--verbose`.
 */
import type { SemaphoreState } from '../../recipes/semaphore.js'
import { cliWording, shortSession, waitFor } from '../report.js'
import { tryOnceVerdictOf } from './contender.js'

export interface TransitionLine {
  readonly level: 'info' | 'detail'
  readonly message: string
}

/** The `(reason, session, fencing token)` tail of a holding line. */
export function holdingDetails(state: SemaphoreState): string {
  const token = state.fencingToken === undefined ? '' : `, fencing token ${state.fencingToken}`
  return `${state.reason ?? 'acquired'}, session ${shortSession(state.session)}${token}`
}

/**
 * The lines to print for the change from `previous` (undefined for the first state) to `next`.
 * `ranked`: the contender waits for its turn (false for `--timeout 0`), so that "waiting" means no
 * slot is for it now.
 *
 * @example
 * describeTransition(waiting, held) // [{ level: 'info', message: 'holding slot (acquired, session 1234abcd, fencing token 57)' }]
 */
export function describeTransition(
  previous: SemaphoreState | undefined,
  next: SemaphoreState,
  ranked = true,
): TransitionLine[] {
  const lines: TransitionLine[] = []
  const detail = (message: string): void => void lines.push({ level: 'detail', message })
  const info = (message: string): void => void lines.push({ level: 'info', message })

  if (next.session !== undefined && next.session !== previous?.session) {
    detail(`session ${shortSession(next.session)} created`)
  }
  if (previous !== undefined && previous.connected !== next.connected) {
    const riding = !next.connected && next.holding && previous.holding
    detail(
      next.connected
        ? 'watch connected'
        : riding
          ? 'watch disconnected; retrying, holding on until the lease deadline (--ride-through)'
          : 'watch disconnected; retrying',
    )
  }
  // With --follow-limit, an operator's `rxsem set-limit` shows here.
  if (previous !== undefined && previous.limit !== next.limit) {
    detail(`limit now ${next.limit} (was ${previous.limit})`)
  }
  const failure = next.lastError
  if (failure !== undefined && failure.message !== previous?.lastError?.message) {
    detail(
      `Consul ${failure.during === 'session' ? 'session create' : failure.during} failing, retrying: ${cliWording(failure.message)}`,
    )
  }
  if (next.holding && !previous?.holding) {
    info(`holding slot (${holdingDetails(next)})`)
  } else if (!next.holding && previous?.holding) {
    // `rxsem run` itself reports a loss (with what it does about it) and its own release.
    if (next.reason !== 'released') detail(`slot dropped (${next.reason ?? '?'})`)
  } else if (!next.holding && next.contending && next.rank !== undefined) {
    const estimate =
      next.estimatedWaitMs === undefined ? '' : `, about ${waitFor(next.estimatedWaitMs)} to wait`
    const queue = `${next.holders.length} of ${next.limit} held, rank ${next.rank}${estimate}`
    const queued = (state: SemaphoreState | undefined): boolean =>
      state !== undefined && !state.holding && tryOnceVerdictOf(state, ranked) === 'not-held'
    if (queued(next) && !queued(previous)) {
      info(`waiting for a slot (${queue})`)
    } else if (previous?.rank !== next.rank || previous.holders.length !== next.holders.length) {
      detail(queued(next) ? `still waiting (${queue})` : `a slot is free, trying (${queue})`)
    }
  }
  return lines
}
