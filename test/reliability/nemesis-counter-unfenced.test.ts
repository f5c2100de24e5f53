// The nemesis suite's lost-update workload with plain writes right after the guard
// (test/support/nemesis-counter.ts): the lost updates are counted and reported, as measured.
import { describe, it } from 'node:test'
import { nemesisTimeoutMs } from '../support/nemesis-assert.js'
import { COUNTER_SECONDS, counterRun } from '../support/nemesis-runs.js'

describe('the nemesis and a counter written with plain writes after the guard', () => {
  it('counts the updates lost', { timeout: nemesisTimeoutMs(COUNTER_SECONDS) }, (t) =>
    counterRun(t, 'counter-unfenced', 4404),
  )
})
