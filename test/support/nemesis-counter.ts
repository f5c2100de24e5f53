// The nemesis suite's lost-update workload, run by nemesis-counter-fenced.test.ts and
// nemesis-counter-unfenced.test.ts (a file each: one run takes most of a file's time limit).
// Library actors (limit 1) read a counter in Consul KV and write it back incremented while they
// hold, under kills, pauses, partitions, slow networks and server restarts: with a plain write
// right after the guard (`slot.isHolding()`), or with `slot.fencedTxn(...)`, which Consul commits
// only while the writer's session still holds its key.
import type { TestContext } from 'node:test'
import { startCluster, uniquePrefix, type ConsulCluster } from './consul-agent.js'
import { assertNemesis, nemesisSeconds, nemesisSeed } from './nemesis-assert.js'
import { runNemesis } from './nemesis.js'

/** How long the counter runs inject faults by default (NEMESIS_SECONDS overrides it). */
export const COUNTER_SECONDS = nemesisSeconds(60)

/** One seeded counter run on one Consul server, checked by `assertNemesis`. */
export async function counterRun(
  t: TestContext,
  workload: 'counter-fenced' | 'counter-unfenced',
  seed: number,
): Promise<void> {
  let cluster: ConsulCluster | undefined
  try {
    cluster = await startCluster(1)
    const prefix = uniquePrefix(`nemesis-${workload}`)
    const result = await runNemesis({
      name: workload,
      seed: nemesisSeed(seed),
      prefix,
      limit: 1,
      servers: cluster.servers,
      libraryActors: 3,
      consulLockActors: 0,
      workload,
      counterKey: prefix.replace('rxsem-test/', 'rxsem-test-counter/'),
      faults: { kill: 2, pause: 3, blackhole: 2, slow: 2, 'agent-restart': 1 },
      faultMs: COUNTER_SECONDS * 1000,
      quietMs: 25_000,
      ttlMs: { library: 10_000, 'consul-lock': 15_000 },
    })
    assertNemesis(t, result)
  } finally {
    await cluster?.stop()
  }
}
