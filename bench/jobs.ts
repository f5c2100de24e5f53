// Figure 7, pooled jobs: many `withSlot` jobs of one process on one prefix, the way a fleet-wide
// concurrency limit is used. The jobs run in child processes (bench/jobs-child.ts) on the default
// client (no `consul` option), which talks to the agent directly (CONSUL_HTTP_ADDR); each child
// counts the requests its client sends, with their answers' status, from the diagnostics channels
// of Node's HTTP client, so that no proxy competes with the jobs for the CPU. The child runs the
// built package under plain node.
//   jobs:       one process, limit 10, N jobs submitted at once, each holding 2 ms. Until every
//               job settled or the deadline: jobs done, wall time, jobs/s, the most sessions of
//               the prefix in Consul at once (/v1/session/list read on the agent directly, every
//               100 ms after the previous answer), RSS added (the child's peak, the kernel's
//               ru_maxrss, minus its RSS right before submitting), CPU per job done (the child's
//               process.cpuUsage from submitting to the end / jobs done), Consul writes per job
//               done (session creates and destroys, transactions, KV PUTs and DELETEs as the child
//               sent them; renewals beside), and the fencing tokens (below). The largest size
//               runs again under V8 flags (`JobsSetup.v8Flags`): V8's share of the RSS.
//   jobs-fair:  two processes on one prefix, limit 4, jobs of 20 ms: A submits its jobs, B its 10
//               once A has started `limit` jobs (A's jobs have taken every slot). Each process's slot-time (the sum of its jobs'
//               run time) while both had a backlog, and B's share of it against its fair 0.5.
//   jobs-fleet: P processes on one prefix, limit 10, each submitting its J jobs when all are
//               ready: the jobs per second of the fleet, the most jobs running at once across
//               processes, CPU and Consul writes per job, each process's share of the slot-time
//               over 2 s windows while all have a backlog, and the fencing tokens (fleetFigures).
//               Apart (`JobsFleetSetup.apart`), each process on a prefix of its own: the floor.
// A deadline bounds each run: what was done by then is reported as measured.
import { spawn, type ChildProcess } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { killTree } from '../test/support/processes.js'
import { builtChild, repoRoot } from './children.js'
import { addWrites, writesOf, type WriteCounts } from './write-counts.js'
import { percentile } from './stats.js'
import { addThreadCpu, type ThreadCpu } from './thread-cpu.js'

export interface JobsSetup {
  readonly jobs: number
  readonly limit: number
  readonly holdMs: number
  readonly deadlineMs: number
  /**
   * V8 flags of the child, for a control run that tells what part of the RSS is V8's own (its
   * young generation, its optimising compilers' working memory); none in the measured runs.
   */
  readonly v8Flags?: readonly string[] | undefined
  /**
   * The floor: the same jobs under a limit kept in the process (no Consul, no library), to tell
   * what the jobs and their promises cost Node itself.
   */
  readonly floor?: boolean | undefined
}

export interface JobsFairSetup {
  /** Jobs of the process with the large backlog (A). */
  readonly bigJobs: number
  /** Jobs of the process that arrives later (B). */
  readonly smallJobs: number
  readonly limit: number
  readonly holdMs: number
  readonly deadlineMs: number
}

export interface JobsFleetSetup {
  /** Child processes, each with its own pool. */
  readonly processes: number
  /** Jobs each process submits at once. */
  readonly jobsPerProcess: number
  /** The limit of the prefix (with `apart`, of each process's own prefix). */
  readonly limit: number
  readonly holdMs: number
  readonly deadlineMs: number
  /**
   * Each process on a prefix of its own, `limit` slots each: what the processes cost without a
   * prefix to share, the floor of the same processes sharing one.
   */
  readonly apart?: boolean | undefined
}

/** What the fencing tokens of the jobs done say (see checkTokens). */
export interface TokenCheck {
  /** Jobs whose token another job also ran under. */
  readonly repeated: number
  /** Jobs that started after another job had ended, with a token not greater than its. */
  readonly notAfterEarlier: number
  /** Neighbours in start order whose tokens go down (concurrent starts may; informational). */
  readonly startOrderInversions: number
  /** No repeat, and every job's token greater than that of every job that ended before it. */
  readonly increasing: boolean
}

