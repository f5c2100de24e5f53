// Turns a run's results into the printed tables, bench/results.md (tables, targets with
// PASS/MISS, the machine) and docs/bench-handover.svg.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { renderChart, type Series } from './chart.js'
import { repoRoot } from './children.js'
import { HANDOVER_READY_MS, type ContentionRun, type ContentionSetup } from './contention.js'
import type { AnatomyRun } from './anatomy.js'
import type { ExclusiveKeysResult } from './exclusive-keys.js'
import type { HandoverRun } from './handover.js'
import type { ImportCostResult, ProcessFootprint } from './import-cost.js'
import type { FleetShare, JobsFairRun, JobsFleetRun, JobsRun } from './jobs.js'
import { writesOf } from './write-counts.js'
import {
  CONSUL_LOCK,
  DEFAULT_CLIENT,
  SHARED_CLIENT,
  STARTUP_TIMEOUT_MS,
  type ReplicasRun,
} from './replicas.js'
import {
  measured,
  type BenchResults,
  type JobsFleetNotMeasured,
  type JobsNotMeasured,
  type NotMeasured,
  type PartitionRun,
} from './results.js'
import type { ScaleResult } from './scale.js'
import type { TelemetryCostResult } from './telemetry-cost.js'
import { summarize } from './stats.js'

type Table = {
  readonly title: string
  readonly head: readonly string[]
  readonly rows: readonly (readonly string[])[]
  readonly notes?: readonly string[]
}

/** A time in ms; '—' when not measured (NaN, which a worker's JSON answer turns into null). */
const ms = (v: number | null | undefined): string =>
  typeof v !== 'number' || Number.isNaN(v) ? '—' : v >= 100 ? v.toFixed(0) : v.toFixed(1)
const ratio = (v: number): string => (Number.isFinite(v) ? `${v.toFixed(2)}×` : '—')
const colors: Readonly<Record<string, string>> = {
  library: '#1f77b4',
  'rxsem run': '#2ca02c',
  'consul lock -n': '#d62728',
}
const order = ['library', 'rxsem run', 'consul lock -n']

function text(table: Table): string {
  const all = [table.head, ...table.rows]
  const widths = table.head.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)))
  const line = (r: readonly string[]): string =>
    r.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')
  return [
    `\n${table.title}`,
    line(table.head),
    widths.map((w) => '-'.repeat(w)).join('-+-'),
    ...table.rows.map(line),
    ...(table.notes ?? []).map((n) => `  ${n}`),
  ].join('\n')
}

function markdown(table: Table): string {
  const line = (r: readonly string[]): string =>
    `| ${r.map((c) => c.replace(/\|/g, '\\|')).join(' | ')} |`
  return [
    `### ${table.title}`,
    '',
    line(table.head),
    `|${table.head.map(() => '---').join('|')}|`,
    ...table.rows.map(line),
    '',
    ...(table.notes ?? []).map((n) => `- ${n}`),
    '',
  ].join('\n')
}

interface Target {
  readonly what: string
  readonly implementation: string
  readonly value: string
  readonly threshold: string
  /** undefined: could not be judged (a figure was not measured). */
  readonly pass: boolean | undefined
}

const verdict = (pass: boolean | undefined): string =>
  pass === undefined ? 'NOT MEASURED' : pass ? 'PASS' : 'MISS'

