// exclusive(...) on one long-lived client over thousands of distinct task keys: nothing per task
// key stays in the process once its task is done (issue 23: the shared-watch registry used to keep
// one entry per key for as long as the client lived).
import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { from, lastValueFrom, reduce } from 'rxjs'
import { exclusive, type ExclusiveClosed, type ExclusiveResult } from '../../src/index.js'
import { commonWatchCount } from '../../src/effects/common-watch.js'
import { agentSuite } from '../support/agent-suite.js'
import { testPrefix } from '../support/tracked.js'
import { listPrefix } from '../support/observe.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'

/** A full collection; the test runner starts files without --expose-gc, so it is exposed here. */
function collectGarbage(): void {
  setFlagsFromString('--expose-gc')
  ;(runInNewContext('gc') as () => void)()
}

describe('exclusive on a long-lived client', { timeout: SUITE_TIMEOUT_MS }, () => {
  const agent = agentSuite()

  /** Runs `count` distinct tasks under `prefix` (each its own key, no watchPrefix) to the end. */
  const runTasks = async (prefix: string, first: number, count: number) => {
    let heldWhileRunning = 0
    let onClosed!: (closed: ExclusiveClosed) => void
    const closed = new Promise<ExclusiveClosed>((done) => (onClosed = done))
    const ids = Array.from({ length: count }, (_, i) => first + i)
    // Only the outcome of each result is kept: the results themselves would hold 2,000 keys.
    const outcomes = await lastValueFrom(
      from(ids).pipe(
        exclusive<number, number>({
          consul: agent.client,
          keyOf: (id) => `${prefix}/task/${id}`,
          run: async (id) => {
            // The task's loss watch is subscribed once run has started: let it be.
            await Promise.resolve()
            heldWhileRunning = Math.max(heldWhileRunning, commonWatchCount())
            return id
          },
          concurrency: 16,
          onDone: 'delete',
          onClosed,
        }),
        reduce<ExclusiveResult<number, number>, Record<string, number>>(
          (counts, r) => ({ ...counts, [r.outcome]: (counts[r.outcome] ?? 0) + 1 }),
          {},
        ),
      ),
    )
    return { outcomes, heldWhileRunning, closed: await closed }
  }

  it('holds no shared watch, and no more heap, once 4,000 distinct tasks are done', async (t) => {
    const prefix = testPrefix(t, agent.url, 'exclusive-registry')
    // A first round of 2,000 tasks warms up the client (connections, compiled code, the agent's
    // answers) before the heap is read: after 200 tasks the next 2,000 still grew it by 1.2 MB.
    const warmup = await runTasks(prefix, 0, 2000)
    assert.deepEqual(warmup.outcomes, { done: 2000 })
    assert.equal(commonWatchCount(), 0, 'no shared watch left after the warm-up')
    collectGarbage()
    const heapBefore = process.memoryUsage().heapUsed

    // Two measured rounds: what a round leaves by chance (V8's own state, between -0.3 and
    // +1.1 MB a round on a loaded machine) does not add up, what it leaves per key does.
    for (const first of [2000, 4000]) {
      const run = await runTasks(prefix, first, 2000)
      assert.deepEqual(run.outcomes, { done: 2000 })
      assert.equal(run.closed.error, undefined)
      assert.ok(run.heldWhileRunning >= 1, 'a running task holds its watch (the count is live)')
      assert.ok(run.heldWhileRunning <= 16, `at most one watch per running task`)
      assert.equal(commonWatchCount(), 0, 'no shared watch left for 2,000 finished task keys')
    }

    collectGarbage()
    const grownKb = (process.memoryUsage().heapUsed - heapBefore) / 1024
    t.diagnostic(`heap after 4,000 more task keys: ${grownKb.toFixed(0)} KB more`)
    // A registry that keeps an entry per key kept about 1.6 KB each: 6.4 MB over 4,000 keys.
    assert.ok(grownKb < 2048, `the heap grew by ${grownKb.toFixed(0)} KB over 4,000 task keys`)

    assert.deepEqual(await listPrefix(agent.url, prefix), [], 'every task key deleted')
  })
})