export interface JobsRun {
  readonly jobs: number
  readonly limit: number
  readonly holdMs: number
  readonly deadlineMs: number
  /** The child's V8 flags in a control run (`JobsSetup.v8Flags`). */
  readonly v8Flags?: readonly string[] | undefined
  /** The floor's run (`JobsSetup.floor`). */
  readonly floor?: boolean | undefined
  readonly done: number
  /** Jobs that settled with an error, by the error's kind. */
  readonly failures: Readonly<Record<string, number>>
  /** Whether the deadline came before every job settled. */
  readonly timedOut: boolean
  /** From submitting to every job settled (or to the deadline), ms. */
  readonly wallMs: number
  readonly jobsPerSecond: number
  /** Most sessions in Consul at once among those made after the run started (the jobs'). */
  readonly peakSessions: number
  readonly sessionPolls: number
  readonly rssAddedMb: number
  /** The child's CPU from submitting to the end, ms. */
  readonly cpuMs: number
  /** Per job done; Infinity (or NaN) when no job was done. */
  readonly cpuMsPerJob: number
  readonly writes: WriteCounts
  readonly writesPerJob: number
  readonly tokens: TokenCheck
}

export interface JobsFairRun {
  readonly limit: number
  readonly holdMs: number
  readonly deadlineMs: number
  readonly bigJobs: number
  readonly smallJobs: number
  /** From B's submission to the end of the window where both had a job waiting, ms. */
  readonly windowMs: number
  /** Why the window closed: which process ran out of waiting jobs first, or the deadline. */
  readonly windowEnd: 'big' | 'small' | 'deadline'
  /** Slot-time of each process in the window, ms (sum of its jobs' running time in it). */
  readonly bigSlotMs: number
  readonly smallSlotMs: number
  /** Jobs of each process that started in the window. */
  readonly bigStarted: number
  readonly smallStarted: number
  readonly smallDone: number
  /** B's share of the slot-time in the window (fair: 0.5). */
  readonly smallShare: number
  /** smallShare / 0.5 (1 = exactly fair). */
  readonly fairRatio: number
  /**
   * B's share over the window's part from B's first job on, leaving out B's arrival (its session
   * and its place in the queue); undefined when B ran no job in the window.
   */
  readonly smallShareFromFirstJob: number | undefined
  /** From B's submission to B's first job running, ms; undefined when none ran. */
  readonly smallFirstStartMs: number | undefined
}

/**
 * Each process's share of the slot-time against its fair 1/P, over windows of `windowMs` stepped
 * by `stepMs` through the span where every process had a backlog (fleetWindows).
 */
export interface FleetFairness {
  /** From the last process's submission to the first process's last job start (or report), ms. */
  readonly spanMs: number
  readonly windowMs: number
  readonly windows: number
  /** The span was shorter than one window: one window over the whole span instead. */
  readonly short: boolean
  /** Least and greatest share / fair over every window and process, with where it was. */
  readonly min: FleetShare
  readonly max: FleetShare
}

export interface FleetShare {
  readonly share: number
  /** The process, from 0. */
  readonly process: number
  /** The window's start, ms after the span's. */
  readonly atMs: number
}

/**
 * How long a slot stood empty between two jobs, for information: every job's end frees a slot and
 * the next job to start (in any process) takes the slot freed longest ago (first in, first out);
 * slot identities are not recorded, so this pairing is an estimate. Only starts in the span where
 * every process had a backlog count (slots freed then had a job waiting for them).
 */
export interface SlotGaps {
  readonly n: number
  readonly p50Ms: number
  readonly p95Ms: number
  /** Of those, the share where the next job was another process's. */
  readonly toOtherProcess: number
  /** Slot-time in the span / (limit × span): 1 = no slot ever empty while jobs waited. */
  readonly utilisation: number
}

export interface JobsFleetProcess {
  readonly submitted: number
  readonly done: number
  /** Its last job's end, ms after the first `go`; undefined when not all its jobs were done. */
  readonly finishedMs: number | undefined
  readonly tokens: TokenCheck
}

