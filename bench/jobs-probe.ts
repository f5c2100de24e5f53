// A quick look at figure 7 without the whole bench: starts a dev agent, runs one size of the
// `jobs` figure (bench/jobs.ts) or the `jobs-fair` one, prints one line of figures, stops the
// agent. Runs the build (npm run build first).
//   npx tsx bench/jobs-probe.ts --jobs 1000 --limit 10 [--hold 2] [--deadline 120]
//   npx tsx bench/jobs-probe.ts --fair [--jobs 1000] [--small 10] [--limit 4] [--hold 20]
import { parseArgs } from 'node:util'
import { startAgent } from '../test/support/consul-agent.js'
import { measureJobs, measureJobsFair } from './jobs.js'
import { writesOf, type WriteCounts } from './write-counts.js'

const { values } = parseArgs({
  options: {
    jobs: { type: 'string' },
    limit: { type: 'string' },
    hold: { type: 'string' },
    deadline: { type: 'string' },
    fair: { type: 'boolean', default: false },
    small: { type: 'string' },
  },
})
const number = (raw: string | undefined, fallback: number): number => {
  const value = raw === undefined ? fallback : Number(raw)
  if (!Number.isFinite(value) || value <= 0) throw new Error(`want a positive number, not ${raw}`)
  return value
}
const fair = values.fair === true
const jobs = number(values.jobs, 1000)
const limit = number(values.limit, fair ? 4 : 10)
const holdMs = number(values.hold, fair ? 20 : 2)
const deadlineMs = 1000 * number(values.deadline, 120)

const breakdown = (w: WriteCounts, per: number): string =>
  [
    `session create ${(w.sessionCreates / per).toFixed(2)}`,
    `destroy ${(w.sessionDestroys / per).toFixed(2)}`,
    `txn ${(w.transactions / per).toFixed(2)} (lost ${(w.transactionsLost / per).toFixed(2)})`,
    `kv ${(w.kvWrites / per).toFixed(2)}`,
    `renew ${(w.renewals / per).toFixed(2)}`,
  ].join(', ')

async function main(): Promise<void> {
  const agent = await startAgent()
  try {
    if (fair) {
      const r = await measureJobsFair(agent.addr, {
        bigJobs: jobs,
        smallJobs: number(values.small, 10),
        limit,
        holdMs,
        deadlineMs,
      })
      console.log(
        `jobs-fair limit ${r.limit}, ${r.holdMs} ms jobs, A ${r.bigJobs} / B ${r.smallJobs}: ` +
          `window ${(r.windowMs / 1000).toFixed(2)} s (closed by ${r.windowEnd}); ` +
          `slot-time A ${r.bigSlotMs.toFixed(0)} ms, B ${r.smallSlotMs.toFixed(0)} ms; ` +
          `B's share ${r.smallShare.toFixed(3)} = ${r.fairRatio.toFixed(2)}× fair ` +
          `(${r.smallShareFromFirstJob?.toFixed(3) ?? 'none'} from its first job on, at ${r.smallFirstStartMs?.toFixed(1) ?? 'none'} ms); ` +
          `started in the window A ${r.bigStarted}, B ${r.smallStarted}; B done ${r.smallDone}`,
      )
      return
    }
    const r = await measureJobs(agent.addr, { jobs, limit, holdMs, deadlineMs })
    const failed = Object.entries(r.failures)
    // Per job done; totals when none was done.
    const per = Math.max(1, r.done)
    const each = r.done > 0 ? '/job' : ' in all'
    console.log(
      `jobs ${r.done} of ${r.jobs} done in ${(r.wallMs / 1000).toFixed(1)} s` +
        `${r.timedOut ? ' (deadline)' : ''}${failed.length ? `, failed ${failed.map(([k, n]) => `${k} ${n}`).join(' ')}` : ''}; ` +
        `${r.jobsPerSecond.toFixed(1)} jobs/s; peak sessions ${r.peakSessions}; ` +
        `RSS added ${r.rssAddedMb.toFixed(1)} MB; CPU ${(r.cpuMs / per).toFixed(2)} ms${each}; ` +
        `writes ${(writesOf(r.writes) / per).toFixed(2)}${each} (${breakdown(r.writes, per)}); ` +
        `requests ${(r.writes.requests / per).toFixed(2)}${each}; ` +
        `tokens ${r.done < 2 ? 'not judged' : r.tokens.increasing ? 'increasing' : `NOT increasing (repeated ${r.tokens.repeated}, not after an earlier job ${r.tokens.notAfterEarlier})`}` +
        `, start-order inversions ${r.tokens.startOrderInversions}`,
    )
  } finally {
    await agent.stop()
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(error)
    process.exit(1)
  },
)
