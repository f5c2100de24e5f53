import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { decide } from '../../src/core/semaphore/decide.js'
import { viewCache } from '../../src/core/semaphore/view-cache.js'
import { decideScenarios, type DecideScenario } from '../support/decide-scenarios.js'

/**
 * Another contender of the scenario's snapshot: the first session that locks its own key there
 * and is not the scenario's, or else a session with no key (it decides NotContending).
 */
function secondContender({ snapshot, options }: DecideScenario): string {
  const own = snapshot.entries.find(
    (entry) =>
      entry.session !== undefined &&
      entry.session !== options.session &&
      entry.key.endsWith(`/${entry.session}`),
  )
  return own?.session ?? 'another'
}

describe('prefixView', () => {
  describe('shared by the contenders of a prefix (viewCache)', () => {
    for (const [name, scenario] of Object.entries(decideScenarios)) {
      it(`should give two contenders the decisions they would get alone for ${name}`, () => {
        const { snapshot, options } = scenario
        const second = { ...options, session: secondContender(scenario) }
        const decideStep = viewCache().decide
        const theirs = decideStep(snapshot, second)
        const mine = decideStep(snapshot, options)
        assert.deepStrictEqual(mine, decide(snapshot, options))
        assert.deepStrictEqual(theirs, decide(snapshot, second))
        // Under a limit conflict only a holder decides on a view (Held); the other has none.
        if (mine.view !== undefined && theirs.view !== undefined) {
          assert.equal(mine.view, theirs.view, 'one view for both')
        }
      })
    }
  })
})
