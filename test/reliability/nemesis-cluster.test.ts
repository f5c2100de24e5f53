// The nemesis suite on a 3-server Consul cluster (test/support/nemesis-runs.ts): as on one server
// (nemesis-single.test.ts), with the Raft leader killed and brought back instead of a server
// restart. Actors are spread over the three servers, so some lose their server with the leader and
// others ride through the election.
import { describe, it } from 'node:test'
import { nemesisTimeoutMs } from '../support/nemesis-assert.js'
import { MIXED_SECONDS, mixedRun } from '../support/nemesis-runs.js'

describe('the nemesis on a 3-server cluster', () => {
  it(
    'keeps the promise under kills, pauses, partitions, slow networks, leader failovers and operator deletes',
    { timeout: nemesisTimeoutMs(MIXED_SECONDS) },
    (t) => mixedRun(t, 3, 2202),
  )
})
