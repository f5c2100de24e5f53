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
 * it needs a fresh fencing token, `Refencing`).
 */
export type ContenderInput =
  | Exclude<ContenderEvent, { readonly type: 'snapshot' }>
  | DecidedSnapshot
  | { readonly type: 'wake' }
  | { readonly type: 'written'; readonly action: ContenderAction }
  | RefenceInput

/** The job a holder served has ended and another job of its process waits (`Refencing`). */
export interface RefenceInput {
  /** Discriminant. */
  readonly type: 'refence'
}
