// Figure 6, replicas: one contender per process, the way services run. R replicas
// want one of `limit` slots on a fresh prefix; each holds `holdMs`, gives the slot back and
// contends again, for a warm-up and then a measured steady window. Every request of every replica
// passes a fault proxy in `pass` mode in front of the agent it talks to, which counts it.
//   library:         R long-lived node processes (bench/replica-child.ts), each with one
//                    semaphore at a time: holding$ true → hold → close() → a new semaphore
//                    contends again. Two ways: every tenure passes one createConsulClient() of
//                    the process as `consul` (shared client), or none (default client). The
//                    replicas run the built package (dist/) under plain node, as users run it:
//                    the child is bundled once into .cache/bench/ and imports the package by
//                    its name, so no tsx loader adds to their start-up, RSS or CPU.
//   consul lock -n:  R loops, each running `consul lock -n <limit> ... <prefix> <hold>` again
//                    and again (a process per acquisition), as bench/children.ts runs it.
// Topologies: one agent; or 3 servers with the replicas spread over client agents (replica i
// talks to agent i mod n, through that agent's own proxy), the servers forwarding as in a fleet.
// The window opens `warmupMs` after every replica has held a slot once (the time until then, from
// the first spawn, is "every replica served once after"). Only the steady window counts: acquisitions = tenures that started in it; requests, blocking
// answers and CAS writes = those the proxies saw in it. Handover uses figure 2's pairing
// (pair-handovers.ts) over the window's starts and releases; peak holders is taken over the whole
// run up to the window's end, from the tenures each replica logged on the wall clock.
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { startFaultProxy, type FaultProxy, type SeenRequest } from '../test/support/fault-proxy.js'
import { killTree } from '../test/support/processes.js'
import { builtChild, consulLock, repoRoot, Workspace } from './children.js'
import { isCasWrite, isLostCas, peakHolders } from './contention.js'
import { pairHandovers, type HoldEvent } from './pair-handovers.js'
import { summarize, type Summary } from './stats.js'

export const SHARED_CLIENT = 'library (shared client)'
export const DEFAULT_CLIENT = 'library (default client)'
export const CONSUL_LOCK = 'consul lock -n'
export type ReplicaImplementation =
  typeof SHARED_CLIENT | typeof DEFAULT_CLIENT | typeof CONSUL_LOCK

export interface ReplicasSetup {
  readonly replicas: number
  readonly limit: number
  readonly holdMs: number
  /** After every replica has held a slot once, before the window opens. */
  readonly warmupMs: number
  /** The measured window. */
  readonly steadyMs: number
}

export interface ReplicasTopology {
  /** How the report names it, e.g. "one agent". */
  readonly name: string
  /** The agents' HTTP addresses; replica i talks to agents[i mod n] (through its own proxy). */
  readonly agents: readonly string[]
}

export interface ReplicasRun {
  readonly implementation: ReplicaImplementation
  readonly topology: string
  readonly replicas: number
  readonly limit: number
  readonly holdMs: number
  /** Length of the measured window, s. */
  readonly windowS: number
  /** From the first spawn until every replica was contending, ms. */
  readonly startupMs: number
  /**
   * From the first spawn until every replica had held a slot at least once, ms; undefined when
   * some never had by the start-up timeout (`servedReplicas` says how many had).
   */
  readonly servedOnceMs: number | undefined
  readonly servedReplicas: number
  readonly acquisitions: number
  readonly perSecond: number
  /** A tenure ends → the next starts, while a waiter was queued (figure 2's definition). */
  readonly handover: Summary
  /** Window handovers whose new holder was not contending `readyMs` before the release. */
  readonly handoverDropped: number
  readonly requests: number
  readonly requestsPerAcquisition: number
  /** Blocking queries (GET with `index=`) answered in the window. */
  readonly blockingAnswers: number
  readonly blockingPerAcquisition: number
  readonly casAttempts: number
  readonly casLost: number
  readonly casLostPerAcquisition: number
  /** Most holders at once, from the replicas' logs up to the window's end. */
  readonly peakHolders: number
  /** Library only: mean RSS of a replica process in the window, MB. */
  readonly replicaRssMb: number | undefined
  /** Library only: CPU of all replica processes in the window per acquisition, ms. */
  readonly replicaCpuMsPerAcquisition: number | undefined
  /** The machine's 1-minute load average at the window's end (other work shares the cores). */
  readonly loadAverage: number
  /** Requests by kind in the window (method and path shape), for the notes. */
  readonly requestsByKind: ReadonlyMap<string, number>
}