export function buildTables(r: BenchResults): { tables: Table[]; targets: Target[] } {
  const tables: Table[] = []
  const targets: Target[] = []
  const floor = measured(r.floor) ? r.floor : undefined

  tables.push({
    title: '1. Floor (one agent, loopback, library HTTP client)',
    head: ['figure', 'n', 'p50 ms', 'p95 ms'],
    rows: floor
      ? [
          [
            'CAS write (PUT ?cas=)',
            String(floor.casWrite.n),
            ms(floor.casWrite.p50),
            ms(floor.casWrite.p95),
          ],
          [
            'wake-up (write sent → blocking list answered)',
            String(floor.wakeUp.n),
            ms(floor.wakeUp.p50),
            ms(floor.wakeUp.p95),
          ],
          [
            'floor handover = 2 writes + 1 wake-up',
            '',
            ms(floor.handoverP50),
            ms(floor.handoverP95),
          ],
        ]
      : [['not measured', (r.floor as NotMeasured).notMeasured, '', '']],
  })

  const handovers = r.handover.filter((h): h is HandoverRun => measured(h))
  const consulP50 = (limit: number): number | undefined => {
    const run = handovers.find((h) => h.implementation === 'consul lock -n' && h.limit === limit)
    return run && run.samples.length ? summarize(run.samples).p50 : undefined
  }
  tables.push({
    title: '2. Handover: holder releases → next waiter holds',
    head: [
      'implementation',
      'limit',
      'n',
      'dropped',
      'contenders',
      'hold ms',
      'p50 ms',
      'p95 ms',
      'p50 / floor',
      'p95 / floor',
      'p50 / consul lock',
    ],
    rows: r.handover.map((h) => {
      if (!measured(h))
        return [
          h.implementation,
          String(h.limit ?? ''),
          '—',
          '',
          '',
          '',
          'not measured',
          h.notMeasured,
          '',
          '',
          '',
        ]
      const s = summarize(h.samples)
      const c = consulP50(h.limit)
      return [
        h.implementation,
        String(h.limit),
        String(s.n),
        String(h.dropped),
        String(h.contenders),
        String(h.holdMs),
        ms(s.p50),
        ms(s.p95),
        floor ? ratio(s.p50 / floor.handoverP50) : '—',
        floor ? ratio(s.p95 / floor.handoverP95) : '—',
        c ? ratio(s.p50 / c) : '—',
      ]
    }),
    notes: [
      "Release = library: close() called; CLIs: the child's own last timestamp before it exits. Holds = holding$ true / the child's first timestamp.",
      'dropped = handovers whose new holder was not yet up and contending before the release (a CLI that had not printed its "contending" line: rxsem --verbose "watch connected", consul lock -verbose "Attempting lock acquisition"), so its process start-up would count as handover; not counted.',
      "consul lock -n 1 runs Consul's Lock recipe (one key), as rxsem run --leader does; the library and rxsem run run the semaphore recipe at limit 1.",
    ],
  })
  for (const impl of ['library', 'rxsem run']) {
    for (const limit of [1, 3]) {
      const run = handovers.find((h) => h.implementation === impl && h.limit === limit)
      const p50 = run && run.samples.length ? summarize(run.samples).p50 : undefined
      const c = consulP50(limit)
      targets.push({
        what: `handover p50 ≤ 0.7 × consul lock -n (limit ${limit})`,
        implementation: impl,
        value:
          p50 === undefined || c === undefined
            ? '—'
            : `${ms(p50)} ms vs ${ms(c)} ms (${ratio(p50 / c)})`,
        threshold: '≤ 0.70×',
        pass: p50 === undefined || c === undefined ? undefined : p50 <= 0.7 * c,
      })
      targets.push({
        what: `handover p50 ≤ 1.5 × floor handover (limit ${limit})`,
        implementation: impl,
        value:
          p50 === undefined || !floor
            ? '—'
            : `${ms(p50)} ms vs ${ms(floor.handoverP50)} ms (${ratio(p50 / floor.handoverP50)})`,
        threshold: '≤ 1.50×',
        pass: p50 === undefined || !floor ? undefined : p50 <= 1.5 * floor.handoverP50,
      })
    }
  }

  if (r.anatomy !== undefined && r.anatomy.length > 0) tables.push(anatomyFigure(r.anatomy))

  const setup = r.contentionSetup
  const contention = r.contention.filter((c): c is ContentionRun => measured(c))
  tables.push({
    title: `3. Contention: ${setup.contenders} contenders, limit ${setup.limit}, hold ${setup.holdMs} ms, ${setup.acquisitions} acquisitions`,
    head: [
      'implementation',
      'acq',
      'requests',
      'req/acq',
      'CAS attempts',
      'CAS lost',
      'lost %',
      'acq/s',
      'wait p50 ms',
      'wait p99 ms',
      'wait max ms',
      'queued wait p50 / p99 ms',
      'Jain',
      'peak holders',
    ],
    rows: r.contention.map((c) => {
      if (!measured(c))
        return [c.implementation, 'not measured', c.notMeasured, ...Array<string>(11).fill('')]
      return [
        c.implementation,
        String(c.acquisitions),
        String(c.requests),
        c.requestsPerAcquisition.toFixed(1),
        String(c.casAttempts),
        String(c.casLost),
        ((100 * c.casLost) / Math.max(1, c.casAttempts)).toFixed(1),
        c.perSecond.toFixed(1),
        ms(c.wait.p50),
        ms(c.wait.p99),
        ms(c.wait.max),
        `${ms(c.queuedWait.p50)} / ${ms(c.queuedWait.p99)}`,
        c.fairness.toFixed(3),
        String(c.peakHolders),
      ]
    }),
    notes: [
      "library: all contenders in one process sharing one client (one watch for the prefix). rxsem run: one process per acquisition, i.e. the library's per-process figure.",
      'Every request of every contender passes one fault proxy in pass mode, which counts them. CAS attempts = writes of .lock (PUT /v1/txn with a cas for ours, not the join; PUT .lock?cas= for consul lock); lost = those the agent refused (a transaction rolled back with 409, a PUT ?cas= answered false), as the proxy saw the answers.',
      `Wait = wanting a slot (semaphore created / process spawned) → holding; for the CLIs it includes process start-up${r.rxsemStartupMs === undefined ? '' : ` (the built rxsem: ${ms(r.rxsemStartupMs)} ms to print run --help${r.nodeStartupMs === undefined ? '' : `, a bare node -e 0: ${ms(r.nodeStartupMs)} ms`})`}. Queued wait starts when the process printed that it is contending (no start-up). Jain's index over each contender's mean wait (from wanting).`,
    ],
  })
  if (r.leaderContention !== undefined && r.leaderContentionSetup !== undefined) {
    const leader = leaderContentionFigure(r.leaderContention, r.leaderContentionSetup)
    tables.push(leader.table)
    targets.push(...leader.targets)
  }
  if (r.processCost !== undefined) {
    const bare = r.processCost.find((c) => c.implementation === 'node -e 0')
    tables.push({
      title: "3b. One acquisition's process: CPU and memory from start to exit",
      head: ['process', 'CPU ms', 'peak RSS MB', 'CPU vs node -e 0'],
      rows: r.processCost.map((c) => [
        c.implementation,
        ms(c.cpuMs),
        c.rssMb.toFixed(0),
        bare === undefined ? '—' : ratio(c.cpuMs / bare.cpuMs),
      ]),
      notes: [
        'Uncontended: acquire a slot of limit 3, run `true`, release, exit (rxsem run --limit 3, consul lock -n=3); a bare node for scale. User + system CPU of the process and its children from the `times` builtin of bash (to the millisecond), the peak RSS from GNU time, median of the runs, taken in turns. Under churn (one process per acquisition, table 3) this CPU is what the restarts cost the machine.',
      ],
    })
    const run = r.processCost.find((c) => c.implementation === 'rxsem run')
    targets.push({
      what: 'one uncontended acquisition: CPU ≤ 1.6 × a bare node -e 0',
      implementation: 'rxsem run',
      value:
        run === undefined || bare === undefined
          ? '—'
          : `${ms(run.cpuMs)} ms vs ${ms(bare.cpuMs)} ms (${ratio(run.cpuMs / bare.cpuMs)})`,
      threshold: '≤ 1.60×',
      pass: run === undefined || bare === undefined ? undefined : run.cpuMs <= 1.6 * bare.cpuMs,
    })
  }
  const load = importFigure(r.importCost)
  tables.push(load.table)
  targets.push(...load.targets)
  const { rxsemStartupMs: startup, nodeStartupMs: bareNode } = r
  targets.push({
    what: 'start-up (run --help, median of 20) ≤ 2 × a bare node -e 0',
    implementation: 'rxsem run',
    value:
      startup === undefined || bareNode === undefined
        ? '—'
        : `${ms(startup)} ms vs ${ms(bareNode)} ms (${ratio(startup / bareNode)})`,
    threshold: '≤ 2.00×',
    pass: startup === undefined || bareNode === undefined ? undefined : startup <= 2 * bareNode,
  })
  const consulContention = contention.find((c) => c.implementation === 'consul lock -n')
  for (const impl of ['library', 'rxsem run']) {
    const c = contention.find((x) => x.implementation === impl)
    targets.push({
      what: 'requests per acquisition ≤ ½ × consul lock -n',
      implementation: impl,
      value:
        c && consulContention
          ? `${c.requestsPerAcquisition.toFixed(1)} vs ${consulContention.requestsPerAcquisition.toFixed(1)} (${ratio(c.requestsPerAcquisition / consulContention.requestsPerAcquisition)})`
          : '—',
      threshold: '≤ 0.50×',
      pass:
        c && consulContention
          ? c.requestsPerAcquisition <= 0.5 * consulContention.requestsPerAcquisition
          : undefined,
    })
    targets.push({
      what: 'lost CAS attempts < 5 %',
      implementation: impl,
      value: c
        ? `${c.casLost} of ${c.casAttempts} (${((100 * c.casLost) / Math.max(1, c.casAttempts)).toFixed(1)} %)`
        : '—',
      threshold: '< 5 %',
      pass: c ? c.casLost < 0.05 * c.casAttempts : undefined,
    })
    targets.push({
      what: "Jain's fairness index of waits > 0.9",
      implementation: impl,
      value: c ? c.fairness.toFixed(3) : '—',
      threshold: '> 0.9',
      pass: c ? c.fairness > 0.9 : undefined,
    })
  }

  const partitionRows: string[][] = []
  for (const p of r.partition) {
    if (!measured(p)) {
      partitionRows.push([p.implementation, '', '', 'not measured', p.notMeasured, ''])
      continue
    }
    p.trials.forEach((t, i) =>
      partitionRows.push([
        p.implementation,
        p.ttl,
        String(i + 1),
        t.stopMs === undefined
          ? `never (watched ${(t.watchedMs / 1000).toFixed(0)} s)`
          : ms(t.stopMs),
        t.takeoverMs === undefined ? 'none' : ms(t.takeoverMs),
        t.safe ? 'yes' : 'NO',
      ]),
    )
  }
  tables.push({
    title: "4. Loss detection under partition (limit 2; the holder's proxy blackholes at t0)",
    head: [
      'implementation',
      'TTL',
      'trial',
      'holder stops ms',
      'other takes over ms',
      'stopped first',
    ],
    rows: partitionRows,
    notes: [
      "Stop = library: holding$ false; CLIs: the holder's child gets SIGTERM (its trap writes the time). Takeover = the waiter holds / its child starts. Consul invalidates a session only after 2 × TTL.",
    ],
  })
  for (const impl of ['library', 'rxsem run']) {
    const p = r.partition.find((x): x is PartitionRun => measured(x) && x.implementation === impl)
    targets.push({
      what: 'under partition the holder stops before any takeover, every trial',
      implementation: impl,
      value: p ? `${p.trials.filter((t) => t.safe).length} of ${p.trials.length} trials` : '—',
      threshold: 'all',
      pass: p && p.trials.length ? p.trials.every((t) => t.safe) : undefined,
    })
  }

  const scales = r.scale.filter(measured)
  const onePrefix = (n: number): ScaleResult | undefined =>
    scales.find((x) => x.prefixes === 1 && x.contenders === n)
  const column = (x: ScaleResult | NotMeasured): string =>
    measured(x) ? `${x.contenders} on ${x.prefixes}` : `not measured: ${x.notMeasured}`
  const row = (label: string, cell: (x: ScaleResult) => string): string[] => [
    label,
    ...r.scale.map((x) => (measured(x) ? cell(x) : '—')),
  ]
  tables.push({
    title: '5a. Scale: contenders on one prefix, and over 10 prefixes, in one process, one client',
    head: ['figure', ...r.scale.map(column)],
    rows: [
      row('limit per prefix', (x) => String(x.limit)),
      row('time until all contending', (x) => `${ms(x.contendingMs)} ms`),
      row('time until, in addition, all slots held', (x) => `${ms(x.settleMs)} ms`),
      row('RSS added by the contenders', (x) => `${(x.rssMb - x.baselineRssMb).toFixed(1)} MB`),
      row('RSS added per contender', (x) => `${x.rssKbPerContender.toFixed(1)} KB`),
      row('live JS heap after a full GC (whole process)', (x) => `${x.heapMb.toFixed(1)} MB`),
      row(
        'live JS heap added per contender (after a full GC)',
        (x) => `${x.heapKbPerContender.toFixed(1)} KB`,
      ),
      row('live heap added per contender (heap snapshot)', (x) =>
        x.census ? `${x.census.liveKbPerContender.toFixed(1)} KB` : 'no snapshot',
      ),
      row('live RxJS subscribers per contender (heap snapshot)', (x) =>
        x.census
          ? `${x.census.subscribersPerContender.toFixed(1)} (${x.census.baselineSubscribers} → ${x.census.steadySubscribers})`
          : 'no snapshot',
      ),
      row('TCP sockets in the process', (x) => String(x.tcpSockets)),
      row('client connections seen by the proxy', (x) => String(x.proxyConnections)),
      row('long-poll connections per prefix', (x) => x.longPollsPerPrefix.toFixed(2)),
      row(
        'churn: acquisitions / prefix snapshots',
        (x) => `${x.churnAcquisitions} / ${x.churnSnapshots}`,
      ),
      row('CPU per release (whole process)', (x) =>
        Number.isNaN(x.cpuMsPerRelease)
          ? 'no release in the window'
          : `${x.cpuMsPerRelease.toFixed(1)} ms`,
      ),
      row('CPU per prefix snapshot', (x) => `${(x.cpuUsPerSnapshot / 1000).toFixed(1)} ms`),
      row('CPU per contender-snapshot', (x) => `${x.cpuUsPerContenderSnapshot.toFixed(1)} µs`),
      row('failed releases at the end', (x) => String(x.failedReleases)),
    ],
    notes: [
      "Churn: every holder releases 100 ms after it acquired and a new contender takes its place. CPU is the whole process during the churn (releases, new sessions, renewals, every contender's state updates) divided by the acquisitions (CPU per release) or by the blocking-list answers the proxy passed (per snapshot).",
      "RSS added: the worker's RSS once every contender waits or holds, minus its RSS before the first contender (the library's build loaded, as users run it).",
      'Per contender: what the contenders added to the worker (steady state minus before the first contender) / contenders. Heap after a full GC: process.memoryUsage().heapUsed. Heap snapshot (setups of at most 1,000 contenders): the sum of the self sizes of the objects in a V8 heap snapshot, which holds only live objects; subscribers: live objects of the classes Subscriber, SafeSubscriber and OperatorSubscriber (every RxJS 7 subscriber is one; operators make OperatorSubscribers, subscribe() a SafeSubscriber), counts before → at steady state in parentheses.',
    ],
  })
  const thousand = onePrefix(1000)
  const hundred = onePrefix(100)
  const tenThousand = r.scale.find((x) =>
    measured(x) ? x.prefixes === 1 && x.contenders === 10_000 : false,
  )
  targets.push(
    {
      what: '1,000 contenders on one prefix: all contending',
      implementation: 'library',
      value: thousand ? `${ms(thousand.contendingMs)} ms` : '—',
      threshold: '≤ 1 s',
      pass: thousand ? thousand.contendingMs <= 1000 : undefined,
    },
    {
      what: '1,000 contenders on one prefix: CPU per release',
      implementation: 'library',
      value: thousand ? `${thousand.cpuMsPerRelease.toFixed(1)} ms` : '—',
      threshold: '≤ 10 ms',
      pass: thousand ? thousand.cpuMsPerRelease <= 10 : undefined,
    },
    {
      what: '1,000 contenders on one prefix: RSS added',
      implementation: 'library',
      value: thousand ? `${(thousand.rssMb - thousand.baselineRssMb).toFixed(1)} MB` : '—',
      threshold: '≤ 40 MB',
      pass: thousand ? thousand.rssMb - thousand.baselineRssMb <= 40 : undefined,
    },
    {
      what: '10,000 contenders on one prefix: RSS added',
      implementation: 'library',
      value:
        tenThousand && measured(tenThousand)
          ? `${(tenThousand.rssMb - tenThousand.baselineRssMb).toFixed(1)} MB`
          : '—',
      threshold: '≤ 300 MB',
      pass:
        tenThousand && measured(tenThousand)
          ? tenThousand.rssMb - tenThousand.baselineRssMb <= 300
          : undefined,
    },
    {
      what: '10,000 contenders on one prefix: CPU per release',
      implementation: 'library',
      value:
        tenThousand && measured(tenThousand) ? `${tenThousand.cpuMsPerRelease.toFixed(1)} ms` : '—',
      threshold: '≤ 100 ms',
      pass: tenThousand && measured(tenThousand) ? tenThousand.cpuMsPerRelease <= 100 : undefined,
    },
    {
      what: '1,000 contenders on one prefix: live heap per contender (heap snapshot)',
      implementation: 'library',
      value: thousand?.census ? `${thousand.census.liveKbPerContender.toFixed(1)} KB` : '—',
      threshold: '≤ 8 KB',
      pass: thousand?.census ? thousand.census.liveKbPerContender <= 8 : undefined,
    },
    {
      what: '1,000 contenders on one prefix: live RxJS subscribers per contender',
      implementation: 'library',
      value: thousand?.census ? thousand.census.subscribersPerContender.toFixed(1) : '—',
      threshold: '≤ 6',
      pass: thousand?.census ? thousand.census.subscribersPerContender <= 6 : undefined,
    },
    {
      what: 'CPU per release, 1,000 contenders / 100 (at most linear growth)',
      implementation: 'library',
      value:
        thousand && hundred
          ? `${(thousand.cpuMsPerRelease / hundred.cpuMsPerRelease).toFixed(1)}x`
          : '—',
      threshold: '≤ 15x',
      pass:
        thousand && hundred ? thousand.cpuMsPerRelease / hundred.cpuMsPerRelease <= 15 : undefined,
    },
    {
      what: '10,000 contenders on one prefix run to the end',
      implementation: 'library',
      value: tenThousand
        ? measured(tenThousand)
          ? 'ran'
          : tenThousand.notMeasured
        : 'not in this run',
      threshold: 'figures reported',
      pass: tenThousand ? measured(tenThousand) : undefined,
    },
    {
      what: 'one long-poll connection per prefix, every setup',
      implementation: 'library',
      value: scales.map((x) => x.longPollsPerPrefix.toFixed(2)).join(' / ') || '—',
      threshold: '≤ 1',
      pass: scales.length ? scales.every((x) => x.longPollsPerPrefix <= 1) : undefined,
    },
  )

  const dc = measured(r.defaultClient) ? r.defaultClient : undefined
  tables.push({
    title: '5c. Contenders without a `consul` option share one default client',
    head: ['figure', 'value'],
    rows: dc
      ? [
          ['contenders in one process, one prefix, no `consul` option', String(dc.contenders)],
          ['long polls of the prefix in flight', String(dc.longPollsOnPrefix)],
          ['most connections open at once (proxy)', String(dc.peakConnections)],
          ['from "close all" to the process exiting by itself', `${ms(dc.exitedBySelfMs)} ms`],
        ]
      : [['not measured', (r.defaultClient as NotMeasured).notMeasured]],
    notes: [
      'The contenders run in a child process that reaches the agent through the fault proxy and never calls process.exit; the agent closes the 201st connection from one address (limits.http_max_conns_per_client).',
    ],
  })
  targets.push(
    {
      what: '200 contenders without `consul`: long polls of the prefix',
      implementation: 'library',
      value: dc ? String(dc.longPollsOnPrefix) : '—',
      threshold: '1',
      pass: dc ? dc.longPollsOnPrefix === 1 : undefined,
    },
    {
      what: '200 contenders without `consul`: connections at once',
      implementation: 'library',
      value: dc ? String(dc.peakConnections) : '—',
      threshold: '≤ 16',
      pass: dc ? dc.peakConnections <= 16 : undefined,
    },
  )

  const exclusive = exclusiveFigure(r.exclusiveKeys)
  tables.push(exclusive.table)
  targets.push(exclusive.target)

  const telemetry = telemetryFigure(r.telemetryCost)
  tables.push(telemetry.table)
  targets.push(...telemetry.targets)

  const replicas = replicasFigure(r)
  tables.push(replicas.table)
  targets.push(...replicas.targets)

  const jobs = jobsFigure(r.jobs ?? [], r.jobsFair)
  tables.push(...jobs.tables)
  targets.push(...jobs.targets)

  const fleet = jobsFleetFigure(r.jobsFleet ?? [])
  tables.push(fleet.table)
  targets.push(...fleet.targets)

  tables.push({
    title: '5b. Pure decide on one snapshot',
    head: ['contender keys', 'iterations', 'µs per snapshot', 'µs per key', 'decision'],
    rows: r.decide.map((d) => [
      String(d.contenders),
      String(d.iterations),
      d.usPerSnapshot.toFixed(1),
      d.usPerKey.toFixed(3),
      d.decision,
    ]),
  })

  // A run of some steps (BENCH_ONLY) shows only what it measured.
  const shownTables = r.only === undefined ? tables : tables.filter(ranInThisRun)
  const shownTargets = r.only === undefined ? targets : targets.filter((t) => t.pass !== undefined)
  shownTables.push({
    title: 'Targets',
    head: ['target', 'implementation', 'value', 'threshold', 'result'],
    rows: shownTargets.map((t) => [
      t.what,
      t.implementation,
      t.value,
      t.threshold,
      verdict(t.pass),
    ]),
  })
  return { tables: shownTables, targets }
}