export interface JobsFleetRun extends JobsFleetSetup {
  /** Jobs submitted in all. */
  readonly jobs: number
  readonly done: number
  readonly failures: Readonly<Record<string, number>>
  readonly timedOut: boolean
  /** From the first `go` to the last job's end, ms. */
  readonly spanMs: number
  /** done / spanMs, per second. */
  readonly jobsPerSecond: number
  /** The most job intervals (start to end) that overlapped, across every process. */
  readonly mostAtOnce: number
  /** The children's CPU, user + system, from `go` to the report, summed, ms. */
  readonly cpuMs: number
  readonly cpuMsPerJob: number
  /** The same by kind of thread, summed; undefined when a child could not tell. */
  readonly threadsCpuMs: ThreadCpu | undefined
  readonly writes: WriteCounts
  readonly writesPerJob: number
  readonly perProcess: readonly JobsFleetProcess[]
  /** Jobs whose token another job, of any process, also ran under. */
  readonly tokensRepeatedAcross: number
  /** From the first process done to the last, ms; undefined when one was not done. */
  readonly finishSpreadMs: number | undefined
  /** undefined with one process, or when there was no span where all had a backlog. */
  readonly fairness: FleetFairness | undefined
  /** The same from the moment every process had started a job (start-up left out). */
  readonly fairnessFromFirstJobs: FleetFairness | undefined
  readonly gaps: SlotGaps
}

/** The child's last line (bench/jobs-child.ts). */
export interface JobsChildReport {
  readonly submittedAt: number
  readonly reportedAt: number
  readonly submitted: number
  readonly settled: number
  readonly rssBeforeMb: number
  readonly rssPeakMb: number
  readonly cpuMs: number
  /** The same CPU by kind of thread (bench/thread-cpu.ts); absent where /proc cannot tell. */
  readonly threadsCpuMs?: ThreadCpu | undefined
  readonly failures: Readonly<Record<string, number>>
  /** The requests the child's client sent from `go` on. */
  readonly writes: WriteCounts
  /** [start order, fencing token, start, end] of each job done. */
  readonly records: readonly (readonly [number, string, number, number])[]
}

/** A running jobs child: its lines as they come, and its report once asked for. */
interface Child {
  readonly proc: ChildProcess
  /** Resolves when the child printed a line starting with `tag` (e.g. 'U', 'F', 'D'). */
  line(tag: string): Promise<string>
  send(command: 'go' | 'stop'): void
  /** Asks for the report and waits for it (and for the exit); rejects with the child's stderr. */
  report(): Promise<JobsChildReport>
  /** Kills it (and anything it started) if it still runs. */
  kill(): void
}

function startChild(
  agentAddr: string,
  prefix: string,
  limit: number,
  jobs: number,
  holdMs: number,
  v8Flags: readonly string[] = [],
  floor = false,
): Child {
  const env = {
    ...Object.fromEntries(
      Object.entries(process.env).filter(
        ([name]) => !name.startsWith('CONSUL_') && name !== 'JOBS_FLOOR',
      ),
    ),
    CONSUL_HTTP_ADDR: agentAddr,
    ...(floor ? { JOBS_FLOOR: '1' } : {}),
  }
  const proc = spawn(
    process.execPath,
    [
      ...v8Flags,
      builtChild('jobs-child', 'the jobs figures'),
      prefix,
      String(limit),
      String(jobs),
      String(holdMs),
    ],
    // A process group of its own; stdin stays open: the child stops when it closes.
    { cwd: repoRoot, env, stdio: ['pipe', 'pipe', 'pipe'], detached: true },
  )
  const lines: string[] = []
  let report: string | undefined
  const tagged = (line: string, tag: string): boolean => line === tag || line.startsWith(`${tag} `)
  const waiters: { tag: string; done: (line: string) => void }[] = []
  let pending = ''
  let stderr = ''
  let exited = false
  const exit = new Promise<number | null>((done) =>
    proc.once('close', (code) => {
      exited = true
      done(code)
    }),
  )
  proc.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk
    const parts = pending.split('\n')
    pending = parts.pop() ?? ''
    for (const line of parts) {
      lines.push(line.startsWith('J ') ? 'J' : line)
      if (line.startsWith('J ')) report = line.slice(2)
      for (const w of waiters.filter((w) => tagged(line, w.tag))) {
        waiters.splice(waiters.indexOf(w), 1)
        w.done(line)
      }
    }
  })
  proc.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-4000)))
  return {
    proc,
    line: (tag) => {
      const seen = lines.find((l) => tagged(l, tag))
      if (seen !== undefined) return Promise.resolve(seen)
      return Promise.race([
        new Promise<string>((done) => waiters.push({ tag, done })),
        exit.then((code) => {
          throw new Error(`the jobs process exited (${code}) before "${tag}": ${stderr.trim()}`)
        }),
      ])
    },
    send: (command) => {
      if (!exited) proc.stdin?.write(`${command}\n`)
    },
    report: async () => {
      if (!exited) proc.stdin?.write('stop\n')
      const timer = new AbortController()
      const code = await Promise.race([
        exit,
        sleep(30_000, 'late' as const, { signal: timer.signal }),
      ]).finally(() => timer.abort())
      if (code === 'late') {
        killTree(proc.pid ?? 0, 'SIGKILL')
        throw new Error(`the jobs process did not report within 30 s: ${stderr.trim()}`)
      }
      if (report === undefined)
        throw new Error(`the jobs process exited (${code}) without a report: ${stderr.trim()}`)
      return JSON.parse(report) as JobsChildReport
    },
    kill: () => {
      if (!exited && proc.pid !== undefined) killTree(proc.pid, 'SIGKILL')
    },
  }
}

