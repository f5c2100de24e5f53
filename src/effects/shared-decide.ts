import * as E from 'fp-ts/lib/Either.js'
import type { ConsulClient } from '../consul/client-api.js'
import type { KVSnapshot } from '../consul/types.js'
import type {
  CountedGrace,
  DecideStep,
  SharedGrace,
} from '../core/contender/contender-state-model.js'
import type { PrefixProblem } from '../core/events.js'
import { decideInView } from '../core/semaphore/decide-in-view.js'
import {
  prefixView,
  type PrefixView,
  type PrefixViewOptions,
} from '../core/semaphore/prefix-view.js'
import { perClientPrefix } from './per-client-prefix.js'

/** A snapshot's view for one limit, or the prefix problem that forbids any write. */
export type SharedView = E.Either<PrefixProblem, PrefixView>

/** The view of a snapshot for a limit, memoised (see `sharedDecide`). */
export type ViewStep = (snapshot: KVSnapshot, options: PrefixViewOptions) => SharedView

interface SharedStep {
  readonly view: ViewStep
  readonly decide: DecideStep
  readonly grace: SharedGrace
}

const shared = perClientPrefix<SharedStep>()

/**
 * The semaphore's decide step for every contender of `prefix` on `client`: the same decisions as
 * `decide`, but the part that depends only on the snapshot (`prefixView`: read `.lock`, prune,
 * rank) is computed once per snapshot and limit and shared, and each contender only looks itself
 * up in it (`decideInView`). With n contenders on a prefix in one process, a snapshot costs one
 * O(n log n) view instead of n of them, and every contender's state holds the same arrays.
 *
 * The shared watch hands the same snapshot object to every contender of the prefix, so views are
 * memoised by snapshot identity (a WeakMap: a view lives as long as its snapshot). The latest
 * view is kept weakly, for the next view to share its unchanged arrays.
 *
 * @example
 * const decideStep = sharedDecide(client, 'service/db/lock')
 * events.pipe(contenderState({ prefix: 'service/db/lock', limit: 3, decide: decideStep }))
 * @param client - The client whose shared watch delivers the snapshots.
 * @param prefix - The semaphore prefix.
 * @returns The decide step to give `contenderState`.
 */
export function sharedDecide(client: ConsulClient, prefix: string): DecideStep {
  return shared(client, prefix, memoised).decide
}

/**
 * The views `sharedDecide` decides on, for other readers of the same snapshots (a release's
 * hand-off): the view a contender already decided on is looked up, not computed again.
 *
 * @example
 * const view = sharedView(client, 'service/db/lock')(lastSnapshot, { prefix, limit: 3 })
 * @param client - The client whose shared watch delivers the snapshots.
 * @param prefix - The semaphore prefix.
 * @returns The memoised view step.
 */
export function sharedView(client: ConsulClient, prefix: string): ViewStep {
  return shared(client, prefix, memoised).view
}

/**
 * The fairness grace the contenders of `prefix` on `client` share (`decidePatiently`): the last
 * count any of them started, so that a new contender behind a front waiter already seen stalled
 * does not grant it a new grace.
 *
 * @example
 * events.pipe(contenderState({ prefix, limit: 3, sharedGrace: sharedGrace(client, prefix) }))
 * @param client - The client of the contenders.
 * @param prefix - The semaphore prefix.
 * @returns The shared grace.
 */
export function sharedGrace(client: ConsulClient, prefix: string): SharedGrace {
  return shared(client, prefix, memoised).grace
}

function memoised(): SharedStep {
  let counted: CountedGrace | undefined
  const grace: SharedGrace = { recall: () => counted, remember: (g) => (counted = g) }
  const views = new WeakMap<KVSnapshot, Map<number, SharedView>>()
  const latest = new Map<number, WeakRef<PrefixView>>()
  const view: ViewStep = (snapshot, options) => {
    let byLimit = views.get(snapshot)
    if (!byLimit) views.set(snapshot, (byLimit = new Map<number, SharedView>()))
    let found = byLimit.get(options.limit)
    if (!found) {
      found = prefixView(snapshot, options, latest.get(options.limit)?.deref())
      byLimit.set(options.limit, found)
      if (E.isRight(found)) latest.set(options.limit, new WeakRef(found.right))
    }
    return found
  }
  return {
    view,
    decide: (snapshot, options) => decideInView(view(snapshot, options), options),
    grace,
  }
}
