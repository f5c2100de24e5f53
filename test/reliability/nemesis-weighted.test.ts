// The nemesis suite with requests of several permits and the read-write lock
// (test/support/nemesis-runs.ts): two readers, a writer that takes every slot, a holder of two
// permits and a `consul lock -n` loop share a prefix while a seeded nemesis kills, freezes, cuts
// off and slows them, restarts the server and deletes `.lock`. The checker counts each actor by
// the permits it acts under: never more than the limit at once, no waiter stranded while as many
// slots as it asks for were free, tokens in order, everyone served once healed, nothing left.
import { describe, it } from 'node:test'
import { nemesisTimeoutMs } from '../support/nemesis-assert.js'
import { WEIGHTED_SECONDS, weightedRun } from '../support/nemesis-runs.js'

describe('the nemesis with several permits and the read-write lock', () => {
  it(
    'keeps the promise, counted in permits, under kills, pauses, partitions, slow networks, a restart and a delete',
    { timeout: nemesisTimeoutMs(WEIGHTED_SECONDS) },
    (t) => weightedRun(t, 4401),
  )
})
