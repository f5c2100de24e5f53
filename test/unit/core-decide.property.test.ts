// Properties of the semaphore decision on generated snapshots (fast-check). A failure prints its
// seed, path and shrunk case; FC_SEED=<seed> FC_PATH=<path> replays it (test/support/property-runs.ts).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { isDeepStrictEqual } from 'node:util'
import fc from 'fast-check'
import * as E from 'fp-ts/lib/Either.js'
import type { Decision } from '../../src/core/events.js'
import { decodeLockBody } from '../../src/core/lock-body/decode-lock-body.js'
import { decideInView } from '../../src/core/semaphore/decide-in-view.js'
import { decide } from '../../src/core/semaphore/decide.js'
import { prefixView } from '../../src/core/semaphore/prefix-view.js'
import { SEMAPHORE_FLAGS } from '../../src/base/flags.js'
import {
  GHOSTS,
  SESSIONS,
  STRANGER,
  semaphoreCase,
  type SemaphoreCase,
} from '../support/arbitraries.js'
import { comparable, expectedDecision } from '../support/decide-oracle.js'
import { runs } from '../support/property-runs.js'

const prefix = 'svc/sem'
/** A session with no key at all under the prefix. */
const OUTSIDER = 'outsider-1'

/** Every session to ask: those that may have keys, the dead, a stranger, one with nothing. */
const askers = [...SESSIONS, ...GHOSTS, STRANGER, OUTSIDER]

/**
 * Whether a contender may skip the queue (fairness off or ignoreRank) and whether it follows the
 * limit `.lock` states: each unset, on or off.
 */
const contenderOptions = fc.record({
  fairness: fc.option(fc.boolean(), { nil: undefined }),
  ignoreRank: fc.option(fc.boolean(), { nil: undefined }),
  followLimit: fc.option(fc.boolean(), { nil: undefined }),
})

type ContenderCase = [SemaphoreCase, { readonly followLimit?: boolean | undefined }]

const cases = fc.tuple(semaphoreCase(prefix), contenderOptions)

/** The problem the generated `.lock` was meant to have for this contender, if any. */
function intendedProblem([c, contender]: ContenderCase): Decision['type'] | undefined {
  const { lock } = c
  if (lock.kind === 'absent') return undefined
  if (lock.flags !== 0n && lock.flags !== SEMAPHORE_FLAGS) return 'Conflict'
  if (lock.kind === 'corrupt') return 'CorruptLock'
  if (lock.kind === 'valid' && lock.limit !== c.limit && contender.followLimit !== true) {
    return 'LimitConflict'
  }
  return undefined
}

/** The limit in force: the one a valid `.lock` states, the contenders' own without one. */
const limitInForce = (c: SemaphoreCase): number =>
  c.lock.kind === 'valid' ? c.lock.limit : c.limit

/** The holders the generated `.lock` lists (once each), and which of them are alive. */
function intendedHolders(c: SemaphoreCase): { listed: string[]; live: Set<string> } {
  const live = new Set(c.snapshot.entries.flatMap((e) => (e.session ? [e.session] : [])))
  const listed = c.lock.kind === 'valid' ? [...new Set(c.lock.holders)] : []
  return { listed, live }
}

