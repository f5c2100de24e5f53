import type { ContenderEvent, Decision } from '../events.js'
import type { ContenderAction } from './contender-state-model.js'

/** A snapshot of the watch, with this contender's decision on it when its deliverer made one. */
export type DecidedSnapshot = Extract<ContenderEvent, { readonly type: 'snapshot' }> & {
  /**
   * This contender's decision on `snapshot`, made once by whoever delivers it (the prefix
   * coordinator decides each snapshot for all its members). Without one, the step decides.
   */
  readonly decision?: Decision | undefined
}

/**
 * What a contender's step consumes: the effects layer's events (a snapshot possibly decided
 * already), plus the interpreter's own: `wake` (the timer it set for `wakeAt` fired), `written`
 * (a write it started completed, after feeding any answer it had) and `refence` (the job this holder served ended and another job of its process waits:
 * it needs a fresh fencing token, `Refencing`; or, `ahead`, a job started and the next one's token may be written now).
 */
export type ContenderInput =
  | Exclude<ContenderEvent, { readonly type: 'snapshot' }>
  | DecidedSnapshot
  | { readonly type: 'wake' }
  | { readonly type: 'written'; readonly action: ContenderAction }
  | RefenceInput

/**
 * The job a holder served has ended and another job of its process waits (`Refencing`); or, with
 * `ahead`, a job has just started and another waits: the token for the next one may be written
 * now, while this one runs, so that the next starts as soon as this one ends.
 */
export interface RefenceInput {
  /** Discriminant. */
  readonly type: 'refence'
  /** Written ahead: the holder keeps holding while it is out (only a Refence, never a Rotate). */
  readonly ahead?: boolean | undefined
}