/** Whether a table has a figure of this run: a column of results, a row not left out by BENCH_ONLY. */
function ranInThisRun(table: Table): boolean {
  return (
    table.head.length > 1 &&
    table.rows.some((row) => !row.some((cell) => cell.startsWith('not run (BENCH_ONLY')))
  )
}

/**
 * Table 3d, the single-key lock under contention (one process per acquisition), and its targets:
 * rxsem run --leader against consul lock -n 1, both Consul's Lock recipe.
 */
function leaderContentionFigure(
  runs: readonly (ContentionRun | NotMeasured)[],
  setup: ContentionSetup,
): { readonly table: Table; readonly targets: readonly Target[] } {
  const measuredRun = (implementation: string): ContentionRun | undefined =>
    runs.find((c): c is ContentionRun => measured(c) && c.implementation === implementation)
  const consul = measuredRun('consul lock -n')
  const head = [
    'implementation',
    'acq',
    'requests',
    'req/acq',
    'req/acq / consul lock',
    'lock attempts',
    'lost',
    'handover n',
    'handover p50 ms',
    'handover p95 ms',
    'handover p50 / consul lock',
    'queued wait p50 / p99 ms',
    'peak holders',
  ]
  const table: Table = {
    title: `3d. The single-key lock under contention: ${setup.contenders} contenders, one holder, hold ${setup.holdMs} ms, ${setup.acquisitions} acquisitions`,
    head,
    rows: runs.map((c) => {
      if (!measured(c)) {
        const blank = Array<string>(head.length - 3).fill('')
        return [c.implementation, 'not measured', c.notMeasured, ...blank]
      }
      return [
        c.implementation,
        String(c.acquisitions),
        String(c.requests),
        c.requestsPerAcquisition.toFixed(1),
        consul ? ratio(c.requestsPerAcquisition / consul.requestsPerAcquisition) : '—',
        String(c.lockAttempts),
        String(c.lockLost),
        String(c.handover.n),
        ms(c.handover.p50),
        ms(c.handover.p95),
        consul ? ratio(c.handover.p50 / consul.handover.p50) : '—',
        `${ms(c.queuedWait.p50)} / ${ms(c.queuedWait.p99)}`,
        String(c.peakHolders),
      ]
    }),
    notes: [
      "consul lock -n 1 runs Consul's Lock recipe (one key, `<prefix>/.lock`, no queue), as rxsem run --leader does; one process per acquisition, every request through one counting proxy, as in table 3.",
      'Lock attempts: PUT .lock?acquire= (consul lock), a transaction that locks .lock (rxsem run --leader); lost = refused by the agent (false, 409): with no queue, every waiter tries when the key is freed and one wins.',
      `Handover = the holder's child's last timestamp → the next holder's child's first, counted when the next holder had printed that it is contending ${HANDOVER_READY_MS} ms before the release (table 2's pairing); queued wait from that line to holding.`,
    ],
  }
  const library = measuredRun('rxsem run --leader')
  const both = library !== undefined && consul !== undefined
  const targets: Target[] = [
    {
      what: `the single-key lock, ${setup.contenders} contenders: requests per acquisition ≤ ½ × consul lock -n 1`,
      implementation: 'rxsem run --leader',
      value: both
        ? `${library.requestsPerAcquisition.toFixed(1)} vs ${consul.requestsPerAcquisition.toFixed(1)} (${ratio(library.requestsPerAcquisition / consul.requestsPerAcquisition)})`
        : '—',
      threshold: '≤ 0.50×',
      pass: both
        ? library.requestsPerAcquisition <= 0.5 * consul.requestsPerAcquisition
        : undefined,
    },
    {
      what: `the single-key lock, ${setup.contenders} contenders: handover p50 ≤ consul lock -n 1`,
      implementation: 'rxsem run --leader',
      value: both
        ? `${ms(library.handover.p50)} ms vs ${ms(consul.handover.p50)} ms (${ratio(library.handover.p50 / consul.handover.p50)})`
        : '—',
      threshold: '≤ 1.00×',
      pass: both ? library.handover.p50 <= consul.handover.p50 : undefined,
    },
  ]
  return { table, targets }
}

/** Table 2b: each CLI's handover at limit 1 split at the agent (bench/anatomy.ts). */
function anatomyFigure(runs: readonly (AnatomyRun | NotMeasured)[]): Table {
  const p50 = (values: readonly number[]): number => summarize(values).p50
  /** p50 (mean) of one part: the means of the parts add up to the mean total, the p50s need not. */
  const part = (values: readonly number[]): string =>
    `${ms(summarize(values).p50)} (${ms(summarize(values).mean)})`
  const consul = runs.find(
    (x): x is AnatomyRun => measured(x) && x.implementation === 'consul lock -n',
  )
  const consulP50 = consul && consul.splits.length ? p50(consul.splits.map((s) => s.total)) : NaN
  return {
    title: "2b. Where a CLI's handover goes (limit 1, split at the agent)",
    head: [
      'implementation',
      'n',
      'not split',
      'release = acquire',
      'exit → release p50 (mean) ms',
      'release → acquire p50 (mean) ms',
      'acquire → start p50 (mean) ms',
      'total p50 (mean) ms',
      'p50 / consul lock',
    ],
    rows: runs.map((x) => {
      if (!measured(x))
        return [x.implementation, '—', '', '', 'not measured', x.notMeasured, '', '', '']
      const total = p50(x.splits.map((s) => s.total))
      const unsplit = Object.values(x.unsplit).reduce((sum, n) => sum + n, 0)
      return [
        x.implementation,
        String(x.splits.length),
        `${unsplit} of ${x.handovers}`,
        String(x.splits.filter((s) => s.oneWrite).length),
        part(x.splits.map((s) => s.exitToRelease)),
        part(x.splits.map((s) => s.releaseToAcquire)),
        part(x.splits.map((s) => s.acquireToStart)),
        part(x.splits.map((s) => s.total)),
        ratio(total / consulP50),
      ]
    }),
    notes: [
      "Table 2's handover (the holder's child's last timestamp → the next holder's child's first) at limit 1, run again on a Consul agent of its own that logs every HTTP request, and split where the agent finished the holder's release write and the write that gave the next holder the slot. The three parts of each handover add up to its total exactly, so their means add up to the mean total; each p50 is taken on its own column, so the p50s need not add up.",
      "Release write: PUT .lock?release= (consul lock, rxsem run --leader), the holder's transaction (rxsem run). Acquiring write: the next holder's PUT .lock?acquire= after it (consul lock names the session), the first transaction after it (rxsem run --leader: only lock attempts, and the first one applied wins; of two the log cannot order, the one on the connection the next holder later releases on); for rxsem run, the release itself when it hands the slot to the first waiter (release = acquire counts those), else the heir's transaction.",
      "The agent logs to the millisecond: each time is taken as the middle of its millisecond. It logs a write when the write's handler returns, which under load can be after the waiters the write woke were served: release → acquire is then negative. A handover whose requests do not fit the pattern of its implementation (e.g. two lock attempts of rxsem run --leader that the log cannot order, neither on the next holder's connection) is not split, and counted under not split.",
    ],
  }
}

