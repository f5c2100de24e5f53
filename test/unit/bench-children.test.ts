// The bench's reading of a child process's CPU from bash's `times` (bench/children.ts).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { childrenCpuMs, processCosts } from '../../bench/children.js'

describe('childrenCpuMs', () => {
  it('adds the user and system time of the children reaped between the two readings', () => {
    const before = '0m0.001s 0m0.000s\n0m0.060s 0m0.030s\n'
    const after = '0m0.003s 0m0.001s\n0m0.105s 0m0.042s\n'
    assert.equal(childrenCpuMs(before + after), 57)
  })

  it('reads minutes too', () => {
    const zero = '0m0.000s 0m0.000s\n'
    assert.equal(childrenCpuMs(`${zero}${zero}${zero}1m2.500s 0m0.250s`), 62_750)
  })

  it('is NaN for anything else, so that a broken reading is not a figure', () => {
    assert.ok(Number.isNaN(childrenCpuMs('')))
    assert.ok(Number.isNaN(childrenCpuMs('bash: times: not found')))
  })
})

describe('processCosts', () => {
  it('reads the CPU and the peak RSS of a process', () => {
    const busy = 'let x = 0; for (let i = 0; i < 3e6; i++) x += i'
    const costs = processCosts([[process.execPath, '-e', busy]], 3)
    assert.ok(costs !== undefined, 'the bench reads peak RSS with GNU time (Debian package time)')
    const [cost] = costs
    // A node process's start alone takes tens of ms of CPU and of MB.
    assert.ok(cost !== undefined && cost.cpuMs > 5, `CPU ${cost?.cpuMs} ms`)
    assert.ok(cost.rssMb > 10, `peak RSS ${cost.rssMb} MB`)
  })
})