interface ConsulSession {
  readonly ID: string
  readonly Name: string
}

async function agentGet<T>(agentAddr: string, path: string): Promise<T> {
  const response = await fetch(`http://${agentAddr}${path}`)
  if (!response.ok) throw new Error(`GET ${path}: ${response.status} ${await response.text()}`)
  return (await response.json()) as T
}

/** The IDs of the sessions on the agent now. */
async function sessionIds(agentAddr: string): Promise<string[]> {
  return (await agentGet<ConsulSession[]>(agentAddr, '/v1/session/list')).map((s) => s.ID)
}

/**
 * Reads the sessions on the agent until stopped: the most at once that were not there `before`.
 * Nothing but the run's jobs makes sessions on the bench's agent meanwhile, so these are theirs,
 * whatever the library names them.
 */
function pollSessions(
  agentAddr: string,
  before: ReadonlySet<string>,
): { stop: () => Promise<{ peak: number; polls: number }> } {
  let stopping = false
  let peak = 0
  let polls = 0
  const loop = (async () => {
    while (!stopping) {
      try {
        const ids = await sessionIds(agentAddr)
        peak = Math.max(peak, ids.filter((id) => !before.has(id)).length)
        polls++
      } catch {
        // the next read counts
      }
      await sleep(100)
    }
  })()
  return {
    stop: async () => {
      stopping = true
      await loop
      return { peak, polls }
    },
  }
}

/**
 * Removes what the jobs left in Consul (those still waiting at the deadline): the sessions made
 * since `before`, then the prefix's keys, so that the next figure shares the agent with nothing of
 * this one.
 */
async function cleanUp(
  agentAddr: string,
  prefix: string,
  before: ReadonlySet<string>,
): Promise<void> {
  const deadline = Date.now() + 60_000
  try {
    const queue = (await sessionIds(agentAddr)).filter((id) => !before.has(id))
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        for (let id = queue.pop(); id !== undefined && Date.now() < deadline; id = queue.pop()) {
          await fetch(`http://${agentAddr}/v1/session/destroy/${id}`, { method: 'PUT' }).then(
            (r) => r.body?.cancel(),
            () => undefined,
          )
        }
      }),
    )
    await fetch(`http://${agentAddr}/v1/kv/${prefix}?recurse=true`, { method: 'DELETE' }).then(
      (r) => r.body?.cancel(),
      () => undefined,
    )
  } catch {
    // the agent is private to the bench and stopped at its end
  }
}

/**
 * What "strictly increasing across jobs" can mean when up to `limit` jobs run at once: jobs that
 * overlap in time hold different slots, and which of two that start within the same moment gets
 * the greater token is not an order anyone can rely on. So the check is:
 *   1. no two jobs ran under the same token (a job never reuses a token an earlier job had), and
 *   2. a job that started after another job had ended has a greater token than that job
 *      (real-time order: whatever the earlier job wrote under its token, the later one's wins).
 * Neighbours in start order whose tokens go down are counted beside, for information.
 */