/** Seconds from ms, one decimal. */
const s = (v: number): string => (v / 1000).toFixed(1)
const count = (n: number): string => n.toLocaleString('en-US')

/** What the cells shared by figures 7 and 7c read of a run. */
type JobsTotals = Pick<
  JobsRun,
  'jobs' | 'done' | 'failures' | 'timedOut' | 'deadlineMs' | 'writes' | 'cpuMs'
>

/** A total per job done, or the total when no job was done. */
const per = (x: JobsTotals, n: number, unit = ''): string =>
  x.done > 0
    ? `${(n / x.done).toFixed(2)}${unit}`
    : `no job done (${n >= 100 ? count(Math.round(n)) : n.toFixed(1)}${unit} in all)`

function doneCell(x: JobsTotals): string {
  const failed = Object.entries(x.failures)
    .map(([kind, n]) => `${kind} ${n}`)
    .join(', ')
  return `${count(x.done)} of ${count(x.jobs)}${x.timedOut ? ` by the deadline (${s(x.deadlineMs)} s)` : ''}${failed ? `; failed: ${failed}` : ''}`
}

/** Session creates / destroys / transactions (lost) / KV writes, per job done. */
function writesCell(x: JobsTotals): string {
  const w = x.writes
  const parts = [w.sessionCreates, w.sessionDestroys, w.transactions, w.transactionsLost]
  const [creates, destroys, txns, lost] = parts.map((n) =>
    x.done > 0 ? (n / x.done).toFixed(2) : count(n),
  )
  const kv = x.done > 0 ? (w.kvWrites / x.done).toFixed(2) : count(w.kvWrites)
  const cell = `${creates} / ${destroys} / ${txns} (${lost}) / ${kv}`
  return x.done > 0 ? cell : `no job done (${cell} in all)`
}

/**
 * Figure 7's tables and targets (bench/jobs.ts). The targets are judged on the runs without V8
 * flags; a control run (`JobsSetup.v8Flags`) is a column of the table only.
 */
export function jobsFigure(
  runs: readonly (JobsRun | JobsNotMeasured)[],
  fair: JobsFairRun | NotMeasured | undefined,
): { tables: Table[]; targets: Target[] } {
  const first = runs.find((x) => measured<JobsRun>(x))
  const row = (label: string, cell: (x: JobsRun) => string): string[] => [
    label,
    ...runs.map((x) => (measured<JobsRun>(x) ? cell(x) : '—')),
  ]
  const tokensCell = (x: JobsRun): string =>
    x.done < 2
      ? `not judged: ${x.done} job${x.done === 1 ? '' : 's'} done`
      : x.tokens.increasing
        ? 'yes'
        : `NO: ${x.tokens.repeated} jobs share a token, ${x.tokens.notAfterEarlier} not above a job that ended before they started`
  const jobsTable: Table = {
    title: `7. Pooled jobs: withSlot jobs submitted at once in one process (one prefix, limit ${first?.limit ?? 10}, each holding ${first?.holdMs ?? 2} ms, the default client)`,
    head: [
      'figure',
      ...runs.map((x) => {
        const label = `${count(x.jobs)} jobs${x.v8Flags ? `, control: node ${x.v8Flags.join(' ')}` : ''}${x.floor === true ? ', floor: a limit kept in the process, no Consul' : ''}`
        return measured<JobsRun>(x) ? label : `${label}: not measured: ${x.notMeasured}`
      }),
    ],
    rows: [
      row('jobs done', doneCell),
      row('wall time', (x) => `${s(x.wallMs)} s`),
      row('jobs per second', (x) => x.jobsPerSecond.toFixed(1)),
      row('most sessions of the process in Consul at once', (x) => count(x.peakSessions)),
      row('RSS added (peak − before submitting)', (x) => `${x.rssAddedMb.toFixed(1)} MB`),
      row("… ÷ the floor's, as many jobs", (x) => {
        const floor = runs.find(
          (f): f is JobsRun => measured<JobsRun>(f) && f.floor === true && f.jobs === x.jobs,
        )
        return floor === undefined || x.floor === true
          ? '—'
          : ratio(x.rssAddedMb / floor.rssAddedMb)
      }),
      row('CPU per job done', (x) => per(x, x.cpuMs, ' ms')),
      row('Consul writes per job done', (x) => per(x, writesOf(x.writes))),
      row('… session creates / destroys / transactions (lost) / KV writes', writesCell),
      row('session renewals per job done (not counted as writes)', (x) =>
        per(x, x.writes.renewals),
      ),
      row('requests per job done (reads included)', (x) => per(x, x.writes.requests)),
      row('fencing tokens strictly increasing', tokensCell),
      row('neighbours in start order whose tokens go down', (x) =>
        count(x.tokens.startOrderInversions),
      ),
    ],
    notes: [
      'One child process (bench/jobs-child.ts, the built package under plain node) submits every job at once: `withSlot({ prefix, limit }, work)` with no `consul` option, so on the default client, whose CONSUL_HTTP_ADDR is the address of the agent. The child counts the requests its client sends, with the status of their answers, from the diagnostics channels on which the library publishes its requests, `rx-consul-semaphore:http.request.*` (a proxy in between took as much CPU as the jobs on this machine). Each job reads `slot.assertHolding()` first, then awaits a 2 ms timer. A size runs until every job settled or its deadline, whichever comes first; the figures are of what was done by then (jobs still waiting are then removed from Consul by the bench). BENCH_JOBS sets the sizes.',
      "Wall time: from submitting to the last job settled (or the deadline). Sessions: /v1/session/list read on the agent itself, 100 ms after each answer, counting the sessions that were not there before the run (nothing else makes sessions on the bench's agent meanwhile). RSS: the child's peak as the kernel counts it (getrusage's ru_maxrss, read at the end: no sampler runs beside the jobs) minus its RSS right before submitting (the library loaded by then, so its start-up does not raise the peak). CPU: the child's user + system time from submitting to the end / jobs done. Writes: the requests the child sent from submitting to the end that change Consul's state (PUT session/create, PUT session/destroy, PUT /v1/txn, PUT and DELETE of a key) / jobs done; lost = transactions the agent rolled back (409); renewals and reads are counted beside.",
      "Control columns (`node --max-semi-space-size=1`, `node --max-opt=1`, both): the largest size again, its child started under those V8 flags, to tell what part of the RSS added is V8's own rather than the library's: the first holds V8's young generation at 1 MB per semi-space (a busy process grows it to its maximum, 16 MB each by default on 64-bit), the second stops V8 at its baseline compiler, so that neither Maglev nor TurboFan compiles the code the jobs make hot (their working memory is allocated by V8's background threads). The flags slow the jobs down, and the library sets neither: the targets are judged on the run without flags.",
      'Floor column: the largest size again in the same child, the library loaded but not called: each job waits in a FIFO for one of `limit` places kept in the process and takes its token from a counter (no Consul, no request). What the jobs, their promises and their timers cost Node itself, whatever limits them.',
      'Fencing tokens: up to `limit` jobs run at once on different slots, and which of two jobs starting at the same moment gets the greater token is no order anyone can rely on. The check is therefore: no two jobs ran under the same token, and every job that started after another job had ended (wall clock, in the one process) has a greater token than that job. Neighbours in start order whose tokens go down (concurrent starts) are counted beside, for information.',
    ],
  }
  const fairRun = fair !== undefined && measured(fair) ? fair : undefined
  const fairTable: Table = {
    title: `7b. Two processes on one prefix (limit ${fairRun?.limit ?? 4}, jobs of ${fairRun?.holdMs ?? 20} ms): slot-time while both have a backlog`,
    head: ['figure', 'value'],
    rows: fairRun
      ? [
          [
            'jobs of A (submitted first) / of B (after A has started limit jobs)',
            `${count(fairRun.bigJobs)} / ${count(fairRun.smallJobs)}`,
          ],
          [
            'window: both have jobs waiting to start',
            `${s(fairRun.windowMs)} s, until ${fairRun.windowEnd === 'big' ? "A's last job started" : fairRun.windowEnd === 'small' ? "B's last job started" : 'the deadline'}`,
          ],
          [
            'slot-time in the window: A / B',
            `${s(fairRun.bigSlotMs)} s / ${s(fairRun.smallSlotMs)} s`,
          ],
          [
            "B's share of the slot-time (fair: 0.5)",
            `${fairRun.smallShare.toFixed(3)} (${ratio(fairRun.fairRatio)} its fair share)`,
          ],
          [
            "B's share from its first job on (its arrival left out; for information)",
            fairRun.smallShareFromFirstJob === undefined
              ? 'no job of B in the window'
              : fairRun.smallShareFromFirstJob.toFixed(3),
          ],
          [
            'jobs started in the window: A / B',
            `${count(fairRun.bigStarted)} / ${count(fairRun.smallStarted)}`,
          ],
          [
            "B's first job ran after",
            fairRun.smallFirstStartMs === undefined
              ? 'never, in the run'
              : `${s(fairRun.smallFirstStartMs)} s`,
          ],
          ['B jobs done in the run', `${fairRun.smallDone} of ${fairRun.smallJobs}`],
        ]
      : [
          [
            'not measured',
            fair === undefined ? 'not in this run' : (fair as NotMeasured).notMeasured,
          ],
        ],
    notes: [
      "Two child processes (as in table 7) on one prefix. A submits its jobs; B submits its own once A has started `limit` jobs (A has taken every slot, and its backlog waits). A process has a backlog while one of its jobs is submitted and not yet started. The window opens when B submits and closes when either process starts its last job (or at the deadline); slot-time = the run time of a process's jobs inside the window (job start to end, on the machine's monotonic clock, which both processes share). The run ends when B or A has settled every job, or at the deadline. B's share counts its arrival (a session, a place in the queue, a slot given up by A) against it: with " +
        `${count(fairRun?.smallJobs ?? 0)} jobs that is a part` +
        " of the window; the share from B's first job on is shown beside.",
    ],
  }

  const find = (n: number): JobsRun | undefined =>
    runs.find(
      (x): x is JobsRun => measured<JobsRun>(x) && x.jobs === n && !x.v8Flags && x.floor !== true,
    )
  const tenThousand = find(10_000)
  const thousand = find(1000)
  const at = '10,000 pending withSlot jobs, limit 10'
  const targets: Target[] = [
    {
      what: `${at}: sessions of the process in Consul at once`,
      implementation: 'library',
      value: tenThousand ? count(tenThousand.peakSessions) : '—',
      threshold: '≤ 10',
      pass: tenThousand ? tenThousand.peakSessions <= 10 : undefined,
    },
    {
      what: `${at}: RSS added`,
      implementation: 'library',
      value: tenThousand ? `${tenThousand.rssAddedMb.toFixed(1)} MB` : '—',
      threshold: '≤ 40 MB',
      pass: tenThousand ? tenThousand.rssAddedMb <= 40 : undefined,
    },
    {
      what: `${at}: CPU per job`,
      implementation: 'library',
      value: tenThousand ? per(tenThousand, tenThousand.cpuMs, ' ms') : '—',
      threshold: '≤ 2 ms',
      pass: tenThousand ? tenThousand.cpuMsPerJob <= 2 : undefined,
    },
    {
      what: `${at}: Consul writes per job`,
      implementation: 'library',
      value: tenThousand ? per(tenThousand, writesOf(tenThousand.writes)) : '—',
      threshold: '≤ 1.2',
      pass: tenThousand ? tenThousand.writesPerJob <= 1.2 : undefined,
    },
    {
      what: `${at}: every job done`,
      implementation: 'library',
      value: tenThousand ? doneCell(tenThousand) : '—',
      threshold: 'all',
      pass: tenThousand ? tenThousand.done === tenThousand.jobs : undefined,
    },
    {
      what: `${at}: fencing tokens strictly increasing across jobs`,
      implementation: 'library',
      value: tenThousand ? tokensCell(tenThousand) : '—',
      threshold: 'yes',
      // Not judged on fewer than two jobs done.
      pass: tenThousand && tenThousand.done >= 2 ? tenThousand.tokens.increasing : undefined,
    },
    {
      what: '1,000 pending withSlot jobs, limit 10, 2 ms each: jobs per second',
      implementation: 'library',
      value: thousand
        ? `${thousand.jobsPerSecond.toFixed(1)}${thousand.timedOut ? ` (${count(thousand.done)} done by the deadline)` : ''}`
        : '—',
      threshold: '≥ 240',
      pass: thousand ? thousand.jobsPerSecond >= 240 : undefined,
    },
    {
      what: `two processes, ${fairRun ? `${count(fairRun.bigJobs)} and ${fairRun.smallJobs}` : '1,000 and 10'} pending jobs, limit ${fairRun?.limit ?? 4}: the small one's share of the slot-time while both have a backlog`,
      implementation: 'library',
      value: fairRun
        ? `${fairRun.smallShare.toFixed(3)} (${ratio(fairRun.fairRatio)} its fair 0.5)`
        : '—',
      threshold: '0.80× to 1.20× fair',
      pass: fairRun ? Math.abs(fairRun.fairRatio - 1) <= 0.2 : undefined,
    },
  ]
  return { tables: [jobsTable, fairTable], targets }
}

