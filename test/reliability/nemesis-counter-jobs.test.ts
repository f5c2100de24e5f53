// The nemesis suite's lost-update workload run by pooled jobs (test/support/nemesis-runs.ts): four
// processes, each running eight withSlot jobs at once, each job a fenced CAS increment or three of
// a counter. No update lost, no CAS lost under a holding fence, and no token reused or out of
// order: a job's token is greater than those of its process's earlier jobs and than every token it
// read from the counter's last writer.
import { describe, it } from 'node:test'
import { nemesisTimeoutMs } from '../support/nemesis-assert.js'
import { COUNTER_SECONDS, counterRun } from '../support/nemesis-runs.js'

describe('the nemesis and a counter written by many jobs of each process', () => {
  it('loses no update and reuses no token', { timeout: nemesisTimeoutMs(COUNTER_SECONDS) }, (t) =>
    counterRun(t, 'counter-jobs', 3404, 8),
  )
})
