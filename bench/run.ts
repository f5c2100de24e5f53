// `npm run bench`: every figure of bench/results.md in one run, on one machine, against one real
// Consul agent started here and stopped at the end. Prints the tables and writes bench/results.md
// and docs/bench-handover.svg. BENCH_QUICK=1 for a smoke run; BENCH_ONLY=scale,exclusive (say) runs
// only those steps and writes no file; see bench/config.ts.
import { execFileSync } from 'node:child_process'
import { cpus, loadavg, release, totalmem, type } from 'node:os'
import {
  consulBin,
  startAgent,
  startClientAgent,
  startCluster,
  type ConsulAgent,
  type ConsulCluster,
} from '../test/support/consul-agent.js'
import {
  consulLock,
  processCosts,
  rxsemAvailable,
  rxsemBin,
  rxsemBinPath,
  rxsemRun,
  rxsemRunLeader,
  startupsMs,
  type CliImplementation,
} from './children.js'
import { anatomyRun, withLoggingAgent, type AnatomyRun } from './anatomy.js'
import { benchConfig, type BenchStep } from './config.js'
import { cliContention, libraryContention } from './contention.js'
import { measureDecide } from './decide.js'
import { measureDefaultClient } from './default-client.js'
import { measureExclusiveKeys } from './exclusive-keys.js'
import { measureFloor } from './floor.js'
import { cliHandovers, libraryHandovers, type Pace } from './handover.js'
import { measureImportCost } from './import-cost.js'
import { measureJobs, measureJobsFair, measureJobsFleet } from './jobs.js'
import { cliPartitionTrial, libraryPartitionTrial } from './partition.js'
import {
  CONSUL_LOCK,
  DEFAULT_CLIENT,
  measureReplicas,
  SHARED_CLIENT,
  type ReplicaImplementation,
  type ReplicasTopology,
} from './replicas.js'
import { writeReport } from './report.js'
import {
  measured,
  type BenchResults,
  type Machine,
  type NotMeasured,
  type PartitionRun,
} from './results.js'
import { measureScale, type ScaleResult } from './scale.js'
import { measureTelemetryCost } from './telemetry-cost.js'

const started = performance.now()
const config = benchConfig()
const on = (step: BenchStep): boolean => config.steps.has(step)
/** The figure of a step that BENCH_ONLY left out. */
const notRun = (implementation: string): NotMeasured => ({
  implementation,
  notMeasured: `not run (BENCH_ONLY=${process.env['BENCH_ONLY'] ?? ''})`,
})
const log = (line: string): void =>
  void process.stderr.write(
    `[bench ${((performance.now() - started) / 1000).toFixed(0)}s] ${line}\n`,
  )

/** Where a run's requests went (its proxies' counts), for reading a req/acq figure. */
function logRequestKinds(kinds: ReadonlyMap<string, number>, acquisitions: number): void {
  const perAcquisition = [...kinds]
    .sort((a, b) => b[1] - a[1])
    .map(([kind, count]) => `${kind} ${(count / Math.max(1, acquisitions)).toFixed(2)}`)
  log(`  requests per acquisition by kind: ${perAcquisition.join('; ')}`)
}

/** A figure that fails is reported as not measured with its error, and the run goes on. */
async function attempt<T extends object>(
  what: string,
  implementation: string,
  run: () => Promise<T>,
  limit?: number,
): Promise<T | NotMeasured> {
  log(`${what}: ${implementation}${limit === undefined ? '' : ` limit ${limit}`}`)
  try {
    return await run()
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    log(`${what} ${implementation} failed: ${message}`)
    return {
      implementation,
      ...(limit === undefined ? {} : { limit }),
      notMeasured: `failed: ${message}`,
    }
  }
}