/**
 * Jobs shorter than this are bound by the library's own cost per job (the limit's rate, 5,000
 * jobs/s at 2 ms, is out of reach on one agent): a fleet of them is judged against one process
 * with the same total; longer jobs against the limit's rate.
 */
const SHORT_JOB_MS = 10

/** Figure 7c's table and targets (bench/jobs.ts, measureJobsFleet). */
function jobsFleetFigure(runs: readonly (JobsFleetRun | JobsFleetNotMeasured)[]): {
  table: Table
  targets: Target[]
} {
  const isRun = (x: JobsFleetRun | JobsFleetNotMeasured): x is JobsFleetRun => measured(x)
  const setupOf = (
    x: Pick<JobsFleetRun, 'processes' | 'jobsPerProcess' | 'holdMs' | 'apart'>,
  ): string =>
    `${x.processes} process${x.processes === 1 ? '' : 'es'} × ${count(x.jobsPerProcess)} jobs of ${x.holdMs} ms${x.apart === true ? ', apart (a prefix each)' : ''}`
  const row = (label: string, cell: (x: JobsFleetRun) => string): string[] => [
    label,
    ...runs.map((x) => (isRun(x) ? cell(x) : '—')),
  ]
  /** The one-process run with the same total and hold as `x`, if measured. */
  const alone = (x: Pick<JobsFleetRun, 'processes' | 'jobsPerProcess' | 'holdMs'>) =>
    runs.find(
      (y): y is JobsFleetRun =>
        isRun(y) &&
        y.processes === 1 &&
        y.holdMs === x.holdMs &&
        y.jobsPerProcess === x.processes * x.jobsPerProcess,
    )
  /** The same setup with fewer jobs per process, if measured and with fewer jobs done. */
  const smallerOf = (x: JobsFleetRun): JobsFleetRun | undefined =>
    runs.find(
      (y): y is JobsFleetRun =>
        isRun(y) &&
        y.processes === x.processes &&
        y.holdMs === x.holdMs &&
        y.jobsPerProcess < x.jobsPerProcess &&
        y.apart === x.apart &&
        y.done < x.done,
    )
  /** For processes sharing a prefix: the same processes and jobs apart, if measured. */
  const apartOf = (x: JobsFleetRun): JobsFleetRun | undefined =>
    x.apart === true
      ? undefined
      : runs.find(
          (y): y is JobsFleetRun =>
            isRun(y) &&
            y.apart === true &&
            y.processes === x.processes &&
            y.jobsPerProcess === x.jobsPerProcess &&
            y.holdMs === x.holdMs &&
            y.done > 0,
        )
  /** Slots in all: a prefix's limit, or each process's when apart. */
  const slots = (x: JobsFleetRun): number => (x.apart === true ? x.limit * x.processes : x.limit)
  const limitRate = (x: JobsFleetRun): number => (slots(x) * 1000) / x.holdMs
  const vsAlone = (x: JobsFleetRun): number | undefined => {
    const one = x.processes > 1 && x.apart !== true ? alone(x) : undefined
    return one ? x.jobsPerSecond / one.jobsPerSecond : undefined
  }
  const shareCell = (v: FleetShare): string =>
    `${v.share.toFixed(2)} (process ${v.process}, window at ${s(v.atMs)} s)`
  const fairnessCell = (x: JobsFleetRun, f: JobsFleetRun['fairness']): string => {
    if (x.processes === 1) return '— (one process)'
    if (x.apart === true) return '— (a prefix each)'
    if (f === undefined) return 'no span where every process had jobs queued'
    return `${shareCell(f.min)} / ${shareCell(f.max)}`
  }
  const spanCell = (x: JobsFleetRun): string => {
    const f = x.fairness
    if (x.processes === 1) return '— (one process)'
    if (x.apart === true) return '— (a prefix each)'
    if (f === undefined) return 'none'
    return f.short
      ? `${s(f.spanMs)} s: SHORTER than ${s(f.windowMs)} s, one window over the whole span`
      : `${s(f.spanMs)} s: ${f.windows} windows of ${s(f.windowMs)} s`
  }
  const tokensCell = (x: JobsFleetRun): string => {
    if (x.done < 2) return `not judged: ${x.done} job${x.done === 1 ? '' : 's'} done`
    const bad = x.perProcess.flatMap((p, i) => (p.tokens.increasing ? [] : [i]))
    if (bad.length === 0 && x.tokensRepeatedAcross === 0) return 'yes'
    return `NO: ${x.tokensRepeatedAcross} jobs share a token; not increasing in process ${bad.join(', ') || '—'}`
  }
  const first = runs.find((x): x is JobsFleetRun => isRun(x) && x.apart !== true)
  const limit = first?.limit ?? 10
  const table: Table = {
    title: `7c. A fleet: several processes sharing one limit (one prefix, limit ${limit}, the default client)`,
    head: [
      'figure',
      ...runs.map((x) => (isRun(x) ? setupOf(x) : `${setupOf(x)}: not measured: ${x.notMeasured}`)),
    ],
    rows: [
      row('jobs done, all processes', doneCell),
      row('jobs done per process', (x) => x.perProcess.map((p) => count(p.done)).join(' / ')),
      row("from the first go to the last job's end", (x) => `${s(x.spanMs)} s`),
      row('jobs per second, all processes', (x) => x.jobsPerSecond.toFixed(1)),
      row('… ÷ one process with the same total and hold (this table)', (x) => {
        const v = vsAlone(x)
        return v === undefined ? '—' : ratio(v)
      }),
      row("… ÷ the limit's rate (limit × 1000 / hold)", (x) =>
        x.done > 0 ? `${ratio(x.jobsPerSecond / limitRate(x))} of ${count(limitRate(x))}` : '—',
      ),
      row(`most jobs running at once, across processes (limit ${limit})`, (x) =>
        x.apart === true
          ? `${count(x.mostAtOnce)} (${x.processes} prefixes of limit ${x.limit})`
          : count(x.mostAtOnce),
      ),
      row("CPU per job done (the children's, summed)", (x) => per(x, x.cpuMs, ' ms')),
      row("… of it on the main threads / V8's worker threads / the others", (x) => {
        const t = x.threadsCpuMs
        return t && x.done > 0
          ? `${per(x, t.main)} / ${per(x, t.v8Workers)} / ${per(x, t.other)} ms`
          : '—'
      }),
      row("… beyond the same setup's smaller size: extra CPU ÷ extra jobs", (x) => {
        const smaller = smallerOf(x)
        return smaller
          ? `${((x.cpuMs - smaller.cpuMs) / (x.done - smaller.done)).toFixed(2)} ms (over ${setupOf(smaller)})`
          : '—'
      }),
      row('… ÷ the CPU per job of the same processes and jobs apart (a prefix each)', (x) => {
        const floor = apartOf(x)
        return floor && x.done > 0 ? ratio(x.cpuMsPerJob / floor.cpuMsPerJob) : '—'
      }),
      row('Consul writes per job done', (x) => per(x, writesOf(x.writes))),
      row('… session creates / destroys / transactions (lost) / KV writes', writesCell),
      row('requests per job done (reads included)', (x) => per(x, x.writes.requests)),
      row('span where every process had jobs queued', spanCell),
      row("each process's slot-time ÷ its fair 1/P in those windows: min / max", (x) =>
        fairnessCell(x, x.fairness),
      ),
      row("… the same from every process's first job on (start-up left out; information)", (x) => {
        const f = x.fairnessFromFirstJobs
        const windows = f
          ? ` in ${f.short ? `one window of ${s(f.spanMs)} s` : `${f.windows} windows`}`
          : ''
        return `${fairnessCell(x, f)}${windows}`
      }),
      row('fencing tokens: increasing in each process, none used twice in the fleet', tokensCell),
      row('first process done → last process done', (x) =>
        x.processes === 1
          ? '— (one process)'
          : x.finishSpreadMs === undefined
            ? `not every process done: ${x.perProcess.filter((p) => p.finishedMs !== undefined).length} of ${x.processes}`
            : `${s(x.finishSpreadMs)} s`,
      ),
      row('slot empty between two jobs, while all had jobs queued: p50 / p95 (information)', (x) =>
        x.gaps.n > 0 ? `${ms(x.gaps.p50Ms)} / ${ms(x.gaps.p95Ms)} ms` : '—',
      ),
      row('… of those, the next job in another process', (x) =>
        x.gaps.n > 0 ? `${(100 * x.gaps.toOtherProcess).toFixed(0)}%` : '—',
      ),
      row('slot-time used while all had jobs queued, of limit × that time', (x) =>
        Number.isFinite(x.gaps.utilisation) ? `${(100 * x.gaps.utilisation).toFixed(0)}%` : '—',
      ),
    ],
    notes: [
      "P child processes (bench/jobs-child.ts, as in table 7: the built package under plain node, `withSlot({ prefix, limit }, work)` on the default client) on one prefix, every one's CONSUL_HTTP_ADDR the agent's, each counting its own requests as in table 7. Once every child has loaded the library, each is sent `go` (one after the other, in the same moment) and submits its J jobs at once; a job reads `slot.assertHolding()`, then awaits a timer of the hold. A setup runs until every job settled or its deadline (60 s for jobs under 10 ms, 30 s otherwise; BENCH_JOBS_FLEET_DEADLINE); the figures are of the jobs done by then. Each child records [start order, token, start, end] per job on the machine's monotonic clock (process.hrtime), which its processes share (each process's performance.timeOrigin is read once at its start, and processes started together disagree by tenths of a millisecond). The one-process columns run the same code with P = 1: the ratio compares like with like, not with table 7. BENCH_JOBS_FLEET sets the setups.",
      "Jobs per second: the jobs done in every process / (the last job's end − the first child's `go`). Ratios: that ÷ the one-process column with the same total and hold; ÷ the limit's rate, limit × 1000 / hold ms (every slot busy with back-to-back jobs).",
      "Most at once: the intervals (start to end) of every job of every process, swept in time, an end before a start at the same instant. A job runs inside its holding of a slot, so this exceeds the limit only if two holders overlapped (every time is read from the one clock the machine's processes share).",
      "CPU: the children's user + system time (process.cpuUsage) from each one's `go` to its report, summed over the children (a process done early idles until the reports are taken) / jobs done. Writes: as in table 7, every request the children sent from their `go` to their reports, of all processes: PUT session/create, PUT session/destroy, PUT /v1/txn, PUT and DELETE of a key / jobs done; lost = transactions the agent rolled back (409). The same setup at two sizes (4 × 500 and 4 × 2,000 jobs of 20 ms) tells a cost per job from what each process pays once (its first requests, V8 warming up its code): the row \"… beyond the same setup's smaller size\" is the extra CPU of the larger over its extra jobs.",
      "Threads: each child's CPU from its `go` to its report, thread by thread, from /proc/self/task (Linux; user + system, counted in the kernel's clock ticks, getconf CLK_TCK: 10 ms on Linux): its main thread runs the JavaScript (the library's, Node's HTTP client's, the jobs') and the collections that stop it; V8's worker threads (named V8Worker) run its optimizing compilers (Maglev, TurboFan) and the parts of its collections that run beside the JavaScript; the others are libuv's and Node's own. The three add up to the row above but for the ticks' rounding and a thread that ended before the report.",
      "Apart (a prefix each): the same processes and jobs of 20 ms, each process on a prefix of its own with its share of the limit (rounded down), so that they share nothing but the agent and the 2 cores: the floor of what those processes cost with no coordination between them. Its row of CPU per job divided into the shared prefix's is what the sharing costs. No target is judged on it.",
      "Fairness: a process has jobs queued from its `go` until its last job started (until its report, if not all started). Over the span from the last `go` to the first process out of queued jobs, 2 s windows start every 0.5 s (as many as fit inside the span); in each, a process's slot-time is the run time of its jobs clipped to the window, and its share is that / (every process's slot-time in the window / P): 1 is fair. Min and max over every window and process, with which process (from 0) and the window's start after the span's. A span under 2 s gives one window over the whole span, marked SHORTER. The row beside opens the span only once every process has started a job, leaving each one's start-up (its sessions, its first acquisitions) out, as table 7b does for B's arrival.",
      "Fencing tokens: in each process, the check of table 7 (no token twice, a job started after another ended has a greater token); across the fleet, no token that two jobs (of any processes) ran under. Done → done: each process's last job's end; from the first process's to the last's.",
      "Slot empty (information; slots are not named in the records, so this is an estimate): every job's end frees a slot, and each next start in any process takes the slot freed longest ago; the gap is from that end to the start, counted for starts while every process had jobs queued. Slot-time used: the jobs' run time in that span / (limit × span), the rest being slots empty or changing hands while jobs waited.",
    ],
  }

  const targets: Target[] = []
  for (const x of runs.filter((y) => y.processes > 1 && y.apart !== true)) {
    const run = isRun(x) ? x : undefined
    const at = `${setupOf(x)}, limit ${run?.limit ?? limit}`
    const ok = run !== undefined && run.done > 0
    if (x.holdMs < SHORT_JOB_MS) {
      const one = alone(x)
      const v = run ? vsAlone(run) : undefined
      targets.push({
        what: `${at}: jobs per second, all processes`,
        implementation: 'library',
        value:
          run && one && v !== undefined
            ? `${run.jobsPerSecond.toFixed(1)} vs ${one.jobsPerSecond.toFixed(1)} for ${setupOf(one)} (${ratio(v)})`
            : '—',
        threshold: '≥ 0.50× one process with the same total',
        pass: v === undefined ? undefined : v >= 0.5,
      })
    } else {
      targets.push({
        what: `${at}: jobs per second, all processes`,
        implementation: 'library',
        value: run
          ? `${run.jobsPerSecond.toFixed(1)} (${ratio(run.jobsPerSecond / limitRate(run))} of ${count(limitRate(run))})`
          : '—',
        threshold: "≥ 0.80× the limit's rate",
        pass: run ? run.jobsPerSecond >= 0.8 * limitRate(run) : undefined,
      })
    }
    targets.push(
      {
        what: `${at}: CPU per job (all processes)`,
        implementation: 'library',
        value: run ? per(run, run.cpuMs, ' ms') : '—',
        threshold: '≤ 1 ms',
        pass: ok ? run.cpuMsPerJob <= 1 : undefined,
      },
      {
        what: `${at}: Consul writes per job`,
        implementation: 'library',
        value: run ? per(run, writesOf(run.writes)) : '—',
        threshold: '≤ 1.5',
        pass: ok ? run.writesPerJob <= 1.5 : undefined,
      },
      {
        what: `${at}: jobs running at once, across processes`,
        implementation: 'library',
        value: run ? count(run.mostAtOnce) : '—',
        threshold: `≤ ${run?.limit ?? limit}`,
        pass: ok ? run.mostAtOnce <= run.limit : undefined,
      },
      {
        what: `${at}: each process's slot-time ÷ fair, every 2 s window while all have jobs queued`,
        implementation: 'library',
        value: run?.fairness
          ? `${run.fairness.min.share.toFixed(2)} to ${run.fairness.max.share.toFixed(2)}${run.fairness.short ? ` (one window of ${s(run.fairness.spanMs)} s: the span is shorter than 2 s)` : ''}`
          : '—',
        threshold: '0.80× to 1.20× fair',
        pass: run?.fairness
          ? run.fairness.min.share >= 0.8 && run.fairness.max.share <= 1.2
          : undefined,
      },
    )
  }
  return { table, targets }
}

