// The nemesis suite's runs, each in a test file of its own (one run takes most of a file's time
// limit): the mixed workload on one server or a 3-server cluster, and the lost-update workload.
//
// Mixed: library actors and `consul lock -n 2` loops share a prefix (limit 2) and act on it while
// they hold, under kills, pauses, partitions, slow networks, server restarts that keep or lose
// Consul's state (one server) or a leader failover (cluster), and operator deletes of `.lock` and
// of the whole prefix.
//
// Lost updates: library actors (limit 1) read a counter in Consul KV and write it back incremented while they
// hold, under long pauses, partitions and kills: with a plain write
// after a check of the guard made before the work (`slot.isHolding()`, then the work, then the
// write: what most code does), or with `slot.fencedTxn(...)`, which Consul commits only while the
// writer's session still holds its key.
import type { TestContext } from 'node:test'
import { startCluster, uniquePrefix, type ConsulCluster } from './consul-agent.js'
import { assertNemesis, nemesisSeconds, nemesisSeed } from './nemesis-assert.js'
import { runNemesis } from './nemesis.js'

/** How long the counter runs inject faults by default (NEMESIS_SECONDS overrides it). */
export const COUNTER_SECONDS = nemesisSeconds(60)

/**
 * One seeded counter run on one Consul server, checked by `assertNemesis`. With `jobsPerActor`,
 * the pooled-jobs workload ('counter-jobs'): each library actor is a process running that many
 * withSlot jobs at once, each a fenced CAS increment or three of the counter.
 */
export async function counterRun(
  t: TestContext,
  workload: 'counter-fenced' | 'counter-unfenced' | 'counter-jobs',
  seed: number,
  jobsPerActor?: number,
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
      libraryActors: 4,
      consulLockActors: 0,
      workload,
      ...(jobsPerActor === undefined ? {} : { jobsPerActor }),
      counterKey: prefix.replace('rxsem-test/', 'rxsem-test-counter/'),
      // The faults a fence is for: a holder frozen past 2 × TTL (Consul has ended its session and
      // another holder has written by then), or cut off, while at its work (with pooled jobs,
      // while its jobs hold and wait); two actors at most, so that the others hold and write
      // meanwhile.
      faults: { pause: 3, blackhole: 1, kill: 1 },
      pauseMs: [20_000, 40_000],
      maxFaulted: 2,
      faultMs: COUNTER_SECONDS * 1000,
      quietMs: 25_000,
      ttlMs: { library: 10_000, 'consul-lock': 15_000 },
    })
    assertNemesis(t, result)
  } finally {
    await cluster?.stop()
  }
}

/** How long the mixed runs inject faults by default (NEMESIS_SECONDS overrides it). */
export const MIXED_SECONDS = nemesisSeconds(45)

/** One seeded mixed run on `servers` Consul servers (3: with leader failovers), checked. */
export async function mixedRun(t: TestContext, servers: 1 | 3, seed: number): Promise<void> {
  const cluster = await startCluster(servers)
  try {
    const result = await runNemesis({
      name: servers === 1 ? 'single' : 'cluster',
      seed: nemesisSeed(seed),
      prefix: uniquePrefix(`nemesis-${servers === 1 ? 'single' : 'cluster'}`),
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
        ...(servers === 1 ? { 'agent-restart': 1, 'state-loss': 1 } : { 'leader-failover': 1 }),
        'delete-lock': 1,
        'delete-prefix': 1,
      },
      faultMs: MIXED_SECONDS * 1000,
      quietMs: 35_000,
      ttlMs: { library: 10_000, 'consul-lock': 15_000 },
    })
    assertNemesis(t, result)
  } finally {
    await cluster.stop()
  }
}

/** How long the weighted run injects faults by default (NEMESIS_SECONDS overrides it). */
export const WEIGHTED_SECONDS = nemesisSeconds(30)

/**
 * One seeded run on one server whose library actors take several permits and the read-write
 * lock (two readers, a writer of every slot, one of two permits) beside a `consul lock -n` loop,
 * checked by the permits each acts under.
 */
export async function weightedRun(t: TestContext, seed: number): Promise<void> {
  const cluster = await startCluster(1)
  try {
    const result = await runNemesis({
      name: 'weighted',
      seed: nemesisSeed(seed),
      prefix: uniquePrefix('nemesis-weighted'),
      limit: 4,
      servers: cluster.servers,
      leader: () => cluster.leader(),
      libraryActors: 4,
      locks: ['read', 'read', 'write', 'permits:2'],
      consulLockActors: 1,
      workload: 'tick',
      faults: { kill: 3, pause: 3, blackhole: 2, slow: 1, 'agent-restart': 1, 'delete-lock': 1 },
      faultMs: WEIGHTED_SECONDS * 1000,
      quietMs: 35_000,
      ttlMs: { library: 10_000, 'consul-lock': 15_000 },
    })
    assertNemesis(t, result)
  } finally {
    await cluster.stop()
  }
}
