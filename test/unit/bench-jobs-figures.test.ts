// The arithmetic of the pooled-jobs bench figures (bench/jobs.ts), on hand-made job records: the
// fencing-token check, the slot-time share of the two-process figure, and which requests count
// as Consul writes.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { SeenRequest } from '../support/fault-proxy.js'
import {
  checkTokens,
  countWrites,
  fairWindow,
  writesOf,
  type JobsChildReport,
} from '../../bench/jobs.js'

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

describe('countWrites', () => {
  const seen = (method: string, path: string, status = 200): SeenRequest => ({
    method,
    path,
    query: '',
    at: 0,
    answer: { status, body: undefined },
  })
  it('counts session creates and destroys, transactions and key writes, and leaves renewals and reads out', () => {
    const counts = countWrites([
      seen('PUT', '/v1/session/create'),
      seen('PUT', '/v1/session/destroy/abc'),
      seen('PUT', '/v1/session/renew/abc'),
      seen('PUT', '/v1/txn'),
      seen('PUT', '/v1/txn', 409),
      seen('PUT', '/v1/kv/p/abc'),
      seen('DELETE', '/v1/kv/p/abc'),
      seen('GET', '/v1/kv/p'),
    ])
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