export function checkTokens(records: JobsChildReport['records']): TokenCheck {
  const jobs = records.map(([order, token, start, end]) => ({
    order,
    token: BigInt(token),
    start,
    end,
  }))
  const counts = new Map<bigint, number>()
  for (const j of jobs) counts.set(j.token, (counts.get(j.token) ?? 0) + 1)
  const repeated = jobs.filter((j) => (counts.get(j.token) ?? 0) > 1).length
  const byStart = [...jobs].sort((a, b) => a.order - b.order)
  let startOrderInversions = 0
  for (let i = 1; i < byStart.length; i++) {
    if ((byStart[i]?.token ?? 0n) <= (byStart[i - 1]?.token ?? 0n)) startOrderInversions++
  }
  // Sweep the starts in time; the ends before each start raise the greatest token to beat.
  const byEnd = [...jobs].sort((a, b) => a.end - b.end)
  const starts = [...jobs].sort((a, b) => a.start - b.start)
  let e = 0
  let greatestEnded: bigint | undefined
  let notAfterEarlier = 0
  for (const j of starts) {
    for (; e < byEnd.length && (byEnd[e]?.end ?? Infinity) < j.start; e++) {
      const t = byEnd[e]?.token ?? 0n
      if (greatestEnded === undefined || t > greatestEnded) greatestEnded = t
    }
    if (greatestEnded !== undefined && j.token <= greatestEnded) notAfterEarlier++
  }
  return {
    repeated,
    notAfterEarlier,
    startOrderInversions,
    increasing: repeated === 0 && notAfterEarlier === 0,
  }
}

/** Runs one size of the `jobs` figure on a fresh prefix. Leaves nothing running. */
export async function measureJobs(agentAddr: string, setup: JobsSetup): Promise<JobsRun> {
  const prefix = `bench-jobs/${setup.jobs}-${Date.now()}`
  const before = new Set(await sessionIds(agentAddr))
  let child: Child | undefined
  let poller: ReturnType<typeof pollSessions> | undefined
  // The deadline's timer, cancelled at the end.
  const timers = new AbortController()
  try {
    child = startChild(
      agentAddr,
      prefix,
      setup.limit,
      setup.jobs,
      setup.holdMs,
      setup.v8Flags,
      setup.floor,
    )
    await child.line('U')
    poller = pollSessions(agentAddr, before)
    child.send('go')
    const outcome = await Promise.race([
      child.line('D').then(() => 'settled' as const),
      sleep(setup.deadlineMs, 'deadline' as const, { signal: timers.signal }),
    ])
    const report = await child.report()
    const sessions = await poller.stop()
    poller = undefined
    const done = report.records.length
    const wallMs = report.reportedAt - report.submittedAt
    const writes = report.writes
    const perJob = (n: number): number => n / done
    return {
      ...setup,
      done,
      failures: report.failures,
      timedOut: outcome === 'deadline',
      wallMs,
      jobsPerSecond: (1000 * done) / wallMs,
      peakSessions: sessions.peak,
      sessionPolls: sessions.polls,
      rssAddedMb: report.rssPeakMb - report.rssBeforeMb,
      cpuMs: report.cpuMs,
      cpuMsPerJob: perJob(report.cpuMs),
      writes,
      writesPerJob: perJob(writesOf(writes)),
      tokens: checkTokens(report.records),
    }
  } finally {
    timers.abort()
    child?.kill()
    await poller?.stop()
    await cleanUp(agentAddr, prefix, before)
  }
}

/** Slot-time of `records` inside [from, to], ms. */
function slotMs(records: JobsChildReport['records'], from: number, to: number): number {
  let sum = 0
  for (const [, , start, end] of records)
    sum += Math.max(0, Math.min(end, to) - Math.max(start, from))
  return sum
}

/**
 * When a process ran out of jobs waiting to start: its last job's start once every job it
 * submitted was done; Infinity until then (it still had a backlog when it reported).
 */
function backlogEnd(r: JobsChildReport): number {
  if (r.submitted === 0 || r.records.length !== r.submitted) return Infinity
  return r.records.reduce((last, [, , start]) => Math.max(last, start), -Infinity)
}