/**
 * A handover counts when the new holder was queued when the slot was freed: contending (library:
 * its key in Consul; consul lock: "Attempting lock acquisition" printed) before the release.
 */
const READY_MS = 0
/** How long the replicas may take to all be contending, and all served once (40 node starts on 2 cores). */
export const STARTUP_TIMEOUT_MS = 120_000

interface Running {
  /** Every replica contending at least once. */
  readonly allUp: () => boolean
  readonly events: () => HoldEvent[]
  /** RSS (MB) and CPU (ms) of the replica processes that are long-lived; undefined otherwise. */
  readonly usage: () => { rssMb: number; cpuMs: number } | undefined
  /** SIGTERM at the deadline, then SIGKILL what is left; resolves when nothing runs. */
  readonly stop: () => Promise<void>
  readonly failure: () => string | undefined
}

const ticks = 100 // USER_HZ on Linux

function procUsage(pids: readonly number[]): { rssMb: number; cpuMs: number } {
  let rssKb = 0
  let cpuTicks = 0
  let counted = 0
  for (const pid of pids) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8')
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      // utime and stime are fields 14 and 15 of stat, i.e. 11 and 12 after "pid (comm) ".
      cpuTicks += Number(fields[11]) + Number(fields[12])
      rssKb += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0)
      counted++
    } catch {
      // ended meanwhile
    }
  }
  return { rssMb: rssKb / 1024 / Math.max(1, counted), cpuMs: (cpuTicks * 1000) / ticks }
}

function startLibrary(
  way: 'shared' | 'default',
  prefix: string,
  setup: ReplicasSetup,
  addrs: readonly string[],
): Running {
  const events: HoldEvent[] = []
  const contending = new Set<string>()
  const children: ChildProcess[] = []
  const exits: Promise<void>[] = []
  let failure: string | undefined
  const child = builtChild('replica-child', 'the library replicas')
  // The bench's own environment, without what would point a replica elsewhere than its proxy.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('CONSUL_')),
  )
  for (let i = 0; i < setup.replicas; i++) {
    const who = `r${i}`
    const addr = addrs[i % addrs.length] ?? ''
    const proc = spawn(
      process.execPath,
      [child, addr, prefix, String(setup.limit), String(setup.holdMs), who, way],
      // A process group of its own, so that nothing it starts can outlive the figure.
      // stdin stays open: the replica stops when it closes, should this process die first.
      { cwd: repoRoot, env, stdio: ['pipe', 'pipe', 'pipe'], detached: true },
    )
    children.push(proc)
    exits.push(new Promise((done) => proc.once('close', () => done())))
    let pending = ''
    proc.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      pending += chunk
      const lines = pending.split('\n')
      pending = lines.pop() ?? ''
      for (const line of lines) {
        const [kind, name, at] = line.split(' ')
        if (kind === 'E') failure ??= line
        if (name === undefined || at === undefined) continue
        const ms = Number(at)
        if (kind === 'W') events.push({ kind: 'want', who: name, at: ms })
        else if (kind === 'C') {
          contending.add(name)
          events.push({ kind: 'ready', who: name, at: ms })
        } else if (kind === 'S') events.push({ kind: 'start', who: name, at: ms })
        else if (kind === 'R') events.push({ kind: 'release', who: name, at: ms })
      }
    })
    let stderr = ''
    proc.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-2000)))
    proc.once('close', (code) => {
      if (code !== 0 && code !== null) failure ??= `replica ${who} exited ${code}: ${stderr}`
    })
  }
  const pids = (): number[] => children.flatMap((c) => (c.pid === undefined ? [] : [c.pid]))
  return {
    allUp: () => contending.size >= setup.replicas,
    events: () => [...events],
    usage: () => procUsage(pids()),
    failure: () => failure,
    stop: async () => {
      for (const c of children) if (c.exitCode === null) c.kill('SIGTERM')
      const all = Promise.all(exits)
      if ((await Promise.race([all.then(() => 'done'), sleep(10_000, 'late')])) === 'late') {
        for (const pid of pids()) killTree(pid, 'SIGKILL')
        await all
      }
    },
  }
}

