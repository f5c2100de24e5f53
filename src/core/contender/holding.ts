import { distinctUntilChanged, map, type OperatorFunction } from 'rxjs'
import type { ContenderStateOptions } from './contender-state-model.js'
import { contenderState } from './contender-state.js'
import type { ContenderEvent } from '../events.js'

/**
 * Whether this contender holds a slot, from the effects layer's events: false first, then each
 * change (never twice the same value in a row). True only after a CAS that added this session or a
 * snapshot listing it live, and only while the watch is connected and the lease valid; false at
 * once on removal, session loss, watch failure or release, and at the latest at the lease deadline.
 * With `options.rideThrough`, a watch failure drops it only at the lease deadline (see
 * `settleContender`).
 *
 * ```
 * events:  -c--s--k---d---s------r--|    c: session-created, s: snapshot listing us after k,
 *                                        k: cas-result ok, d: disconnected, r: release-requested
 * holding: f------t---f---t------f--|
 * ```
 *
 * @example
 * events.pipe(holding({ prefix: 'svc/lock', limit: 1 })).subscribe((held) => toggleWork(held))
 * @param options - See `contenderState`.
 * @returns An operator from ContenderEvent to the holding flag.
 */
export function holding(options: ContenderStateOptions): OperatorFunction<ContenderEvent, boolean> {
  const states = contenderState(options)
  return (events) =>
    events.pipe(
      states,
      map((state) => state.holding),
      distinctUntilChanged(),
    )
}