function machine(): Machine {
  let consul = 'unknown'
  try {
    consul = execFileSync(consulBin(), ['version'], { encoding: 'utf8' }).split('\n')[0] ?? consul
  } catch {
    // reported as unknown
  }
  return {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memoryGb: totalmem() / 1024 ** 3,
    node: process.version,
    consul,
    os: `${type()} ${release()}`,
    date: new Date().toISOString(),
    loadAverage: loadavg(),
  }
}

async function main(): Promise<void> {
  const agent: ConsulAgent = await startAgent()
  try {
    const addr = agent.addr
    const clis: CliImplementation[] = []
    const skipped: { implementation: string; notMeasured: string }[] = []
    if (!config.cli) {
      skipped.push({ implementation: rxsemRun.name, notMeasured: 'BENCH_NO_CLI=1' })
      skipped.push({ implementation: consulLock.name, notMeasured: 'BENCH_NO_CLI=1' })
    } else {
      clis.push(consulLock)
      if (rxsemAvailable()) clis.push(rxsemRun)
      else
        skipped.push({
          implementation: rxsemRun.name,
          notMeasured: `the built bin ${rxsemBinPath} does not run (npm run build)`,
        })
    }
    // rxsem's start-up and a bare node's, 20 runs each in turns (target: at most 2x node's).
    const [rxsemStartupMs, nodeStartupMs] =
      on('startup') && clis.includes(rxsemRun)
        ? startupsMs(
            [
              [...rxsemBin, 'run', '--help'],
              [process.execPath, '-e', '0'],
            ],
            20,
          )
        : []

    // What one acquisition's process costs, uncontended (limit 3, the command `true`), in turns.
    const costPrefix = 'rxsem-bench/process-cost'
    const costed: [string, readonly string[]][] = [
      ...(clis.includes(rxsemRun)
        ? [
            [
              rxsemRun.name,
              [
                ...rxsemBin,
                'run',
                '--limit',
                '3',
                '--prefix',
                costPrefix,
                '--http-addr',
                addr,
                '--',
                'true',
              ],
            ] as [string, readonly string[]],
          ]
        : []),
      ...(clis.includes(consulLock)
        ? [
            [
              consulLock.name,
              [consulBin(), 'lock', '-n=3', `-http-addr=${addr}`, costPrefix, 'true'],
            ] as [string, readonly string[]],
          ]
        : []),
      ['node -e 0', [process.execPath, '-e', '0']],
    ]
    const costs = on('process-cost')
      ? processCosts(
          costed.map(([, argv]) => argv),
          config.quick ? 5 : 15,
        )
      : undefined
    const processCost = costs?.map((cost, i) => ({ implementation: costed[i]?.[0] ?? '', ...cost }))

    // What loading the library and holding one slot cost a process, against a bare node (3c).
    const importCost = on('import')
      ? await attempt(`import (${config.importRuns} rounds)`, 'library', () =>
          measureImportCost(addr, config.importRuns),
        )
      : notRun('library')

    const floor = on('floor')
      ? await attempt('floor', 'consul', () => measureFloor(addr, config.floorSamples))
      : notRun('consul')
    if (on('decide')) log('decide')
    const decide = on('decide') ? measureDecide(config.quick) : []

    const paceOf = (implementation: string, limit: number): Pace => {
      if (implementation === rxsemRun.name || implementation === rxsemRunLeader.name) {
        // Each rxsem run starts node (a fraction of a second, more under load); hold long enough that the
        // restarts do not saturate the CPU, and keep enough contenders queued meanwhile.
        const startup = 2 * (rxsemStartupMs ?? 1000)
        return { readyMs: 100, startupMs: startup, holdMs: limit === 1 ? 1500 : 2500 }
      }
      if (implementation === consulLock.name) return { readyMs: 100, startupMs: 100, holdMs: 500 }
      return { readyMs: 150, startupMs: 0, holdMs: 300 }
    }
    const handover = []
    for (const limit of on('handover') ? [1, 3] : []) {
      handover.push(
        await attempt(
          'handover',
          'library',
          () => libraryHandovers(addr, limit, config.handovers, paceOf('library', limit)),
          limit,
        ),
      )
      // At limit 1 consul lock -n runs Consul's Lock recipe, the lock of rxsem run --leader.
      const leader = limit === 1 && clis.includes(rxsemRun) ? [rxsemRunLeader] : []
      for (const cli of [...clis, ...leader]) {
        handover.push(
          await attempt(
            'handover',
            cli.name,
            () => cliHandovers(cli, addr, limit, config.handovers, paceOf(cli.name, limit)),
            limit,
          ),
        )
      }
    }
    if (on('handover')) handover.push(...skipped)

    // Table 2b: the CLIs' handovers at limit 1 again, on an agent of their own that logs every
    // request, each split at the agent into exit → release → acquire → start.
    const anatomy: (AnatomyRun | NotMeasured)[] = []
    const anatomyClis = clis.includes(rxsemRun) ? [...clis, rxsemRunLeader] : clis
    if (on('anatomy') && anatomyClis.length > 0) {
      const agentRun = await attempt('anatomy: an agent with a debug log', 'consul', () =>
        withLoggingAgent(async (logging, requests) => {
          for (const cli of anatomyClis) {
            const run = await attempt(
              `anatomy (${config.anatomyHandovers} handovers)`,
              cli.name,
              () =>
                anatomyRun(logging, requests, cli, config.anatomyHandovers, paceOf(cli.name, 1)),
              1,
            )
            anatomy.push(run)
            if (measured(run)) {
              const unsplit = Object.entries(run.unsplit)
              log(
                `  ${run.splits.length} of ${run.handovers} split${unsplit.length === 0 ? '' : `; not split: ${unsplit.map(([why, n]) => `${n} ${why}`).join(', ')}`}`,
              )
            }
          }
          return { runs: anatomyClis.length }
        }),
      )
      if (!measured(agentRun))
        for (const cli of anatomyClis)
          anatomy.push({ implementation: cli.name, limit: 1, notMeasured: agentRun.notMeasured })
    }
    if (on('anatomy')) anatomy.push(...skipped)

    const contention = on('contention')
      ? [await attempt('contention', 'library', () => libraryContention(addr, config.contention))]
      : []
    for (const cli of on('contention') ? clis : []) {
      contention.push(
        await attempt('contention', cli.name, () => cliContention(cli, addr, config.contention)),
      )
    }
    if (on('contention')) contention.push(...skipped)
    // The single-key lock (Consul's Lock recipe): consul lock -n 1 and rxsem run --leader.
    const leaderClis = clis.includes(rxsemRun) ? [consulLock, rxsemRunLeader] : clis
    const leaderContention = []
    for (const cli of on('contention') ? leaderClis : []) {
      const run = await attempt('leader contention', cli.name, () =>
        cliContention(cli, addr, config.leaderContention),
      )
      if (measured(run)) logRequestKinds(run.requestsByKind, run.acquisitions)
      leaderContention.push(run)
    }
    if (on('contention')) leaderContention.push(...skipped)

    // The implementations' trials run side by side (separate prefixes and proxies): a trial is
    // mostly waiting for TTLs, and this keeps the bench within its time budget.
    const partitionImpls: {
      name: string
      ttl: string
      trial: () => Promise<PartitionRun['trials'][number]>
    }[] = [
      { name: 'library', ttl: '10s', trial: () => libraryPartitionTrial(addr, '10s') },
      ...clis.map((cli) => ({
        name: cli.name,
        ttl: cli === consulLock ? '15s (fixed)' : '10s',
        trial: () => cliPartitionTrial(cli, addr, '10s'),
      })),
    ]
    const trials = new Map<string, PartitionRun['trials'][number][]>(
      partitionImpls.map((p) => [p.name, []]),
    )
    const failures = new Map<string, string>()
    for (let t = 0; on('partition') && t < config.partitionTrials; t++) {
      log(`partition trial ${t + 1}/${config.partitionTrials}`)
      await Promise.all(
        partitionImpls.map(async (p) => {
          try {
            trials.get(p.name)?.push(await p.trial())
          } catch (error) {
            failures.set(p.name, error instanceof Error ? error.message : String(error))
          }
        }),
      )
    }
    const partition: (PartitionRun | NotMeasured)[] = (on('partition') ? partitionImpls : []).map(
      (p) => {
        const done = trials.get(p.name) ?? []
        const failure = failures.get(p.name)
        if (done.length === 0)
          return { implementation: p.name, notMeasured: `failed: ${failure ?? '?'}` }
        return { implementation: p.name, ttl: p.ttl, trials: done }
      },
    )
    if (on('partition')) partition.push(...skipped)

    const scale: (ScaleResult | NotMeasured)[] = []
    for (const setup of on('scale') ? config.scale : []) {
      log(`scale: ${setup.perPrefix * setup.prefixes} contenders on ${setup.prefixes} prefix(es)`)
      scale.push(await attempt('scale', 'library', () => measureScale(addr, setup)))
    }

    const t = config.telemetryCost
    if (on('telemetry')) log(`telemetry: ${t.contenders} contenders, ${t.rounds} round(s)`)
    const telemetryCost = on('telemetry')
      ? await attempt('telemetry cost', 'library', () => measureTelemetryCost(addr, t, log))
      : notRun('library')

    if (on('default-client')) log('default client: 200 contenders without a consul option')
    const defaultClient = on('default-client')
      ? await attempt('default client', 'library', () => measureDefaultClient(addr))
      : notRun('library')

    // Figure 6: one contender per process, on the one agent, then on 3 servers + 2 client agents;
    // the library both ways (a client shared by the tenures, the default client), beside
    // consul lock -n in the same run.
    const replicas: BenchResults['replicas'][number][] = []
    const everyReplicaImpl: readonly ReplicaImplementation[] = [
      SHARED_CLIENT,
      DEFAULT_CLIENT,
      CONSUL_LOCK,
    ]
    const replicaImpls = everyReplicaImpl.filter(
      (impl) => impl !== CONSUL_LOCK || clis.includes(consulLock),
    )
    const replicaRuns = async (
      topology: ReplicasTopology,
      counts: readonly number[],
    ): Promise<void> => {
      for (const n of counts) {
        for (const impl of replicaImpls) {
          const run = await attempt(`replicas (${topology.name}, ${n})`, impl, () =>
            measureReplicas(impl, topology, { ...config.replicas, replicas: n }),
          )
          replicas.push(measured(run) ? run : { ...run, topology: topology.name, replicas: n })
          if (measured(run)) logRequestKinds(run.requestsByKind, run.acquisitions)
        }
      }
    }
    if (on('replicas'))
      await replicaRuns({ name: 'one agent', agents: [addr] }, config.replicas.counts)
    if (on('replicas') && config.replicas.clusterCounts.length > 0) {
      const fleet = '3 servers + 2 client agents'
      log('replicas: starting 3 servers and 2 client agents')
      let cluster: ConsulCluster | undefined
      const clientAgents: ConsulAgent[] = []
      try {
        cluster = await startCluster(3)
        for (let i = 0; i < 2; i++) clientAgents.push(await startClientAgent(cluster))
        await replicaRuns(
          { name: fleet, agents: clientAgents.map((a) => a.addr) },
          config.replicas.clusterCounts,
        )
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error)
        log(`replicas: the cluster failed: ${message}`)
        for (const n of config.replicas.clusterCounts) {
          for (const impl of replicaImpls) {
            if (
              !replicas.some(
                (x) => x.topology === fleet && x.replicas === n && x.implementation === impl,
              )
            )
              replicas.push({
                implementation: impl,
                topology: fleet,
                replicas: n,
                notMeasured: `failed: ${message}`,
              })
          }
        }
      } finally {
        await Promise.all(clientAgents.map((a) => a.stop()))
        await cluster?.stop()
      }
    }

    // Figure 7: pooled withSlot jobs; each size ends by its deadline at the latest.
    const jobs: NonNullable<BenchResults['jobs']>[number][] = []
    for (const setup of on('jobs') ? config.jobs : []) {
      const run = await attempt(
        `jobs: ${setup.jobs} ${setup.floor === true ? 'jobs under a limit kept in the process (the floor)' : 'withSlot jobs in one process'}${setup.v8Flags ? ` (control: node ${setup.v8Flags.join(' ')})` : ''} (deadline ${setup.deadlineMs / 1000} s)`,
        'library',
        () => measureJobs(addr, setup),
        setup.limit,
      )
      jobs.push(
        measured(run)
          ? run
          : { ...run, jobs: setup.jobs, v8Flags: setup.v8Flags, floor: setup.floor },
      )
      if (measured(run))
        log(
          `  ${run.done} of ${run.jobs} done in ${(run.wallMs / 1000).toFixed(1)} s, ${run.done > 0 ? run.writesPerJob.toFixed(2) : '—'} writes/job, peak sessions ${run.peakSessions}`,
        )
    }
    const f = config.jobsFair
    const jobsFair = on('jobs-fair')
      ? await attempt(
          `jobs-fair: ${f.bigJobs} and ${f.smallJobs} jobs in two processes`,
          'library',
          () => measureJobsFair(addr, f),
          f.limit,
        )
      : notRun('library')

    // Figure 7c: several processes sharing one limit, each beside one process with the same total.
    const jobsFleet: NonNullable<BenchResults['jobsFleet']>[number][] = []
    for (const setup of on('jobs-fleet') ? config.jobsFleet : []) {
      const { processes, jobsPerProcess, holdMs, apart } = setup
      const run = await attempt(
        `jobs-fleet: ${processes} process(es) × ${jobsPerProcess} jobs of ${holdMs} ms${apart === true ? ', each on a prefix of its own' : ''} (deadline ${setup.deadlineMs / 1000} s)`,
        'library',
        () => measureJobsFleet(addr, setup),
        setup.limit,
      )
      jobsFleet.push(measured(run) ? run : { ...run, processes, jobsPerProcess, holdMs, apart })
      if (measured(run))
        log(
          `  ${run.done} of ${run.jobs} done in ${(run.spanMs / 1000).toFixed(1)} s, ${run.jobsPerSecond.toFixed(0)} jobs/s, ${run.done > 0 ? run.writesPerJob.toFixed(2) : '—'} writes/job, at most ${run.mostAtOnce} at once`,
        )
    }

    // Last: it leaves the agent with as many deleted keys as it served.
    const exclusiveKeys = on('exclusive')
      ? await attempt(`exclusive over ${config.exclusiveKeys} distinct task keys`, 'library', () =>
          measureExclusiveKeys(addr, config.exclusiveKeys),
        )
      : notRun('library')

    const results: BenchResults = {
      machine: machine(),
      quick: config.quick,
      only: config.partial ? [...config.steps] : undefined,
      durationS: (performance.now() - started) / 1000,
      rxsemStartupMs,
      nodeStartupMs,
      processCost,
      importCost,
      floor,
      handover,
      anatomy,
      contention,
      contentionSetup: config.contention,
      leaderContention,
      leaderContentionSetup: config.leaderContention,
      partition,
      scale,
      defaultClient,
      exclusiveKeys,
      telemetryCost,
      replicas,
      replicasSetup: config.replicas,
      decide,
      jobs,
      jobsFair,
      jobsFleet,
    }
    writeReport(results)
  } finally {
    await agent.stop()
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error)
    process.exit(1)
  },
)