function startConsulLock(prefix: string, setup: ReplicasSetup, addrs: readonly string[]): Running {
  const workspace = new Workspace()
  const wants: HoldEvent[] = []
  let stopping = false
  // The loops stop at the window's end (stop() below SIGTERMs what runs); this deadline only
  // bounds a figure whose stop never comes.
  const deadline = Date.now() + STARTUP_TIMEOUT_MS + 10 * 60_000
  const loops = Array.from({ length: setup.replicas }, async (_, i) => {
    const contender = {
      addr: addrs[i % addrs.length] ?? '',
      prefix,
      limit: setup.limit,
      who: `r${i}`,
      holdMs: setup.holdMs,
      deadline,
    }
    while (!stopping) {
      if (!(await workspace.runContender(consulLock, contender, wants))) return
    }
  })
  const readLog = (): HoldEvent[] => [
    ...wants,
    ...workspace.readEvents().map((e): HoldEvent => ({
      kind: e.kind === 'S' ? 'start' : 'release',
      who: e.who,
      at: e.at,
    })),
  ]
  let logged: HoldEvent[] | undefined
  return {
    allUp: () =>
      new Set(wants.filter((w) => w.kind === 'ready').map((w) => w.who)).size >= setup.replicas,
    events: () => logged ?? readLog(),
    usage: () => undefined,
    failure: () => undefined,
    stop: async () => {
      if (stopping) return
      stopping = true
      workspace.terminateAll()
      await Promise.race([Promise.all(loops), sleep(10_000)])
      // The events file goes with the workspace: read it first.
      logged = readLog()
      await workspace.killAll()
    },
  }
}

/** A request's kind for the log: the KV path as `.lock`, a contender key, or the prefix. */
function kindOf(r: SeenRequest): string {
  const kv = /^\/v1\/kv\/(.*)$/.exec(r.path)?.[1]
  const path =
    kv === undefined
      ? r.path.replace(/\/v1\/(session\/\w+)\/.*/, '/v1/$1/…')
      : kv.endsWith('/.lock')
        ? '/v1/kv/<prefix>/.lock'
        : /\/[0-9a-f]{8}-[0-9a-f-]{27}$/.test(kv)
          ? '/v1/kv/<prefix>/<session>'
          : '/v1/kv/<prefix>'
  return `${r.method} ${path}${/(^|&)index=/.test(r.query) ? ' (blocking)' : ''}`
}

/**
 * Runs `implementation` with `setup.replicas` replicas on a fresh prefix against `topology`'s
 * agents and measures the steady window. Leaves nothing running, also when it fails.
 */