/** Figure 5d's table and target (bench/exclusive-keys.ts). */
function exclusiveFigure(x: ExclusiveKeysResult | NotMeasured): { table: Table; target: Target } {
  const keys = measured(x) ? x.keys.toLocaleString('en-US') : undefined
  const grownMb = measured(x) ? x.endHeapMb - x.startHeapMb : Number.NaN
  const table: Table = {
    title: `5d. exclusive(...) over ${keys ?? 'many'} distinct task keys on one long-lived client`,
    head: ['figure', 'value'],
    rows: measured(x)
      ? [
          ['task keys (one exclusive subscription, concurrency)', `${keys} (${x.concurrency})`],
          [
            'outcomes',
            Object.entries(x.outcomes)
              .map(([outcome, n]) => `${outcome} ${n}`)
              .join(', '),
          ],
          [
            'time, tasks per second',
            `${(x.ms / 1000).toFixed(1)} s, ${((1000 * x.keys) / x.ms).toFixed(0)}/s`,
          ],
          ['live heap before the first task', `${x.startHeapMb.toFixed(1)} MB`],
          [
            'live heap after each tenth of the tasks',
            x.heapMbByTenth.map((h) => h.toFixed(1)).join(' / ') + ' MB',
          ],
          ['live heap once every task is done', `${x.endHeapMb.toFixed(1)} MB`],
          ['heap added', `${grownMb.toFixed(1)} MB`],
          ['shared watches left in the process', String(x.watchesLeft)],
        ]
      : [['not measured', x.notMeasured]],
    notes: [
      'One child process (bench/exclusive-worker.ts, --expose-gc) with one client and one exclusive(...) subscription over tasks 0 … n-1, each with its own key and no watchPrefix (each running task watches its key), run = an async no-op, onDone delete. Live heap = process.memoryUsage().heapUsed after a full GC; the client stays open until the last figure. BENCH_EXCLUSIVE_KEYS sets n.',
    ],
  }
  const target: Target = {
    what: `exclusive over ${keys ?? 'n'} distinct task keys: live heap back to the start within 5 MB`,
    implementation: 'library',
    value: measured(x) ? `${grownMb.toFixed(1)} MB added` : '—',
    threshold: '≤ 5 MB',
    pass: measured(x) ? grownMb <= 5 : undefined,
  }
  return { table, target }
}

