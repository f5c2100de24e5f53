// A waiter's place in the queue and its estimated wait, in a steady stream on a real agent: the
// contenders of a process join one after the other, each holds a while and leaves, and a new one
// joins behind the others as one leaves.
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { semaphore } from '../../src/index.js'
import { agentSuite } from '../support/agent-suite.js'
import { closing, keep, testPrefix } from '../support/tracked.js'
import { eventually } from '../support/observe.js'

/** What one contender showed while it waited, and when it held. */
interface Waited {
  /** `rank` of each waiting state, in order (repeats left out). */
  readonly ranks: number[]
  /** The first estimate it showed, and when (ms, performance.now()). */
  estimate?: { readonly at: number; readonly ms: number }
  /** When `holding` turned true. */
  heldAt?: number
}

describe('queue position and estimated wait', () => {
  const agent = agentSuite()

  it('shows each waiter fewer or as many ahead as before, fewer than the limit when it acquires, and an estimate within 2x of its real wait', async (t) => {
    const prefix = testPrefix(t, agent.url, 'queue-position')
    const limit = 2
    // Long enough that a scheduling stall of the loaded machine is small beside a wait.
    const holdMs = 300
    const queued = 8
    const total = 40
    const waited: Waited[] = []
    let started = 0
    let done = 0
    const start = (): void => {
      const record: Waited = { ranks: [] }
      waited.push(record)
      started++
      const sem = closing(t, semaphore({ prefix, limit, consul: agent.client }))
      keep(
        t,
        sem.state$.subscribe((s) => {
          if (record.heldAt !== undefined) return
          if (s.holding) {
            record.heldAt = performance.now()
            setTimeout(() => {
              void sem.close().finally(() => {
                done++
                if (started < total) start()
              })
            }, holdMs)
            return
          }
          if (s.rank !== undefined && s.rank !== record.ranks.at(-1)) record.ranks.push(s.rank)
          if (s.estimatedWaitMs !== undefined && record.estimate === undefined) {
            record.estimate = { at: performance.now(), ms: s.estimatedWaitMs }
          }
        }),
      )
    }
    for (let i = 0; i < limit + queued; i++) start()
    await eventually(`${total} tenures`, () => done === total || undefined, 60_000)

    for (const [i, record] of waited.entries()) {
      for (let k = 1; k < record.ranks.length; k++) {
        assert.ok(
          (record.ranks[k] as number) <= (record.ranks[k - 1] as number),
          `contender ${i} saw ranks ${record.ranks.join(' ')}`,
        )
      }
      // Next in line (0) when one slot frees; when the holders that started together free both
      // slots at once, the one behind it (1) takes the other.
      if (record.ranks.length > 0) {
        assert.ok(
          (record.ranks.at(-1) as number) < limit,
          `contender ${i} acquired at rank ${record.ranks.at(-1)}`,
        )
      }
    }
    // The stream is steady once the first contenders and those that replaced them have all held:
    // from then on, each estimate rests on intervals of the stream alone.
    const steady = waited.slice(2 * (limit + queued))
    const ratios = steady.map((record, i) => {
      const { estimate, heldAt } = record
      assert.ok(estimate !== undefined && heldAt !== undefined, `contender ${i} had no estimate`)
      return (heldAt - estimate.at) / estimate.ms
    })
    t.diagnostic(`real wait / estimate: ${ratios.map((r) => r.toFixed(2)).join(' ')}`)
    for (const ratio of ratios) assert.ok(ratio >= 0.5 && ratio <= 2, `ratio ${ratio.toFixed(2)}`)
  })
})
