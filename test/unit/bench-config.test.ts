// The bench's sizes from the environment (bench/config.ts): BENCH_REPLICAS narrows the replicas
// figure to some replica counts on the one agent, and a count list that is not one is refused with
// the variable's name and an example.
import assert from 'node:assert/strict'
import { afterEach, describe, it } from 'node:test'
import { JOBS_V8_CONTROLS, benchConfig, countList } from '../../bench/config.js'

describe('the bench configuration', () => {
  const saved = { ...process.env }
  afterEach(() => {
    for (const name of ['BENCH_REPLICAS', 'BENCH_QUICK', 'BENCH_JOBS']) {
      if (saved[name] === undefined) delete process.env[name]
      else process.env[name] = saved[name]
    }
  })

  it('runs the replicas figure at 12 and 40 replicas and on the cluster by default', () => {
    delete process.env['BENCH_REPLICAS']
    delete process.env['BENCH_QUICK']
    const { replicas } = benchConfig()
    assert.deepEqual(replicas.counts, [12, 40])
    assert.deepEqual(replicas.clusterCounts, [12])
  })

  it('runs only the counts BENCH_REPLICAS names, on the one agent', () => {
    delete process.env['BENCH_QUICK']
    process.env['BENCH_REPLICAS'] = '12'
    assert.deepEqual(benchConfig().replicas.counts, [12])
    assert.deepEqual(benchConfig().replicas.clusterCounts, [])
    process.env['BENCH_REPLICAS'] = ' 4, 8 '
    process.env['BENCH_QUICK'] = '1'
    assert.deepEqual(benchConfig().replicas.counts, [4, 8])
  })

  it("runs figure 7's largest size again under each V8 control, then as the floor", () => {
    delete process.env['BENCH_QUICK']
    process.env['BENCH_JOBS'] = '10000,1000'
    const runs = benchConfig().jobs.map((setup) => [setup.jobs, setup.v8Flags, setup.floor])
    assert.deepEqual(runs, [
      [10_000, undefined, undefined],
      [1000, undefined, undefined],
      ...JOBS_V8_CONTROLS.map((flags) => [10_000, flags, undefined]),
      [10_000, undefined, true],
    ])
  })

  it('follows each fleet of 20 ms jobs with the same processes apart, a prefix and a share each', () => {
    delete process.env['BENCH_QUICK']
    const fleet = benchConfig().jobsFleet.map((x) => [x.processes, x.jobsPerProcess, x.holdMs])
    const apart = benchConfig().jobsFleet.filter((x) => x.apart === true)
    assert.deepEqual(
      apart.map((x) => [x.processes, x.jobsPerProcess, x.holdMs, x.limit]),
      [
        [4, 500, 20, 2],
        [4, 2000, 20, 2],
      ],
    )
    // Right after the shared setup it is the floor of; 8 slots instead of 10: a longer deadline.
    const shared = benchConfig().jobsFleet.find((x) => x.processes === 4 && x.holdMs === 20)
    const index = fleet.findIndex(([p, j, h]) => p === 4 && j === 500 && h === 20)
    assert.equal(benchConfig().jobsFleet[index + 1]?.apart, true)
    assert.equal(apart[0]?.deadlineMs, ((shared?.deadlineMs ?? 0) * 10) / 8)
  })

  it('refuses a count list that is not one, naming the variable and an example', () => {
    for (const raw of ['0', '12,x', '1.5', '-3']) {
      process.env['BENCH_REPLICAS'] = raw
      assert.throws(
        () => countList('BENCH_REPLICAS', 'replica counts', '12'),
        new Error(`BENCH_REPLICAS=${raw}: want replica counts >= 1, e.g. 12`),
      )
    }
    delete process.env['BENCH_REPLICAS']
    assert.equal(countList('BENCH_REPLICAS', 'replica counts', '12'), undefined)
  })
})