export async function measureReplicas(
  implementation: ReplicaImplementation,
  topology: ReplicasTopology,
  setup: ReplicasSetup,
): Promise<ReplicasRun> {
  const proxies: FaultProxy[] = []
  let running: Running | undefined
  try {
    for (const agent of topology.agents) proxies.push(await startFaultProxy(agent))
    const addrs = proxies.map((p) => p.addr)
    const slug = implementation.replace(/\W+/g, '-')
    const prefix = `bench-replicas/${slug}-${setup.replicas}-${Date.now()}`
    const spawnedAt = Date.now()
    running =
      implementation === CONSUL_LOCK
        ? startConsulLock(prefix, setup, addrs)
        : startLibrary(
            implementation === SHARED_CLIENT ? 'shared' : 'default',
            prefix,
            setup,
            addrs,
          )
    const run = running
    while (!run.allUp()) {
      const failure = run.failure()
      if (failure !== undefined) throw new Error(failure)
      if (Date.now() - spawnedAt > STARTUP_TIMEOUT_MS)
        throw new Error(`the ${setup.replicas} replicas were not all contending after 120 s`)
      await sleep(50)
    }
    const startupMs = Date.now() - spawnedAt
    // Each replica's first tenure, on the wall clock.
    const firstStarts = (): Map<string, number> => {
      const first = new Map<string, number>()
      for (const e of run.events())
        if (e.kind === 'start' && e.at < (first.get(e.who) ?? Infinity)) first.set(e.who, e.at)
      return first
    }
    // Until every replica was served once; past the timeout the figure goes on, and says so.
    while (firstStarts().size < setup.replicas && Date.now() - spawnedAt <= STARTUP_TIMEOUT_MS) {
      const failure = run.failure()
      if (failure !== undefined) throw new Error(failure)
      await sleep(50)
    }
    const served = firstStarts()
    const servedOnceMs =
      served.size >= setup.replicas ? Math.max(...served.values()) - spawnedAt : undefined
    await sleep(setup.warmupMs)

    const windowStart = Date.now()
    for (const p of proxies) p.resetCounts()
    const usageBefore = run.usage()
    await sleep(setup.steadyMs / 2)
    const rssMb = run.usage()?.rssMb
    await sleep(setup.steadyMs / 2)
    const windowEnd = Date.now()
    const usageAfter = run.usage()
    const [loadAverage = Number.NaN] = loadavg()
    const unanswered = new Set(proxies.flatMap((p) => p.inFlightRequests()))
    const requests = proxies.flatMap((p) => p.requests()).filter((r) => r.at <= windowEnd)
    await run.stop()
    running = undefined
    const failure = run.failure()
    if (failure !== undefined) throw new Error(failure)

    const all = run.events()
    const inWindow = (e: HoldEvent): boolean => e.at >= windowStart && e.at <= windowEnd
    const acquisitions = all.filter((e) => e.kind === 'start' && inWindow(e)).length
    // Wants of any time (a waiter may have queued before the window); tenures in the window.
    const handovers = pairHandovers(
      all.filter((e) => e.kind === 'want' || e.kind === 'ready' || inWindow(e)),
      READY_MS,
    )
    const casAttempts = requests.filter(isCasWrite).length
    const casLost = requests.filter(isLostCas).length
    const blockingAnswers = requests.filter(
      (r) => r.method === 'GET' && /(^|&)index=/.test(r.query) && !unanswered.has(r),
    ).length
    const perAcq = (n: number): number => n / Math.max(1, acquisitions)
    const kinds = new Map<string, number>()
    for (const r of requests) kinds.set(kindOf(r), (kinds.get(kindOf(r)) ?? 0) + 1)
    const windowS = (windowEnd - windowStart) / 1000
    return {
      implementation,
      topology: topology.name,
      replicas: setup.replicas,
      limit: setup.limit,
      holdMs: setup.holdMs,
      windowS,
      startupMs,
      servedOnceMs,
      servedReplicas: served.size,
      acquisitions,
      perSecond: acquisitions / windowS,
      handover: summarize(handovers.samples),
      handoverDropped: handovers.dropped,
      requests: requests.length,
      requestsPerAcquisition: perAcq(requests.length),
      blockingAnswers,
      blockingPerAcquisition: perAcq(blockingAnswers),
      casAttempts,
      casLost,
      casLostPerAcquisition: perAcq(casLost),
      peakHolders: peakHolders(
        all.filter((e) => (e.kind === 'start' || e.kind === 'release') && e.at <= windowEnd),
      ),
      replicaRssMb: rssMb,
      replicaCpuMsPerAcquisition:
        usageBefore && usageAfter ? perAcq(usageAfter.cpuMs - usageBefore.cpuMs) : undefined,
      loadAverage,
      requestsByKind: kinds,
    }
  } finally {
    await running?.stop()
    await Promise.all(proxies.map((p) => p.close()))
  }
}
