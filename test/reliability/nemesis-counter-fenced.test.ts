// The nemesis suite's lost-update workload with fenced writes (test/support/nemesis-runs.ts):
// not one update may be lost.
import { describe, it } from 'node:test'
import { nemesisTimeoutMs } from '../support/nemesis-assert.js'
import { COUNTER_SECONDS, counterRun } from '../support/nemesis-runs.js'

describe('the nemesis and a counter written with fenced writes', () => {
  it('loses no update', { timeout: nemesisTimeoutMs(COUNTER_SECONDS) }, (t) =>
    counterRun(t, 'counter-fenced', 3303),
  )
})