/** Table 3c and its targets (bench/import-cost.ts). */
function importFigure(x: ImportCostResult | NotMeasured | undefined): {
  table: Table
  targets: Target[]
} {
  const run = x !== undefined && measured(x) ? x : undefined
  const mb = (v: number): string => v.toFixed(1)
  const over = (f: ProcessFootprint): number => f.rssMb - (run?.bare.rssMb ?? Number.NaN)
  const times = (f: ProcessFootprint): number => f.cpuMs / (run?.bare.cpuMs ?? Number.NaN)
  const range = (f: ProcessFootprint): string => {
    const rss = f.rounds.map((r) => r.rssMb)
    return `${mb(Math.min(...rss))}–${mb(Math.max(...rss))}`
  }
  const rows: (readonly [string, ProcessFootprint])[] = run
    ? [
        ['a bare node -e 0', run.bare],
        ["import('rxjs') alone, for scale", run.rxjs],
        ['rxjs and node:net, as the first connection loads it, for scale', run.rxjsHttp],
        ["import('rx-consul-semaphore'): the ES module build", run.esm],
        ["require('rx-consul-semaphore'): the CommonJS build", run.cjs],
        ['a replica holding one slot, 10 s into its tenure', run.holding],
      ]
    : []
  const table: Table = {
    title:
      "3c. Loading the library, and holding one slot: a process's RSS and CPU against a bare node",
    head: [
      'process',
      'RSS MB',
      'RSS min–max MB',
      'RSS over node -e 0',
      'CPU ms',
      'CPU vs node -e 0',
    ],
    rows: run
      ? rows.map(([what, f]) => [
          what,
          mb(f.rssMb),
          range(f),
          f === run.bare ? '—' : `+${mb(over(f))} MB`,
          ms(f.cpuMs),
          f === run.bare ? '—' : ratio(times(f)),
        ])
      : [['not measured', x === undefined ? 'not in this run' : (x as NotMeasured).notMeasured]],
    notes: [
      `Fresh node processes of each kind in turns, ${run?.runs ?? 'n'} rounds (BENCH_IMPORT_RUNS), medians; each process reads its own process.memoryUsage().rss and process.cpuUsage() (user + system since its start) when measured: at once for the bare node, right after the import or require, and 10 s into the tenure for the replica (semaphore({ prefix, limit: 1 }) without a consul option, against the bench's agent; by then V8 has compiled the tenure's hot functions and collected after it). The package is the built one (dist/), resolved by its name as a user's node_modules gives it; the library's processes import nothing else (the replica loads @opentelemetry/api, installed here, with no SDK).`,
      "Importing the library loads rxjs's root (its CommonJS build, every operator), which a user composing with rxjs loads anyway: the rxjs row is that part. It loads none of Node's HTTP client, ever (it speaks HTTP/1.1 on its own connections), and Node's sockets when its first connection is made: node:net (with streams), and tls only for an agent spoken to over TLS. The row of rxjs and node:net is what any process that talks to Consul through the library loads before a line of the library runs, its floor; both builds are bundles with fp-ts and io-ts inlined (scripts/build.mjs).",
    ],
  }
  const rssTarget = (what: string, f: ProcessFootprint | undefined, mbOver: number): Target => ({
    what: `${what}: RSS ≤ a bare node -e 0 + ${mbOver} MB`,
    implementation: 'library',
    value: run && f ? `${mb(f.rssMb)} MB vs ${mb(run.bare.rssMb)} MB (+${mb(over(f))} MB)` : '—',
    threshold: `≤ +${mbOver} MB`,
    pass: run && f ? over(f) <= mbOver : undefined,
  })
  const cpuTarget = (what: string, f: ProcessFootprint | undefined): Target => ({
    what: `${what}: CPU ≤ 2 × a bare node -e 0`,
    implementation: 'library',
    value: run && f ? `${ms(f.cpuMs)} ms vs ${ms(run.bare.cpuMs)} ms (${ratio(times(f))})` : '—',
    threshold: '≤ 2.00×',
    pass: run && f ? times(f) <= 2 : undefined,
  })
  return {
    table,
    targets: [
      rssTarget("import('rx-consul-semaphore')", run?.esm, 20),
      cpuTarget("import('rx-consul-semaphore')", run?.esm),
      rssTarget("require('rx-consul-semaphore')", run?.cjs, 20),
      cpuTarget("require('rx-consul-semaphore')", run?.cjs),
      rssTarget('a replica holding one slot (no consul option)', run?.holding, 30),
    ],
  }
}

/** Figure 5e's table and targets (bench/telemetry-cost.ts). */
function telemetryFigure(x: TelemetryCostResult | NotMeasured | undefined): {
  table: Table
  targets: Target[]
} {
  const run = x !== undefined && measured(x) ? x : undefined
  const variant = (name: string) => run?.variants.find((v) => v.variant === name)
  const described: Readonly<Record<string, string>> = {
    off: 'nothing (telemetry: false, as without @opentelemetry/api)',
    api: '@opentelemetry/api, no SDK (its no-op providers)',
    sdk: 'SDK MeterProvider, reader collecting every 1 s',
    'sdk-spans': 'that, and an SDK TracerProvider (batched spans)',
  }
  const percent = (over: number): string => `${over >= 0 ? '+' : ''}${(over * 100).toFixed(1)} %`
  const table: Table = {
    title: `5e. Telemetry CPU at ${run?.contenders.toLocaleString('en-US') ?? '1,000'} contenders on one prefix`,
    head: [
      'contenders report to',
      'CPU ms per release (pooled)',
      'each round (acquisitions)',
      'median',
      'vs nothing',
      'telemetry in the CPU profile',
    ],
    rows: run
      ? run.variants.map((v) => [
          described[v.variant] ?? v.variant,
          v.pooledCpuMsPerRelease.toFixed(1),
          v.cpuMsPerRelease.map((c, i) => `${c.toFixed(1)} (${v.acquisitions[i]})`).join(' / '),
          v.medianCpuMsPerRelease.toFixed(1),
          v.variant === 'off' ? '—' : percent(v.overOff),
          `${(v.profileShare * 100).toFixed(2)} % of ${v.profileSamples} samples`,
        ])
      : [['not measured', x === undefined ? 'not in this run' : (x as NotMeasured).notMeasured]],
    notes: [
      `The scale figure's churn (table 5a) at limit ${run?.limit ?? 10}: every holder releases after 100 ms and a new contender takes its place, for ${((run?.churnMs ?? 5000) / 1000).toFixed(0)} s; CPU = the worker's user + system time in that window / acquisitions, pooled over the rounds (all their CPU / all their acquisitions). The variants run in turns, ${run?.rounds ?? 'n'} rounds, each round starting with the next variant; BENCH_TELEMETRY_ROUNDS sets the rounds. A collection every second is harsher than a Prometheus scrape (15 s and more) or the SDK's default export interval (60 s).`,
      "The A/B comparison ('vs nothing') spreads by more than the effect sought: the rounds of one variant differ by up to 20 % (the work in a window varies with its acquisitions, the machine with its load). The last column is the telemetry's own CPU in the same runs: V8's sampling profiler (1 ms) over each window, the share of the busy samples with telemetry code on the stack, the function itself or anything it called (src/telemetry, the request feed, @opentelemetry/*), pooled over the rounds. Garbage collection of what the telemetry allocated is not attributed to it.",
    ],
  }
  const sdk = variant('sdk')
  const api = variant('api')
  const share = (v: TelemetryCostResult['variants'][number] | undefined): string =>
    v ? `${(v.profileShare * 100).toFixed(2)} % of the CPU (A/B ${percent(v.overOff)})` : '—'
  const targets: Target[] = [
    {
      what: `metrics with an SDK installed, ${run?.contenders.toLocaleString('en-US') ?? '1,000'} contenders on one prefix: the telemetry's CPU`,
      implementation: 'library',
      value: share(sdk),
      threshold: '≤ 2 %',
      pass: sdk ? sdk.profileShare <= 0.02 : undefined,
    },
    {
      what: 'telemetry with @opentelemetry/api and no SDK: its CPU',
      implementation: 'library',
      value: share(api),
      threshold: 'not measurable (≤ 0.5 %)',
      pass: api ? api.profileShare <= 0.005 : undefined,
    },
  ]
  return { table, targets }
}