/**
 * The window of the `jobs-fair` figure and what each process had of the slots in it. A process
 * has a backlog while it has a job submitted and not yet started. The window opens when B
 * (`small`) submits and closes when either process starts its last job, or when the first report
 * was taken (the deadline, or the other process done); each process's slot-time is the part of its
 * jobs' run time inside it.
 */
export function fairWindow(
  big: JobsChildReport,
  small: JobsChildReport,
): Omit<JobsFairRun, 'limit' | 'holdMs' | 'deadlineMs' | 'bigJobs' | 'smallJobs'> {
  const from = small.submittedAt
  const ends: [number, JobsFairRun['windowEnd']][] = [
    [backlogEnd(big), 'big'],
    [backlogEnd(small), 'small'],
    [Math.min(big.reportedAt, small.reportedAt), 'deadline'],
  ]
  ends.sort((a, b) => a[0] - b[0])
  const [to, windowEnd] = ends[0] ?? [from, 'deadline']
  const share = (since: number): number => {
    const a = slotMs(big.records, since, to)
    const b = slotMs(small.records, since, to)
    return a + b > 0 ? b / (a + b) : 0
  }
  const bigSlotMs = slotMs(big.records, from, to)
  const smallSlotMs = slotMs(small.records, from, to)
  const smallShare = share(from)
  const startedIn = (r: JobsChildReport): number =>
    r.records.filter(([, , start]) => start >= from && start <= to).length
  const firstSmall = small.records.length
    ? Math.min(...small.records.map(([, , start]) => start))
    : undefined
  return {
    windowMs: to - from,
    windowEnd,
    bigSlotMs,
    smallSlotMs,
    bigStarted: startedIn(big),
    smallStarted: startedIn(small),
    smallDone: small.records.length,
    smallShare,
    fairRatio: smallShare / 0.5,
    smallFirstStartMs: firstSmall === undefined ? undefined : firstSmall - from,
    smallShareFromFirstJob:
      firstSmall !== undefined && firstSmall < to ? share(firstSmall) : undefined,
  }
}

/** The children of a run, each loaded (`U`) (withJobsChildren). */
interface JobsChildren {
  readonly children: readonly Child[]
  /** Resolves to 'deadline' after `ms`; cancelled when the run ends. */
  readonly deadline: (ms: number) => Promise<'deadline'>
}

/**
 * Starts one jobs child per entry of `jobs` (its job count) on `prefix`, waits until every
 * child has loaded the library, and runs `body`. Leaves nothing running, also when something
 * throws: the children killed, the sessions made since and the prefix's keys removed.
 */
async function withJobsChildren<T>(
  agentAddr: string,
  prefix: string,
  setup: { readonly limit: number; readonly holdMs: number; readonly apart?: boolean | undefined },
  jobs: readonly number[],
  body: (run: JobsChildren) => Promise<T>,
): Promise<T> {
  const before = new Set(await sessionIds(agentAddr))
  const children: Child[] = []
  const timers = new AbortController()
  try {
    for (const [i, n] of jobs.entries()) {
      const own = setup.apart === true ? `${prefix}/${i}` : prefix
      children.push(startChild(agentAddr, own, setup.limit, n, setup.holdMs))
    }
    await Promise.all(children.map((c) => c.line('U')))
    return await body({
      children,
      deadline: (ms) => sleep(ms, 'deadline' as const, { signal: timers.signal }),
    })
  } finally {
    timers.abort()
    for (const c of children) c.kill()
    await cleanUp(agentAddr, prefix, before)
  }
}

