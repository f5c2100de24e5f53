// The nemesis suite's lost-update workload: library actors (limit 1) read a counter in Consul KV
// and write it back incremented while they hold, under kills, pauses, partitions, slow networks
// and server restarts. Once with a plain write right after the guard (`slot.isHolding()`), once
// with `slot.fencedTxn(...)`, which Consul commits only while the writer's session still holds
// its key. The fenced run must lose no update; the unfenced figure is reported as measured.
import { describe, it } from 'node:test'
import { startCluster, uniquePrefix, type ConsulCluster } from '../support/consul-agent.js'
import {
  assertNemesis,
  nemesisSeconds,
  nemesisSeed,
  nemesisTimeoutMs,
} from '../support/nemesis-assert.js'
import { runNemesis } from '../support/nemesis.js'

describe('the nemesis and a counter under the lock', () => {
  const seconds = nemesisSeconds(45)
  for (const workload of ['counter-fenced', 'counter-unfenced'] as const) {
    it(
      `${workload === 'counter-fenced' ? 'loses no update with fenced writes' : 'counts the updates lost without fencing'}`,
      { timeout: nemesisTimeoutMs(seconds) },
      async (t) => {
        let cluster: ConsulCluster | undefined
        try {
          cluster = await startCluster(1)
          const prefix = uniquePrefix(`nemesis-${workload}`)
          const result = await runNemesis({
            name: workload,
            seed: nemesisSeed(workload === 'counter-fenced' ? 3303 : 4404),
            prefix,
            limit: 1,
            servers: cluster.servers,
            libraryActors: 3,
            consulLockActors: 0,
            workload,
            counterKey: `${prefix.replace('rxsem-test/', 'rxsem-test-counter/')}`,
            faults: { kill: 2, pause: 3, blackhole: 2, slow: 2, 'agent-restart': 1 },
            faultMs: seconds * 1000,
            quietMs: 25_000,
            ttlMs: { library: 10_000, 'consul-lock': 15_000 },
          })
          assertNemesis(t, result)
        } finally {
          await cluster?.stop()
        }
      },
    )
  }
})
