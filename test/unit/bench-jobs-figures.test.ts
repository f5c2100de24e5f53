// The arithmetic of the pooled-jobs bench figures (bench/jobs.ts), on hand-made job records: the
// fencing-token check, the slot-time share of the two-process figure, the fleet's overlap, windows
// and slot gaps, and which requests count as Consul writes.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  checkTokens,
  fairWindow,
  fleetWindows,
  mostAtOnce,
  slotGaps,
  type JobsChildReport,
  type JobsRun,
} from '../../bench/jobs.js'
import { jobsFigure } from '../../bench/report.js'
import { addWrites, countRequest, noWrites, writesOf } from '../../bench/write-counts.js'

type JobRecord = JobsChildReport['records'][number]
/** A job done: start order, token, start and end (ms). */
const job = (order: number, token: number, start: number, end: number): JobRecord => [
  order,
  String(token),
  start,
  end,
]

describe('checkTokens', () => {
  it('accepts concurrent jobs whose tokens do not follow their start order', () => {
    // Two slots: jobs 0 and 1 overlap, and 1 got the smaller token; 2 starts after both ended.
    const check = checkTokens([job(0, 20, 0, 5), job(1, 10, 1, 6), job(2, 30, 7, 9)])
    assert.equal(check.increasing, true)
    assert.equal(check.startOrderInversions, 1)
  })

  it('refuses a token that two jobs ran under', () => {
    const check = checkTokens([job(0, 10, 0, 5), job(1, 10, 6, 9)])
    assert.equal(check.increasing, false)
    assert.equal(check.repeated, 2)
  })

  it('refuses a job that started after another ended with a smaller token', () => {
    // Job 1 overlaps nothing smaller; job 2 starts after job 0 (token 30) ended, with token 20.
    const check = checkTokens([job(0, 30, 0, 5), job(1, 40, 1, 8), job(2, 20, 6, 9)])
    assert.equal(check.increasing, false)
    assert.equal(check.repeated, 0)
    assert.equal(check.notAfterEarlier, 1)
  })

  it('compares tokens as integers, not as text', () => {
    // '9' > '10' as strings; as tokens 10 follows 9.
    assert.equal(checkTokens([job(0, 9, 0, 1), job(1, 10, 2, 3)]).increasing, true)
  })
})

const report = (
  submittedAt: number,
  submitted: number,
  records: readonly JobRecord[],
  reportedAt = 1000,
): JobsChildReport => ({
  submittedAt,
  reportedAt,
  submitted,
  settled: records.length,
  rssBeforeMb: 0,
  rssPeakMb: 0,
  cpuMs: 0,
  failures: {},
  writes: noWrites(),
  records,
})

describe('fairWindow', () => {
  it('counts the slot-time of each process from B submitting until B starts its last job', () => {
    // A runs 0–40 and 40–80 on one slot and 10–50 on another; B submits at 20, runs 50–70, 70–90.
    const big = report(0, 100, [job(0, 1, 0, 40), job(1, 2, 10, 50), job(2, 4, 40, 80)])
    const small = report(20, 2, [job(0, 3, 50, 70), job(1, 5, 70, 90)])
    const w = fairWindow(big, small)
    assert.equal(w.windowEnd, 'small')
    assert.equal(w.windowMs, 50) // 20 → 70
    // A: 20–40, 20–50, 40–70 = 20 + 30 + 30; B: 50–70 = 20.
    assert.equal(w.bigSlotMs, 80)
    assert.equal(w.smallSlotMs, 20)
    assert.equal(w.smallShare, 0.2)
    assert.equal(w.fairRatio, 0.4)
    assert.equal(w.smallFirstStartMs, 30)
    // From 50 on: A 40–80 → 20, B 50–70 → 20.
    assert.equal(w.smallShareFromFirstJob, 0.5)
  })

  it('closes the window when A runs out of waiting jobs first: B starved gets nothing', () => {
    const big = report(0, 2, [job(0, 1, 0, 40), job(1, 2, 30, 60)])
    const small = report(20, 10, [], 70)
    const w = fairWindow(big, small)
    assert.equal(w.windowEnd, 'big')
    assert.equal(w.windowMs, 10)
    assert.equal(w.smallShare, 0)
    assert.equal(w.smallFirstStartMs, undefined)
    assert.equal(w.smallShareFromFirstJob, undefined)
  })

  it('closes it at the first report when neither ran all its jobs', () => {
    const big = report(0, 100, [job(0, 1, 0, 40)], 500)
    const small = report(20, 10, [job(0, 2, 10, 30)], 400)
    assert.equal(fairWindow(big, small).windowEnd, 'deadline')
    assert.equal(fairWindow(big, small).windowMs, 380)
  })
})