/** The `jobs-fair` figure (see fairWindow). Leaves nothing running. */
export async function measureJobsFair(
  agentAddr: string,
  setup: JobsFairSetup,
): Promise<JobsFairRun> {
  const prefix = `bench-jobs-fair/${Date.now()}`
  const jobs = [setup.bigJobs, setup.smallJobs]
  return withJobsChildren(agentAddr, prefix, setup, jobs, async ({ children, deadline: after }) => {
    const [big, small] = children
    if (big === undefined || small === undefined) throw new Error('two children expected')
    const deadline = after(setup.deadlineMs)
    big.send('go')
    // B arrives once A runs `limit` jobs at once: A holds every slot.
    const full = await Promise.race([big.line('F'), deadline])
    if (full === 'deadline')
      throw new Error(`A never ran ${setup.limit} jobs at once within the deadline`)
    small.send('go')
    // Both reports once B is through (the window is over by then), or A, or the deadline.
    await Promise.race([small.line('D'), big.line('D'), deadline])
    const [bigReport, smallReport] = await Promise.all([big.report(), small.report()])
    return {
      limit: setup.limit,
      holdMs: setup.holdMs,
      deadlineMs: setup.deadlineMs,
      bigJobs: setup.bigJobs,
      smallJobs: setup.smallJobs,
      ...fairWindow(bigReport, smallReport),
    }
  })
}

/** The span where every process had a backlog: from the last `go` to the first backlog's end. */
function backlogSpan(reports: readonly JobsChildReport[]): { from: number; to: number } {
  return {
    from: Math.max(...reports.map((r) => r.submittedAt)),
    to: Math.min(...reports.map((r) => Math.min(backlogEnd(r), r.reportedAt))),
  }
}

/**
 * The most jobs that ran at once across `records` (of every process): a sweep over the starts and
 * ends, an end before a start at the same instant (a slot handed on is not two at once).
 */
export function mostAtOnce(records: JobsChildReport['records']): number {
  const events: [number, number][] = []
  for (const [, , start, end] of records) events.push([start, 1], [end, -1])
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1])
  let running = 0
  let most = 0
  for (const [, step] of events) {
    running += step
    most = Math.max(most, running)
  }
  return most
}

/**
 * Each process's share of the slot-time against its fair 1/P (1 = fair), in windows of `windowMs`
 * stepped by `stepMs` through the span where every process had a backlog (from the last process's
 * submission to the first process's last job start, or its report); a window's slot-time is the
 * part of each job's run time inside it. A span shorter than one window gives one window over the
 * span, marked `short`. `fromFirstJobs`: the span opens once every process has started a job
 * instead (its arrival left out). Undefined with fewer than two processes or no such span.
 */
export function fleetWindows(
  reports: readonly JobsChildReport[],
  windowMs = 2000,
  stepMs = 500,
  fromFirstJobs = false,
): FleetFairness | undefined {
  if (reports.length < 2) return undefined
  const span = backlogSpan(reports)
  const to = span.to
  // Leaving the start-up out: from the moment every process has started a job.
  const from = fromFirstJobs
    ? Math.max(
        span.from,
        ...reports.map((r) =>
          r.records.reduce((first, [, , start]) => Math.min(first, start), Infinity),
        ),
      )
    : span.from
  if (!(to > from)) return undefined
  const short = to - from < windowMs
  const starts: number[] = []
  for (let k = 0; short ? k === 0 : from + k * stepMs + windowMs <= to; k++)
    starts.push(from + k * stepMs)
  let min: FleetShare | undefined
  let max: FleetShare | undefined
  for (const start of starts) {
    const end = short ? to : start + windowMs
    const slots = reports.map((r) => slotMs(r.records, start, end))
    const total = slots.reduce((sum, x) => sum + x, 0)
    slots.forEach((slot, process) => {
      const share = total > 0 ? (slot * reports.length) / total : 0
      const at = { share, process, atMs: start - from }
      if (min === undefined || share < min.share) min = at
      if (max === undefined || share > max.share) max = at
    })
  }
  if (min === undefined || max === undefined) return undefined
  return { spanMs: to - from, windowMs, windows: starts.length, short, min, max }
}

/** How long slots stood empty between jobs while every process had a backlog (see SlotGaps). */
export function slotGaps(reports: readonly JobsChildReport[], limit: number): SlotGaps {
  const { from, to } = backlogSpan(reports)
  // [time, 0 end | 1 start, process]: ends first at the same instant.
  const events: [number, number, number][] = []
  reports.forEach((r, process) => {
    for (const [, , start, end] of r.records) events.push([start, 1, process], [end, 0, process])
  })
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1])
  const freed: [number, number][] = []
  let next = 0
  const gaps: number[] = []
  let toOther = 0
  for (const [at, kind, process] of events) {
    if (kind === 0) freed.push([at, process])
    else {
      const slot = freed[next]
      if (slot === undefined) continue // one of the first jobs: its slot was never used before
      next++
      if (at < from || at > to) continue
      gaps.push(at - slot[0])
      if (slot[1] !== process) toOther++
    }
  }
  const used = reports.reduce((sum, r) => sum + slotMs(r.records, from, to), 0)
  return {
    n: gaps.length,
    p50Ms: percentile(gaps, 50),
    p95Ms: percentile(gaps, 95),
    toOtherProcess: gaps.length > 0 ? toOther / gaps.length : Number.NaN,
    utilisation: to > from ? used / (limit * (to - from)) : Number.NaN,
  }
}

