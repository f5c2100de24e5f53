import * as E from 'fp-ts/lib/Either.js'
import type { KVSnapshot } from '../../base/kv-snapshot.js'
import type { CountedGrace, DecideStep, SharedGrace } from '../contender/contender-state-model.js'
import type { PrefixProblem } from '../events.js'
import { decideInView } from './decide-in-view.js'
import { handOverIntervalMs, noteHandOvers, type HandOverLog } from './hand-overs.js'
import { prefixView, type PrefixView, type PrefixViewOptions } from './prefix-view.js'

/** A snapshot's view for one limit, or the prefix problem that forbids any write. */
export type SharedView = E.Either<PrefixProblem, PrefixView>

/** The view of a snapshot for a limit, memoised (see `viewCache`). */
export type ViewStep = (snapshot: KVSnapshot, options: PrefixViewOptions) => SharedView

/**
 * Where the hand-overs a prefix's views show are logged (`noteHandOvers`), and the clock they are
 * seen on; a process keeps one log per prefix, across its contenders' tenures.
 */
export interface SharedHandOvers {
  recall(): HandOverLog
  remember(log: HandOverLog): void
  /** Now (ms). */
  now(): number
}

/** What the contenders of one prefix share: the views of its snapshots, and the fairness grace. */
export interface ViewCache {
  /** The view of a snapshot for a limit, computed once per snapshot and limit. */
  readonly view: ViewStep
  /** `decide`, looking the contender up in the memoised view (`decideInView`). */
  readonly decide: DecideStep
  /** The fairness grace the contenders count together (`decidePatiently`). */
  readonly grace: SharedGrace
  /** How many views were computed (for the counting tests and the bench). */
  readonly computed: () => number
}

/**
 * The semaphore's decisions for every contender of one prefix, sharing what depends only on the
 * snapshot: `prefixView` (read `.lock`, prune, rank) is computed once per snapshot and limit, and
 * each contender only looks itself up in it (`decideInView`). With n contenders of a prefix, a
 * snapshot costs one O(n log n) view instead of n of them, and every contender's state holds the
 * same arrays. Pure: the memo is keyed on the snapshot object (a WeakMap, so a view lives as long
 * as its snapshot), and a new view reuses the previous one's arrays when they did not change, so
 * subscribers of `state$` can compare them by reference.
 *
 * ```
 * snapshot s1 ─► view(s1, 3) ─► decideInView(·, a)   decideInView(·, b)   decideInView(·, c)
 *                computed once          O(1)                O(1)                 O(1)
 * ```
 *
 * @example
 * const cache = viewCache()
 * const mine = cache.decide(snapshot, { prefix: 'svc/lock', session: 'a', limit: 3 })
 * const theirs = cache.decide(snapshot, { prefix: 'svc/lock', session: 'b', limit: 3 })
 * mine.view === theirs.view // true
 * @param grace - Where the fairness grace is kept; default: in this cache.
 * @param handOvers - Where the hand-overs the views show are logged, and their clock: a waiter's
 *   decision then carries its estimated wait. Default: none is logged or estimated.
 * @returns A fresh cache: one per prefix (the coordinator of the prefix owns it).
 */
export function viewCache(
  grace: SharedGrace = countedHere(),
  handOvers?: SharedHandOvers,
): ViewCache {
  let computed = 0
  const views = new WeakMap<KVSnapshot, Map<number, SharedView>>()
  const latest = new Map<number, WeakRef<PrefixView>>()
  const view: ViewStep = (snapshot, options) => {
    let byLimit = views.get(snapshot)
    if (!byLimit) views.set(snapshot, (byLimit = new Map<number, SharedView>()))
    const key = viewKey(options)
    let found = byLimit.get(key)
    if (!found) {
      computed++
      found = prefixView(snapshot, options, latest.get(key)?.deref())
      byLimit.set(key, found)
      if (E.isRight(found)) {
        latest.set(key, new WeakRef(found.right))
        handOvers?.remember(
          noteHandOvers(handOvers.recall(), found.right.view.liveHolders, handOvers.now()),
        )
      }
    }
    return found
  }
  return {
    view,
    decide: (snapshot, options) => {
      const shared = view(snapshot, options)
      const handOverMs = handOvers && handOverIntervalMs(handOvers.recall(), handOvers.now())
      return decideInView(shared, options, handOverMs)
    },
    grace,
    computed: () => computed,
  }
}

/** One number per distinct view: the limit, negated for a contender that follows `.lock`'s. */
const viewKey = (options: PrefixViewOptions): number =>
  options.followLimit === true ? -options.limit : options.limit

/** A fairness grace kept in a variable. */
function countedHere(): SharedGrace {
  let counted: CountedGrace | undefined
  return { recall: () => counted, remember: (g) => (counted = g) }
}