describe('mostAtOnce', () => {
  it('counts the jobs that overlap, a slot handed on at the same instant as one', () => {
    // 0–10 and 5–15 overlap; 10–20 starts when 0–10 ends; 8–14 would be the third at once.
    assert.equal(mostAtOnce([job(0, 1, 0, 10), job(1, 2, 5, 15), job(2, 3, 10, 20)]), 2)
    assert.equal(mostAtOnce([job(0, 1, 0, 10), job(1, 2, 5, 15), job(2, 3, 8, 14)]), 3)
    assert.equal(mostAtOnce([]), 0)
  })
})

describe('fleetWindows', () => {
  // Jobs of 100 ms every 200 ms from `first`, starting before `until`: two processes in turns.
  const turns = (first: number, until: number): JobRecord[] =>
    Array.from({ length: Math.floor((until - first) / 200) }, (_, i) =>
      job(i, 2 * i + first, first + 200 * i, first + 200 * i + 100),
    )

  it('gives every process its fair share when they take turns, over 2 s windows by 0.5 s', () => {
    const a = report(0, 1000, turns(0, 6000), 6000)
    const b = report(0, 1000, turns(100, 6100), 6000)
    const f = fleetWindows([a, b])
    assert.ok(f)
    assert.equal(f.spanMs, 6000) // neither ran all its jobs: until the reports
    assert.equal(f.windows, 9) // starts 0, 500, …, 4000
    assert.equal(f.short, false)
    assert.equal(f.min.share, 1)
    assert.equal(f.max.share, 1)
  })

  it("closes the span at the first process's last job start, and finds the least and most", () => {
    // A runs all its 10 jobs (the last starts at 1800); B one long job, 100–900, then nothing.
    const a = report(0, 10, turns(0, 2000), 3000)
    const b = report(0, 100, [job(0, 1, 100, 900), job(1, 3, 2100, 2200)], 3000)
    const f = fleetWindows([a, b], 1000, 500)
    assert.ok(f)
    assert.equal(f.spanMs, 1800)
    assert.equal(f.windows, 2) // 0–1000 and 500–1500
    // 0–1000: A 5 × 100 = 500, B 800; 500–1500: A 500, B 400.
    assert.deepEqual(f.min, { share: (2 * 500) / 1300, process: 0, atMs: 0 })
    assert.deepEqual(f.max, { share: (2 * 800) / 1300, process: 1, atMs: 0 })
  })

  it('marks a span shorter than one window and measures one window over it', () => {
    const a = report(0, 2, [job(0, 1, 0, 100), job(1, 3, 200, 300)], 400)
    const b = report(50, 5, [job(0, 2, 100, 200)], 400)
    const f = fleetWindows([a, b])
    assert.ok(f)
    assert.equal(f.short, true)
    assert.equal(f.windows, 1)
    assert.equal(f.spanMs, 150) // B's go at 50 → A's last start at 200
    // 50–200: A 50 + 0, B 100: shares 2·50/150 and 2·100/150.
    assert.ok(Math.abs(f.min.share - 2 / 3) < 1e-9)
    assert.ok(Math.abs(f.max.share - 4 / 3) < 1e-9)
    // From every process's first job on (B's at 100): 100–200, where only B ran.
    const later = fleetWindows([a, b], 2000, 500, true)
    assert.equal(later?.spanMs, 100)
    assert.deepEqual([later?.min.share, later?.max.share], [0, 2])
  })

  it('has nothing to say about one process', () => {
    assert.equal(fleetWindows([report(0, 1, [job(0, 1, 0, 10)])]), undefined)
  })
})

describe('slotGaps', () => {
  it('pairs each start with the slot freed longest ago, and counts handovers to another process', () => {
    // Limit 2: A 0–10 and 0–10; then B starts at 12 and A at 15, on the two freed slots.
    const a = report(0, 3, [job(0, 1, 0, 10), job(1, 2, 0, 10), job(2, 4, 15, 20)], 100)
    const b = report(0, 5, [job(0, 3, 12, 20)], 100)
    const g = slotGaps([a, b], 2)
    assert.equal(g.n, 2)
    assert.equal(g.p50Ms, 3.5) // gaps 2 and 5
    assert.equal(g.toOtherProcess, 0.5)
    // The span is 0 → A's last start (15): 10 + 10 + 3 + 0 of 2 × 15.
    assert.equal(g.utilisation, 23 / 30)
  })
})