/** The `jobs-fleet` figures of one run, from the children's reports (records and requests). */
export function fleetFigures(
  setup: JobsFleetSetup,
  reports: readonly JobsChildReport[],
  timedOut: boolean,
): JobsFleetRun {
  const writes = addWrites(reports.map((r) => r.writes))
  const all = reports.flatMap((r) => r.records)
  const firstGo = Math.min(...reports.map((r) => r.submittedAt))
  const lastEnd = (records: JobsChildReport['records']): number =>
    records.reduce((last, [, , , end]) => Math.max(last, end), firstGo)
  const spanMs = lastEnd(all) - firstGo
  const done = all.length
  const cpuMs = reports.reduce((sum, r) => sum + r.cpuMs, 0)
  const threadsCpuMs = reports.reduce<ThreadCpu | undefined>(
    (sum, r) => sum && r.threadsCpuMs && addThreadCpu(sum, r.threadsCpuMs),
    { main: 0, v8Workers: 0, other: 0 },
  )
  const failures: Record<string, number> = {}
  for (const r of reports)
    for (const [kind, n] of Object.entries(r.failures)) failures[kind] = (failures[kind] ?? 0) + n
  const perProcess = reports.map((r) => ({
    submitted: r.submitted,
    done: r.records.length,
    finishedMs:
      r.submitted > 0 && r.records.length === r.submitted
        ? lastEnd(r.records) - firstGo
        : undefined,
    tokens: checkTokens(r.records),
  }))
  const finished = perProcess.flatMap((p) => (p.finishedMs === undefined ? [] : [p.finishedMs]))
  return {
    ...setup,
    jobs: setup.processes * setup.jobsPerProcess,
    done,
    failures,
    timedOut,
    spanMs,
    jobsPerSecond: spanMs > 0 ? (1000 * done) / spanMs : 0,
    mostAtOnce: mostAtOnce(all),
    cpuMs,
    cpuMsPerJob: cpuMs / done,
    threadsCpuMs,
    writes,
    writesPerJob: writesOf(writes) / done,
    perProcess,
    tokensRepeatedAcross: checkTokens(all).repeated,
    finishSpreadMs:
      finished.length === reports.length && finished.length > 0
        ? Math.max(...finished) - Math.min(...finished)
        : undefined,
    fairness: fleetWindows(reports),
    fairnessFromFirstJobs: fleetWindows(reports, 2000, 500, true),
    gaps: slotGaps(reports, setup.limit),
  }
}

/**
 * The `jobs-fleet` figure: `processes` children on one prefix, each submitting its jobs when all
 * have loaded (`go` to every one), until every job settled or the deadline. Leaves nothing running.
 */
export async function measureJobsFleet(
  agentAddr: string,
  setup: JobsFleetSetup,
): Promise<JobsFleetRun> {
  const prefix = `bench-jobs-fleet/${setup.processes}x${setup.jobsPerProcess}-${setup.holdMs}ms${setup.apart === true ? '-apart' : ''}-${Date.now()}`
  const jobs = Array.from({ length: setup.processes }, () => setup.jobsPerProcess)
  return withJobsChildren(agentAddr, prefix, setup, jobs, async ({ children, deadline }) => {
    const over = deadline(setup.deadlineMs)
    for (const c of children) c.send('go')
    const outcome = await Promise.race([
      Promise.all(children.map((c) => c.line('D'))).then(() => 'settled' as const),
      over,
    ])
    const reports = await Promise.all(children.map((c) => c.report()))
    return fleetFigures(setup, reports, outcome === 'deadline')
  })
}
