// Turns a run's results into the printed tables, bench/results.md (tables, targets with
// PASS/MISS, the machine) and docs/bench-handover.svg.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { renderChart, type Series } from './chart.js'
import { repoRoot } from './children.js'
import type { ContentionRun } from './contention.js'
import type { HandoverRun } from './handover.js'
import { measured, type BenchResults, type NotMeasured, type PartitionRun } from './results.js'
import { summarize } from './stats.js'

type Table = {
  readonly title: string
  readonly head: readonly string[]
  readonly rows: readonly (readonly string[])[]
  readonly notes?: readonly string[]
}

const ms = (v: number | undefined): string =>
  v === undefined || Number.isNaN(v) ? '—' : v >= 100 ? v.toFixed(0) : v.toFixed(1)
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
      "consul lock -n 1 runs Consul's Lock recipe (one key); ours run the semaphore recipe at limit 1.",
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
      'Every request of every contender passes one fault proxy in pass mode, which counts them. CAS attempts = writes of .lock (PUT /v1/txn for ours, PUT .lock?cas= for consul lock); lost = attempts − 2 per acquisition (one acquire, one release).',
      `Wait = wanting a slot (semaphore created / process spawned) → holding; for the CLIs it includes process start-up${r.rxsemStartupMs === undefined ? '' : ` (the built rxsem: ${ms(r.rxsemStartupMs)} ms to print --help)`}. Queued wait starts when the process printed that it is contending (no start-up). Jain's index over each contender's mean wait (from wanting).`,
    ],
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

  const s = measured(r.scale) ? r.scale : undefined
  tables.push({
    title: '5a. Scale: contenders over prefixes in one process, one client',
    head: ['figure', 'value'],
    rows: s
      ? [
          ['contenders / prefixes / limit', `${s.contenders} / ${s.prefixes} / ${s.limit}`],
          [
            'time until all contending, all slots held',
            `${ms(s.settleMs)} ms (holders ${s.holders})`,
          ],
          [
            'RSS (baseline before contenders)',
            `${s.rssMb.toFixed(1)} MB (${s.baselineRssMb.toFixed(1)} MB)`,
          ],
          ['JS heap used', `${s.heapMb.toFixed(1)} MB`],
          ['TCP sockets in the process (TCPSocketWrap)', String(s.tcpSockets)],
          ['client connections seen by the proxy', String(s.proxyConnections)],
          ['long-poll connections per prefix', s.longPollsPerPrefix.toFixed(2)],
          [
            'churn: acquisitions / prefix snapshots delivered',
            `${s.churnAcquisitions} / ${s.churnSnapshots}`,
          ],
          [
            'CPU per prefix snapshot (process total / snapshots)',
            `${s.cpuUsPerSnapshot.toFixed(0)} µs`,
          ],
          ['CPU per contender-snapshot', `${s.cpuUsPerContenderSnapshot.toFixed(1)} µs`],
          ['failed releases at the end', String(s.failedReleases)],
        ]
      : [['not measured', (r.scale as NotMeasured).notMeasured]],
    notes: [
      'CPU is the whole process during the churn (releases, new sessions, renewals included) divided by the blocking-list answers the proxy passed: an upper bound for the cost of one snapshot.',
    ],
  })
  targets.push({
    what: `${s?.contenders ?? 1000} contenders: RSS < 200 MB`,
    implementation: 'library',
    value: s ? `${s.rssMb.toFixed(1)} MB` : '—',
    threshold: '< 200 MB',
    pass: s ? s.rssMb < 200 : undefined,
  })
  targets.push({
    what: `${s?.contenders ?? 1000} contenders: ≤ 1 long-poll connection per prefix`,
    implementation: 'library',
    value: s ? s.longPollsPerPrefix.toFixed(2) : '—',
    threshold: '≤ 1',
    pass: s ? s.longPollsPerPrefix <= 1 : undefined,
  })

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

  tables.push({
    title: 'Targets',
    head: ['target', 'implementation', 'value', 'threshold', 'result'],
    rows: targets.map((t) => [t.what, t.implementation, t.value, t.threshold, verdict(t.pass)]),
  })
  return { tables, targets }
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
    `- Run: ${r.quick ? 'BENCH_QUICK=1 (smoke run, small samples)' : 'full'}; took ${r.durationS.toFixed(0)} s`,
  ]
  process.stdout.write(`${tables.map(text).join('\n')}\n\nMachine\n${machineLines.join('\n')}\n`)
  const md = [
    '# Benchmark results',
    '',
    "Written by `npm run bench` (bench/run.ts); every figure from one run against one Consul agent. Definitions are in each table's notes and in the bench/*.ts file of the figure.",
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