/** Figure 6's table and targets (bench/replicas.ts). */
function replicasFigure(r: BenchResults): { table: Table; targets: Target[] } {
  const setup = r.replicasSetup
  const runs = r.replicas.filter((x) => measured<ReplicasRun>(x))
  const find = (impl: string, topology: string, n: number): ReplicasRun | undefined =>
    runs.find((x) => x.implementation === impl && x.topology === topology && x.replicas === n)
  const pct = (x: ReplicasRun): string =>
    ((100 * x.casLost) / Math.max(1, x.casAttempts)).toFixed(1)
  const seconds = (v: number): string => (v / 1000).toFixed(1)
  const servedOnce = (x: ReplicasRun): string =>
    x.servedOnceMs === undefined
      ? `not all: ${x.servedReplicas} of ${x.replicas} by ${seconds(STARTUP_TIMEOUT_MS)} s`
      : seconds(x.servedOnceMs)
  const table: Table = {
    title: `6. Replicas: one contender per process (limit ${setup.limit}, hold ${setup.holdMs} ms, ${(setup.steadyMs / 1000).toFixed(0)} s steady)`,
    head: [
      'topology',
      'implementation',
      'replicas',
      'acq',
      'acq/s',
      'handover n',
      'handover p50 ms',
      'handover p95 ms',
      'req/acq',
      'blocking answers/acq',
      'CAS lost/acq',
      'lost %',
      'peak holders',
      'all contending after s',
      'every replica served once after s',
      'RSS per replica MB',
      'replica CPU ms/acq',
      'load avg 1 min',
    ],
    rows: r.replicas.map((x) => {
      if (!measured<ReplicasRun>(x))
        return [
          x.topology,
          x.implementation,
          String(x.replicas),
          'not measured',
          x.notMeasured,
          ...Array<string>(13).fill(''),
        ]
      return [
        x.topology,
        x.implementation,
        String(x.replicas),
        String(x.acquisitions),
        x.perSecond.toFixed(1),
        String(x.handover.n),
        ms(x.handover.p50),
        ms(x.handover.p95),
        x.requestsPerAcquisition.toFixed(1),
        x.blockingPerAcquisition.toFixed(1),
        x.casLostPerAcquisition.toFixed(2),
        pct(x),
        String(x.peakHolders),
        seconds(x.startupMs),
        servedOnce(x),
        x.replicaRssMb === undefined ? '—' : x.replicaRssMb.toFixed(0),
        x.replicaCpuMsPerAcquisition === undefined ? '—' : x.replicaCpuMsPerAcquisition.toFixed(1),
        x.loadAverage.toFixed(1),
      ]
    }),
    notes: [
      `library: each replica is a node process of its own (bench/replica-child.ts) with one semaphore at a time: holding → hold ${setup.holdMs} ms → close() → a new semaphore contends again. ${SHARED_CLIENT}: one createConsulClient() per process, passed as \`consul\` to every tenure. ${DEFAULT_CLIENT}: no \`consul\` option, each tenure a new semaphore({ prefix, limit }) on the process's default client (CONSUL_HTTP_ADDR), as withSlot in a loop or a semaphore per job is written. The replicas run the built package (dist/esm, imported by the package's name) under plain node, without tsx. consul lock -n: one loop per replica, each running \`consul lock -n ${setup.limit}\` again and again (a process per acquisition). Fleet topology: 3 servers and 2 client agents on loopback; replica i talks to client agent i mod 2 through that agent's own counting proxy, and the client agents forward to the servers.`,
      `All contending after = from the first spawn until every replica was queued (library: state$ contending; consul lock: "Attempting lock acquisition" printed). Every replica served once after = from the first spawn until every replica had held a slot at least once (its first tenure's start), process start-up included. Counted in a ${(setup.steadyMs / 1000).toFixed(0)} s window that opens ${(setup.warmupMs / 1000).toFixed(0)} s after every replica was served once. acq = tenures that started in the window. req/acq = every request the proxies saw in the window / acq; blocking answers = GETs with index= answered in the window; CAS lost = writes of .lock (PUT /v1/txn with a cas, not the join; PUT .lock?cas=) that the agent refused (409, or false), lost % of those writes.`,
      'Handover = a tenure ends (library: close() called; consul lock: its child\'s last timestamp) → the next tenure starts, paired as in table 2, and counted only when the new holder was already queued at the release (library: its key in Consul, state$ contending; consul lock: it had printed "Attempting lock acquisition"), i.e. while every slot was taken. Peak holders: most tenures overlapping, from the wall-clock intervals each replica logged, over the whole run.',
      ...(setup.clusterCounts.length > 0 &&
      setup.counts.some((n) => !setup.clusterCounts.includes(n))
        ? [
            `The fleet topology runs ${setup.clusterCounts.join(' and ')} replicas only: ${Math.max(...setup.counts)} replicas beside 5 agents saturate a 2-core machine (bench/config.ts).`,
          ]
        : []),
      "RSS and CPU: the library replicas' processes (/proc), RSS averaged over them mid-window, CPU of all of them in the window / acq; not measured for consul lock's short-lived processes. The 2-core machine runs every replica and the agents: at 40 replicas CPU, not Consul, bounds the figures. Load avg: the machine's 1-minute load average at the window's end (the bench shares the machine with whatever else runs).",
      `Targets: the default client's rows, a new semaphore() per tenure, at most 9 requests per acquisition and at most 0.3 × consul lock -n's, handover p50 ≤ 0.3 ×, every replica served once ≤ 2 × consul lock's at 12 replicas; the shared client's rows: handover p50 ≤ 0.5 ×, requests per acquisition ≤ 0.3 ×.`,
    ],
  }
  const targets: Target[] = []
  const versus = (a: number, b: number, unit = ''): string =>
    `${a >= 100 ? a.toFixed(0) : a.toFixed(1)}${unit} vs ${b >= 100 ? b.toFixed(0) : b.toFixed(1)}${unit} (${ratio(a / b)})`
  const topologies = [...new Set(r.replicas.map((x) => x.topology))]
  for (const topology of topologies) {
    const counts = [
      ...new Set(r.replicas.filter((x) => x.topology === topology).map((x) => x.replicas)),
    ]
    for (const n of counts) {
      const cl = find(CONSUL_LOCK, topology, n)
      const where = `replicas (${topology}, ${n})`
      for (const way of [SHARED_CLIENT, DEFAULT_CLIENT]) {
        const lib = find(way, topology, n)
        const both = lib && cl ? { lib, cl } : undefined
        // The default client is what most replicas run: its targets are the stricter ones.
        const handoverShare = way === DEFAULT_CLIENT ? 0.3 : 0.5
        targets.push(
          {
            what: `${where}: handover p50 ≤ ${handoverShare} × consul lock -n`,
            implementation: way,
            value: both ? versus(both.lib.handover.p50, both.cl.handover.p50, ' ms') : '—',
            threshold: `≤ ${handoverShare.toFixed(2)}×`,
            pass: both ? both.lib.handover.p50 <= handoverShare * both.cl.handover.p50 : undefined,
          },
          {
            what: `${where}: requests per acquisition ≤ 0.3 × consul lock -n`,
            implementation: way,
            value: both
              ? versus(both.lib.requestsPerAcquisition, both.cl.requestsPerAcquisition)
              : '—',
            threshold: '≤ 0.30×',
            pass: both
              ? both.lib.requestsPerAcquisition <= 0.3 * both.cl.requestsPerAcquisition
              : undefined,
          },
        )
        if (way === DEFAULT_CLIENT) {
          targets.push({
            what: `${where}: requests per acquisition ≤ 9`,
            implementation: way,
            value: lib ? lib.requestsPerAcquisition.toFixed(1) : '—',
            threshold: '≤ 9',
            pass: lib ? lib.requestsPerAcquisition <= 9 : undefined,
          })
          if (n === 12) {
            const clServed = cl?.servedOnceMs
            targets.push({
              what: `${where}: every replica served once ≤ 2 × consul lock's time`,
              implementation: way,
              value:
                lib === undefined || clServed === undefined
                  ? '—'
                  : lib.servedOnceMs === undefined
                    ? `${servedOnce(lib)} vs ${seconds(clServed)} s`
                    : versus(lib.servedOnceMs / 1000, clServed / 1000, ' s'),
              threshold: '≤ 2.00×',
              pass:
                lib === undefined || clServed === undefined
                  ? undefined
                  : lib.servedOnceMs !== undefined && lib.servedOnceMs <= 2 * clServed,
            })
          }
        }
        targets.push(
          {
            what: `${where}: acquisitions/s ≥ consul lock -n`,
            implementation: way,
            value: both
              ? `${both.lib.perSecond.toFixed(1)} vs ${both.cl.perSecond.toFixed(1)}`
              : '—',
            threshold: '≥ 1.00×',
            pass: both ? both.lib.perSecond >= both.cl.perSecond : undefined,
          },
          {
            what: `${where}: lost CAS attempts < 2 %`,
            implementation: way,
            value: lib ? `${lib.casLost} of ${lib.casAttempts} (${pct(lib)} %)` : '—',
            threshold: '< 2 %',
            pass: lib ? lib.casLost < 0.02 * lib.casAttempts : undefined,
          },
        )
      }
      for (const impl of [SHARED_CLIENT, DEFAULT_CLIENT, CONSUL_LOCK]) {
        const x = find(impl, topology, n)
        targets.push({
          what: `${where}: peak holders ≤ limit ${setup.limit}`,
          implementation: impl,
          value: x ? String(x.peakHolders) : '—',
          threshold: `≤ ${setup.limit}`,
          pass: x ? x.peakHolders <= setup.limit : undefined,
        })
      }
    }
    const low = Math.min(...counts)
    const high = Math.max(...counts)
    for (const way of high > low ? [SHARED_CLIENT, DEFAULT_CLIENT] : []) {
      const a = find(way, topology, low)
      const b = find(way, topology, high)
      targets.push({
        what: `replicas (${topology}): requests per acquisition at ${high} ≤ 1.5 × at ${low}`,
        implementation: way,
        value: a && b ? versus(b.requestsPerAcquisition, a.requestsPerAcquisition) : '—',
        threshold: '≤ 1.50×',
        pass: a && b ? b.requestsPerAcquisition <= 1.5 * a.requestsPerAcquisition : undefined,
      })
    }
  }
  return { table, targets }
}

function chart(r: BenchResults): string {
  const floor = measured(r.floor) ? r.floor : undefined
  const reference = floor
    ? { ms: floor.handoverP50, label: `floor handover p50 ${ms(floor.handoverP50)} ms` }
    : undefined
  const handoverSeries = (limit: number): Series[] =>
    order.map((impl) => {
      const run = r.handover.find(
        (h) => h.implementation === impl && (h.limit === limit || !measured(h)),
      )
      return {
        label: impl,
        color: colors[impl] ?? '#555',
        samples: run && measured(run) ? run.samples : [],
        note: run && !measured(run) ? `not measured: ${run.notMeasured}` : 'not measured',
      }
    })
  const waitSeries: Series[] = order.map((impl) => {
    const run = r.contention.find((c) => c.implementation === impl)
    return {
      label: impl,
      color: colors[impl] ?? '#555',
      samples: run && measured(run) ? run.waits : [],
      note: run && !measured(run) ? `not measured: ${run.notMeasured}` : 'not measured',
    }
  })
  const s = r.contentionSetup
  return renderChart(
    'rx-consul-semaphore: handover and wait times',
    `${r.machine.cpu}, ${r.machine.cores} cores, Node ${r.machine.node}, ${r.machine.consul}, ${r.machine.date.slice(0, 10)}${r.quick ? ' (BENCH_QUICK)' : ''}`,
    [
      {
        title: 'Handover, limit 1: holder releases → next waiter holds',
        series: handoverSeries(1),
        ...(reference ? { reference } : {}),
      },
      {
        title: 'Handover, limit 3',
        series: handoverSeries(3),
        ...(reference ? { reference } : {}),
      },
      {
        title: `Wait under contention: ${s.contenders} contenders, limit ${s.limit}, hold ${s.holdMs} ms (want → hold; CLIs include process start-up)`,
        series: waitSeries,
      },
    ],
  )
}

export function writeReport(r: BenchResults): void {
  const { tables } = buildTables(r)
  const m = r.machine
  const machineLines = [
    `- CPU: ${m.cpu}, ${m.cores} cores; memory ${m.memoryGb.toFixed(1)} GB; ${m.os}`,
    `- Node ${m.node}; ${m.consul} (dev agent on 127.0.0.1, started by the bench)`,
    `- Date: ${m.date}; load average at the end: ${m.loadAverage.map((l) => l.toFixed(2)).join(' / ')}`,
    `- Run: ${r.quick ? 'BENCH_QUICK=1 (smoke run, small samples)' : 'full'}${r.only === undefined ? '' : `, only ${r.only.join(', ')}`}; took ${r.durationS.toFixed(0)} s`,
  ]
  process.stdout.write(`${tables.map(text).join('\n')}\n\nMachine\n${machineLines.join('\n')}\n`)
  if (r.only !== undefined) {
    // Part of a run: the files keep the last full run's figures.
    process.stdout.write(
      '\nBENCH_ONLY: bench/results.md and docs/bench-handover.svg left as they are\n',
    )
    return
  }
  const md = [
    '# Benchmark results',
    '',
    "Written by `npm run bench` (bench/run.ts); every figure from one run against one Consul agent (figure 6's fleet topology: 3 servers and 2 client agents, also started by the bench). Definitions are in each table's notes and in the bench/*.ts file of the figure.",
    '',
    '## Machine',
    '',
    ...machineLines,
    '',
    '![handover and wait-time distributions](../docs/bench-handover.svg)',
    '',
    ...tables.map(markdown),
  ].join('\n')
  writeFileSync(join(repoRoot, 'bench/results.md'), md)
  writeFileSync(join(repoRoot, 'docs/bench-handover.svg'), chart(r))
  process.stdout.write('\nWrote bench/results.md and docs/bench-handover.svg\n')
}
