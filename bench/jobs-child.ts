// One process of the pooled-jobs figures (bench/jobs.ts): `jobs` calls of `withSlot` on the
// default client (no `consul` option; the address comes from CONSUL_HTTP_ADDR, the agent's),
// all submitted at once when the parent says `go`, each holding `holdMs` (a timer). The child
// counts the requests its HTTP client had answered (or failed) from `go` on (bench/write-counts.ts),
// from the library's diagnostics channels of its requests (docs/observability.md): no proxy between it and the agent takes CPU from
// the jobs.
// Like bench/replica-child.ts it is bundled to .cache/bench/ and run by
// plain node, so that it imports the built package by its name.
//
// With JOBS_FLOOR=1 in its environment it is the floor of those figures: the same jobs under a limit
// kept in the process, with tokens from a counter (no Consul, no library call).
//
// Usage: node jobs-child.mjs <prefix> <limit> <jobs> <holdMs>
// stdin:  `go` submits the jobs; `stop` (or stdin's end) reports and exits, whatever still runs.
// stdout: `U`                the library is loaded, ready for `go`
//         `F <clock ms>`     the `limit`th job of this process started: its jobs have taken every slot
//         `D`                every job has settled (done or failed)
//         `J <json>`         the report (JobsChildReport in bench/jobs.ts), the last line
import { subscribe } from 'node:diagnostics_channel'
import { withSlot } from 'rx-consul-semaphore'
import { clockTickMs, readThreads, ticksInMs, ticksSince } from './thread-cpu.js'
import { countRequest, noWrites } from './write-counts.js'

const [prefix = '', limitArg = '10', jobsArg = '1', holdArg = '2'] = process.argv.slice(2)
const limit = Number(limitArg)
const jobs = Number(jobsArg)
const holdMs = Number(holdArg)

/**
 * The machine's monotonic clock (CLOCK_MONOTONIC, which every process of the machine shares), in
 * ms with sub-millisecond resolution. Not `performance.timeOrigin + performance.now()`: each
 * process reads its time origin once at its start, and processes started together disagree by
 * tenths of a millisecond, more under load, which is as long as a hand-over between them.
 */
const clock = (): number => Number(process.hrtime.bigint()) / 1e6
const say = (line: string): void => void process.stdout.write(`${line}\n`)

/** One done job: [start order, fencing token (decimal), start, end] (clock ms). */
type JobRecord = [number, string, number, number]
const records: JobRecord[] = []
const failures = new Map<string, number>()
let started = 0
let settled = 0
let submittedAt: number | undefined
let cpuBefore: NodeJS.CpuUsage | undefined
/** The threads' CPU at `go` (bench/thread-cpu.ts), and a tick's length, read before it. */
let threadsBefore: ReturnType<typeof readThreads>
const tickMs = clockTickMs()
let rssBefore = 0
/** The kernel's peak RSS of this process so far (getrusage's ru_maxrss): no sampling to pay for. */
const peakRss = (): number => process.resourceUsage().maxRSS * 1024

/**
 * The requests answered (or failed) since `go` (bench/write-counts.ts). A request still unanswered
 * at the report (a long poll) is not counted.
 */
const writes = noWrites()
interface ClientRequest {
  readonly method: string
  readonly path: string
}
const count = ({ method, path }: ClientRequest, status: number): void => {
  if (submittedAt !== undefined) countRequest(writes, method, path, status)
}
subscribe('rx-consul-semaphore:http.request.finish', (message) => {
  const { request, response } = message as {
    request: ClientRequest
    response: { statusCode: number }
  }
  count(request, response.statusCode)
})
subscribe('rx-consul-semaphore:http.request.error', (message) =>
  count((message as { request: ClientRequest }).request, 0),
)

const hold = (): Promise<void> => new Promise((done) => setTimeout(done, holdMs))

/** What a job reads of its slot. */
interface JobSlot {
  assertHolding(): bigint
}

/**
 * The floor's slots: at most `limit` jobs at once in this process, the others in a FIFO, each job's
 * token the next number of a counter. What any limiter of promises costs Node, and no more.
 */
function localSlots(): (
  work: (signal: AbortSignal, slot: JobSlot) => Promise<void>,
) => Promise<void> {
  const queue: (() => void)[] = []
  let head = 0
  let running = 0
  let token = 0n
  const signal = new AbortController().signal
  const next = (): void => {
    running--
    if (head < queue.length) queue[head++]?.()
    if (head === queue.length) queue.length = head = 0
  }
  return (work) =>
    new Promise<void>((resolve, reject) => {
      const run = (): void => {
        running++
        const mine = ++token
        work(signal, { assertHolding: () => mine })
          .then(resolve, reject)
          .finally(next)
      }
      if (running < limit) run()
      else queue.push(run)
    })
}

const underLimit =
  process.env['JOBS_FLOOR'] === '1'
    ? localSlots()
    : (work: (signal: AbortSignal, slot: JobSlot) => Promise<void>): Promise<void> =>
        withSlot({ prefix, limit }, work)

async function job(): Promise<void> {
  try {
    await underLimit(async (_signal, slot) => {
      // The token first: the job must not run under a slot it does not hold.
      const token = slot.assertHolding()
      const order = started++
      const start = clock()
      if (started === limit) say(`F ${start}`)
      await hold()
      records.push([order, token.toString(), start, clock()])
    })
  } catch (error) {
    const named = error instanceof Error ? (error as Error & { kind?: unknown }) : undefined
    const kind =
      typeof named?.kind === 'string' ? named.kind : (named?.name ?? `thrown ${typeof error}`)
    failures.set(kind, (failures.get(kind) ?? 0) + 1)
  } finally {
    if (++settled === jobs) say('D')
  }
}

function go(): void {
  if (submittedAt !== undefined) return
  rssBefore = process.memoryUsage.rss()
  cpuBefore = process.cpuUsage()
  threadsBefore = readThreads()
  submittedAt = clock()
  for (let i = 0; i < jobs; i++) void job()
}

let reported = false
function report(): void {
  if (reported) return
  reported = true
  const cpu = process.cpuUsage(cpuBefore)
  const threads = ticksSince(threadsBefore, readThreads())
  const end = clock()
  // Exits once the report is written: stdout is a pipe, and a large report would be cut short.
  process.stdout.write(
    `J ${JSON.stringify({
      submittedAt: submittedAt ?? end,
      reportedAt: end,
      submitted: submittedAt === undefined ? 0 : jobs,
      settled,
      rssBeforeMb: rssBefore / 2 ** 20,
      rssPeakMb: peakRss() / 2 ** 20,
      cpuMs: (cpu.user + cpu.system) / 1000,
      threadsCpuMs: threads && ticksInMs(threads, tickMs),
      failures: Object.fromEntries(failures),
      writes,
      records,
    })}\n`,
    // Jobs still waiting are left to the parent's clean-up (it removes the prefix's sessions).
    () => process.exit(0),
  )
}

let input = ''
process.stdin.setEncoding('utf8')
process.stdin.on('data', (chunk: string) => {
  input += chunk
  const lines = input.split('\n')
  input = lines.pop() ?? ''
  for (const line of lines) {
    if (line.trim() === 'go') go()
    else if (line.trim() === 'stop') report()
  }
})
process.stdin.once('end', report)
say('U')
