// Where a bench child's CPU goes among its threads (bench/thread-cpu.ts), and the fleet figure's
// sum of it over the children (bench/jobs.ts, fleetFigures).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { fleetFigures, type JobsChildReport } from '../../bench/jobs.js'
import {
  kindOfThread,
  readThreads,
  ticksInMs,
  ticksOfStat,
  ticksSince,
  type ThreadCpu,
} from '../../bench/thread-cpu.js'
import { noWrites } from '../../bench/write-counts.js'

/** A `stat` line of a thread named `name`, with `utime` and `stime` ticks. */
const stat = (name: string, utime: number, stime: number): string =>
  `4242 (${name}) S 1 4242 4242 0 -1 4194560 900 0 0 0 ${utime} ${stime} 0 0 20 0 11 0 1234`

describe('ticksOfStat', () => {
  it('adds user and system ticks, counted after the thread name', () => {
    assert.equal(ticksOfStat(stat('node', 120, 30)), 150)
  })

  it('reads a name holding spaces and parentheses', () => {
    assert.equal(ticksOfStat(stat('a (b) c', 7, 5)), 12)
  })

  it('reads nothing from a line that is not a stat line', () => {
    assert.equal(ticksOfStat('no name here'), undefined)
    assert.equal(ticksOfStat('4242 (short) S 1'), undefined)
  })
})

describe('kindOfThread', () => {
  it("tells the main thread by its id, V8's workers by their name, and the rest", () => {
    assert.equal(kindOfThread(100, 100, 'node'), 'main')
    assert.equal(kindOfThread(100, 101, 'V8Worker'), 'v8Workers')
    assert.equal(kindOfThread(100, 102, 'libuv-worker'), 'other')
  })
})

describe('ticksSince', () => {
  const threads = (...rows: [number, keyof ThreadCpu, number][]) =>
    new Map(rows.map(([tid, kind, ticks]) => [tid, { kind, ticks }]))

  it('counts what each kind spent since, a thread started since from zero', () => {
    const before = threads([1, 'main', 50], [2, 'v8Workers', 10], [3, 'v8Workers', 4])
    const now = threads([1, 'main', 80], [2, 'v8Workers', 25], [3, 'v8Workers', 4], [4, 'other', 3])
    assert.deepEqual(ticksSince(before, now), { main: 30, v8Workers: 15, other: 3 })
  })

  it('tells nothing when either reading is missing', () => {
    assert.equal(ticksSince(undefined, threads([1, 'main', 1])), undefined)
    assert.equal(ticksSince(threads([1, 'main', 1]), undefined), undefined)
  })

  it("reads this process's own threads on Linux, its main thread among them", (t) => {
    if (process.platform !== 'linux') return t.skip('no /proc here')
    const mine = readThreads()
    assert.equal(mine?.get(process.pid)?.kind, 'main')
  })

  it('converts ticks to ms', () => {
    assert.deepEqual(ticksInMs({ main: 3, v8Workers: 2, other: 1 }, 10), {
      main: 30,
      v8Workers: 20,
      other: 10,
    })
  })
})

describe('fleetFigures: CPU by kind of thread', () => {
  const setup = { processes: 2, jobsPerProcess: 1, limit: 10, holdMs: 20, deadlineMs: 1000 }
  const child = (threadsCpuMs: ThreadCpu | undefined): JobsChildReport => ({
    submittedAt: 0,
    reportedAt: 100,
    submitted: 1,
    settled: 1,
    rssBeforeMb: 0,
    rssPeakMb: 0,
    cpuMs: 10,
    ...(threadsCpuMs === undefined ? {} : { threadsCpuMs }),
    failures: {},
    writes: noWrites(),
    records: [[0, '1', 0, 20]],
  })

  it("sums the children's threads, kind by kind", () => {
    const run = fleetFigures(
      setup,
      [child({ main: 6, v8Workers: 3, other: 1 }), child({ main: 7, v8Workers: 2, other: 0 })],
      false,
    )
    assert.deepEqual(run.threadsCpuMs, { main: 13, v8Workers: 5, other: 1 })
  })

  it('tells nothing when a child could not tell', () => {
    const run = fleetFigures(
      setup,
      [child({ main: 6, v8Workers: 3, other: 1 }), child(undefined)],
      false,
    )
    assert.equal(run.threadsCpuMs, undefined)
  })
})