describe('countRequest', () => {
  it('counts session creates and destroys, transactions and key writes, and leaves renewals and reads out', () => {
    const counts = noWrites()
    for (const [method, path, status] of [
      ['PUT', '/v1/session/create', 200],
      ['PUT', '/v1/session/destroy/abc', 200],
      ['PUT', '/v1/session/renew/abc', 200],
      ['PUT', '/v1/txn', 200],
      ['PUT', '/v1/txn', 409],
      ['PUT', '/v1/kv/p/abc', 200],
      ['DELETE', '/v1/kv/p/abc', 0],
      ['GET', '/v1/kv/p', 200],
    ] as const)
      countRequest(counts, method, path, status)
    assert.deepEqual(counts, {
      sessionCreates: 1,
      sessionDestroys: 1,
      transactions: 2,
      transactionsLost: 1,
      kvWrites: 2,
      renewals: 1,
      requests: 8,
    })
    assert.equal(writesOf(counts), 6)
  })
})

describe('addWrites', () => {
  it("adds the children's counts field by field", () => {
    const a = noWrites()
    countRequest(a, 'PUT', '/v1/txn', 200)
    countRequest(a, 'PUT', '/v1/txn', 409)
    const b = noWrites()
    countRequest(b, 'PUT', '/v1/session/create', 200)
    countRequest(b, 'GET', '/v1/kv/p?index=3', 0)
    assert.deepEqual(addWrites([a, b]), {
      sessionCreates: 1,
      sessionDestroys: 0,
      transactions: 2,
      transactionsLost: 1,
      kvWrites: 0,
      renewals: 0,
      requests: 4,
    })
  })
})

describe("figure 7's V8 control runs and floor", () => {
  /** A run of figure 7 with `rssAddedMb`, under `v8Flags` if given; every job done. */
  const run = (
    jobs: number,
    rssAddedMb: number,
    v8Flags?: readonly string[],
    floor?: boolean,
  ): JobsRun => ({
    jobs,
    limit: 10,
    holdMs: 2,
    deadlineMs: 120_000,
    v8Flags,
    floor,
    done: jobs,
    failures: {},
    timedOut: false,
    wallMs: 1000,
    jobsPerSecond: jobs,
    peakSessions: 10,
    sessionPolls: 10,
    rssAddedMb,
    cpuMs: jobs * 0.2,
    cpuMsPerJob: 0.2,
    writes: noWrites(),
    writesPerJob: 1,
    tokens: checkTokens([job(0, 10, 0, 1), job(1, 20, 2, 3)]),
  })

  it('are columns of the table, and the targets are judged on the run without flags', () => {
    // Listed first, the control run would be the one a lookup by size found.
    const control = run(10_000, 30, ['--max-opt=1'])
    const { tables, targets } = jobsFigure([control, run(10_000, 70)], undefined)
    const rss = targets.find((t) => t.what === '10,000 pending withSlot jobs, limit 10: RSS added')
    assert.equal(rss?.value, '70.0 MB')
    assert.equal(rss?.pass, false)
    assert.deepEqual(tables[0]?.head, [
      'figure',
      '10,000 jobs, control: node --max-opt=1',
      '10,000 jobs',
    ])
  })

  it("is a column too, and each run's RSS is given as a ratio of the floor's at its size", () => {
    const floor = run(10_000, 20, undefined, true)
    const { tables, targets } = jobsFigure([floor, run(1000, 40), run(10_000, 70)], undefined)
    const rss = targets.find((t) => t.what === '10,000 pending withSlot jobs, limit 10: RSS added')
    assert.equal(rss?.value, '70.0 MB')
    assert.deepEqual(tables[0]?.head, [
      'figure',
      '10,000 jobs, floor: a limit kept in the process, no Consul',
      '1,000 jobs',
      '10,000 jobs',
    ])
    const ratios = tables[0]?.rows.find(([label]) => label === "… ÷ the floor's, as many jobs")
    assert.deepEqual(ratios, ["… ÷ the floor's, as many jobs", '—', '—', '3.50×'])
  })
})
