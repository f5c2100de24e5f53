// The nemesis suite on one Consul server (test/support/nemesis-runs.ts): library actors and
// `consul lock -n` loops share a prefix while a seeded nemesis kills, freezes, cuts off and slows
// them, restarts the server (keeping its state, or losing it: every session, key and index gone),
// and deletes `.lock` and the whole prefix as an operator would. The
// checker then reads the history: never more than the limit acting at once, no library waiter left
// waiting while slots were free, tokens in order, everyone served once healed, nothing left in
// Consul. Set NEMESIS_SEED and NEMESIS_SECONDS to explore (docs/reliability.md has the seeds and
// figures of longer runs).
import { describe, it } from 'node:test'
import { nemesisTimeoutMs } from '../support/nemesis-assert.js'
import { MIXED_SECONDS, mixedRun } from '../support/nemesis-runs.js'

describe('the nemesis on one Consul server', () => {
  it(
    'keeps the promise under kills, pauses, partitions, slow networks, restarts (state kept or lost) and operator deletes',
    { timeout: nemesisTimeoutMs(MIXED_SECONDS) },
    (t) => mixedRun(t, 1, 1101),
  )
})
