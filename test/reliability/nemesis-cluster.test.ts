// The nemesis suite on a 3-server Consul cluster: as on one server (nemesis-single.test.ts), with
// the Raft leader killed and brought back instead of a server restart. Actors are spread over the
// three servers, so some lose their server with the leader and others ride through the election.
import { describe, it } from 'node:test'
import { startCluster, uniquePrefix } from '../support/consul-agent.js'
import {
  assertNemesis,
  nemesisSeconds,
  nemesisSeed,
  nemesisTimeoutMs,
} from '../support/nemesis-assert.js'
import { runNemesis } from '../support/nemesis.js'

describe('the nemesis on a 3-server cluster', () => {
  const seconds = nemesisSeconds(60)
  it(
    'keeps the promise under kills, pauses, partitions, slow networks, leader failovers and operator deletes',
    { timeout: nemesisTimeoutMs(seconds) },
    async (t) => {
      const cluster = await startCluster(3)
      try {
        const result = await runNemesis({
          name: 'cluster',
          seed: nemesisSeed(2202),
          prefix: uniquePrefix('nemesis-cluster'),
          limit: 2,
          servers: cluster.servers,
          leader: () => cluster.leader(),
          libraryActors: 4,
          consulLockActors: 2,
          workload: 'tick',
          faults: {
            kill: 3,
            pause: 3,
            blackhole: 2,
            slow: 1,
            'leader-failover': 1,
            'delete-lock': 1,
            'delete-prefix': 1,
          },
          faultMs: seconds * 1000,
          quietMs: 35_000,
          ttlMs: { library: 10_000, 'consul-lock': 15_000 },
        })
        assertNemesis(t, result)
      } finally {
        await cluster.stop()
      }
    },
  )
})
