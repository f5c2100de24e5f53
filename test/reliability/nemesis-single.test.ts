// The nemesis suite on one Consul server: library actors and `consul lock -n` loops share a prefix
// while a seeded nemesis kills, freezes, cuts off and slows them, restarts the server, and deletes
// `.lock` and the whole prefix as an operator would. The checker then reads the history: never more
// than the limit acting at once, no library waiter left waiting while slots were free, tokens in
// order, everyone served once healed, nothing left in Consul. Set NEMESIS_SEED and NEMESIS_SECONDS
// to explore (docs/reliability.md lists the seeds and figures of the longer runs).
import { describe, it } from 'node:test'
import { startCluster, uniquePrefix, type ConsulCluster } from '../support/consul-agent.js'
import {
  assertNemesis,
  nemesisSeconds,
  nemesisSeed,
  nemesisTimeoutMs,
} from '../support/nemesis-assert.js'
import { runNemesis } from '../support/nemesis.js'

describe('the nemesis on one Consul server', () => {
  let cluster: ConsulCluster | undefined

  const seconds = nemesisSeconds(60)
  it(
    'keeps the promise under kills, pauses, partitions, slow networks, restarts and operator deletes',
    { timeout: nemesisTimeoutMs(seconds) },
    async (t) => {
      cluster = await startCluster(1)
      try {
        const result = await runNemesis({
          name: 'single',
          seed: nemesisSeed(1101),
          prefix: uniquePrefix('nemesis-single'),
          limit: 2,
          servers: cluster.servers,
          libraryActors: 4,
          consulLockActors: 2,
          workload: 'tick',
          faults: {
            kill: 3,
            pause: 3,
            blackhole: 2,
            slow: 1,
            'agent-restart': 1,
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
