// The nemesis suite's lost-update workload with plain writes, the guard asked before the work
// (test/support/nemesis-runs.ts): the lost updates are counted and reported, as measured.
import { describe, it } from 'node:test'
import { nemesisTimeoutMs } from '../support/nemesis-assert.js'
import { COUNTER_SECONDS, counterRun } from '../support/nemesis-runs.js'

describe('the nemesis and a counter written with plain writes (check, work, write)', () => {
  it('counts the updates lost', { timeout: nemesisTimeoutMs(COUNTER_SECONDS) }, (t) =>
    counterRun(t, 'counter-unfenced', 4404),
  )
})