describe('decide (property)', () => {
  it("should never write over a corrupt .lock, another tool's flags or another limit (unless it follows it)", () => {
    fc.assert(
      fc.property(cases, (k) => {
        const [c, contender] = k
        const problem = intendedProblem(k)
        const { listed, live } = intendedHolders(c)
        for (const session of askers) {
          const decision = decide(c.snapshot, { prefix, limit: c.limit, session, ...contender })
          const holds = listed.includes(session) && live.has(session)
          if (problem === undefined) assert.ok(decision.view !== undefined, 'decides on a view')
          // An operator's change of the limit never takes a slot from its holder.
          else if (problem === 'LimitConflict' && holds) assert.equal(decision.type, 'Held')
          else assert.equal(decision.type, problem)
        }
      }),
      runs(1000),
    )
  })

  it('should say Held to every live holder, and to no one else, whatever limit .lock states', () => {
    fc.assert(
      fc.property(cases, (k) => {
        const [c, contender] = k
        const problem = intendedProblem(k)
        fc.pre(problem === undefined || problem === 'LimitConflict')
        const { listed, live } = intendedHolders(c)
        for (const session of askers) {
          const decision = decide(c.snapshot, { prefix, limit: c.limit, session, ...contender })
          const holds = listed.includes(session) && live.has(session)
          assert.equal(decision.type === 'Held', holds, `${session} held: ${holds}`)
        }
      }),
      runs(1000),
    )
  })

  it("should try only for a free slot, on .lock's ModifyIndex, keeping the live holders in the shape read", () => {
    fc.assert(
      fc.property(cases, (k) => {
        const [c, contender] = k
        fc.pre(intendedProblem(k) === undefined)
        const { listed, live } = intendedHolders(c)
        const liveHolders = listed.filter((h) => live.has(h))
        const limit = limitInForce(c)
        for (const session of askers) {
          const decision = decide(c.snapshot, { prefix, limit: c.limit, session, ...contender })
          if (decision.type !== 'TryAcquire') continue
          assert.ok(
            liveHolders.length < limit,
            'tries only with a free slot under the limit in force',
          )
          const lockIndex = c.lock.kind === 'absent' ? 0n : c.lock.modifyIndex
          assert.equal(decision.cas, lockIndex, ".lock's ModifyIndex, 0n if absent")
          const written = decodeLockBody(decision.body, 'k')
          assert.ok(E.isRight(written) && written.right !== undefined, 'the body decodes')
          const body = written.right
          assert.equal(body.limit, limit, 'writes the limit in force, never its own over it')
          const shape = c.lock.kind === 'valid' ? c.lock.shape : 'go-map'
          assert.equal(body.shape, shape, "written in the shape read (Go's for a new one)")
          assert.ok(body.holders.includes(session), 'the deciding session is in the body')
          for (const h of liveHolders) assert.ok(body.holders.includes(h), `live holder ${h} kept`)
          assert.ok(
            body.holders.every((h) => live.has(h)),
            'dead holders pruned',
          )
          assert.ok(body.holders.length <= limit, 'never more holders than the limit')
        }
      }),
      runs(1000),
    )
  })

  it('should reach every decision on the generated snapshots, or the properties prove little', (t) => {
    const seen = new Map<string, number>()
    for (const [c, contender] of fc.sample(cases, { numRuns: 2000 })) {
      for (const session of askers) {
        const { type } = decide(c.snapshot, { prefix, limit: c.limit, session, ...contender })
        seen.set(type, (seen.get(type) ?? 0) + 1)
      }
    }
    const types = [
      'Held',
      'TryAcquire',
      'Wait',
      'NotContending',
      'CorruptLock',
      'Conflict',
      'LimitConflict',
    ]
    for (const type of types) {
      assert.ok((seen.get(type) ?? 0) > 20, `${type} reached ${seen.get(type) ?? 0} times`)
    }
    t.diagnostic(JSON.stringify(Object.fromEntries(seen)))
  })
})

describe('prefixView and decideInView (property)', () => {
  it('should give each session, from one shared view, the decision the rules give it alone', () => {
    fc.assert(
      fc.property(cases, ([c, contender]) => {
        const { followLimit } = contender
        const shared = prefixView(c.snapshot, { prefix, limit: c.limit, followLimit })
        for (const session of askers) {
          const options = { prefix, limit: c.limit, session, ...contender }
          assert.deepStrictEqual(
            comparable(decideInView(shared, options)),
            comparable(expectedDecision(c.snapshot, options)),
            session,
          )
        }
      }),
      runs(1000),
    )
  })
})

describe('prefixView from an earlier view (property)', () => {
  it('should give the view it gives alone, keeping the earlier waiters whose place did not change', () => {
    fc.assert(
      fc.property(semaphoreCase(prefix), semaphoreCase(prefix), (earlier, later) => {
        const options = { prefix, limit: later.limit }
        const before = prefixView(earlier.snapshot, { prefix, limit: later.limit })
        const alone = prefixView(later.snapshot, options)
        const after = prefixView(
          later.snapshot,
          options,
          E.isRight(before) ? before.right : undefined,
        )
        assert.deepStrictEqual(after, alone)
        if (E.isLeft(before) || E.isLeft(after)) return
        const was = before.right.view.waiting
        for (const waiter of after.right.view.waiting) {
          const same = was[waiter.rank]
          if (same !== undefined && isDeepStrictEqual(same, waiter)) {
            assert.equal(waiter, same, `${waiter.session}: the earlier object`)
          }
        }
      }),
      runs(1000),
    )
  })
})
