// Figure 5a, scale: contenders on one prefix (100 / 1,000 / 10,000) and over 10 prefixes (limit
// 10 each) in one process on one client, through a fault proxy in `pass` mode that sees every
// connection and request. The contenders run in a child process (bench/scale-worker.ts) so that
// its RSS is theirs alone.
//   steady:  RSS, live heap, TCP sockets (getActiveResourcesInfo), client connections at the
//            proxy, and long polls per prefix = fewest requests in flight at the proxy over 1 s /
//            prefixes (a parked watch is always in flight; other requests come and go).
//   churn:   every holder releases after 100 ms and a new contender takes its place; CPU time
//            of the process per acquisition (each follows a release) and per prefix snapshot
//            delivered (blocking list answers at the proxy; each is fanned out to every
//            contender of its prefix).
//   per contender (setups of at most 1,000 contenders, bench/config.ts): heap snapshots of the
//            worker before the first contender and at steady state, read here once it is gone
//            (bench/heap-census.ts): the live heap they added, and the live RxJS subscribers:
//            objects of the classes `Subscriber`, `SafeSubscriber` and `OperatorSubscriber`,
//            which every subscriber of RxJS 7 is (operators' are OperatorSubscriber, subscribe()'s
//            SafeSubscriber). Subscriptions that are not subscribers (a Subject's teardown, a
//            scheduler's action) are not counted.
import { fork } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { startFaultProxy } from '../test/support/fault-proxy.js'
import type { ScaleSetup } from './config.js'
import { heapCensus } from './heap-census.js'
import type { TelemetryProfile, WorkerMessage } from './scale-worker.js'

/** The classes whose live instances are the live RxJS subscribers (RxJS 7). */
export const SUBSCRIBER_CLASSES = ['Subscriber', 'SafeSubscriber', 'OperatorSubscriber'] as const

/** What the heap snapshots say the contenders added (baseline → steady state). */
export interface ScaleCensus {
  /** Live bytes in the snapshot (sum of self sizes) added / contenders, in KB. */
  readonly liveKbPerContender: number
  readonly baselineSubscribers: number
  readonly steadySubscribers: number
  /** Live subscribers added / contenders. */
  readonly subscribersPerContender: number
  /** Added live instances of each subscriber class. */
  readonly subscribersByClass: Readonly<Record<string, number>>
}

export interface ScaleResult {
  readonly contenders: number
  readonly prefixes: number
  readonly limit: number
  readonly contendingMs: number
  readonly settleMs: number
  readonly holders: number
  readonly baselineRssMb: number
  readonly rssMb: number
  /** Live heap after a full collection, before the first contender / at steady state. */
  readonly baselineHeapMb: number
  readonly heapMb: number
  /** Live heap added by the contenders (after a full collection each time) / contenders. */
  readonly heapKbPerContender: number
  /** From heap snapshots; undefined for setups that take none (more than 1,000 contenders). */
  readonly census: ScaleCensus | undefined
  readonly tcpSockets: number
  readonly proxyConnections: number
  readonly longPollsPerPrefix: number
  readonly churnAcquisitions: number
  readonly churnSnapshots: number
  readonly cpuUsPerSnapshot: number
  readonly cpuUsPerContenderSnapshot: number
  /**
   * CPU of the whole process during the churn / acquisitions (each one follows a release); NaN
   * when no slot changed hands in the window.
   */
  readonly cpuMsPerRelease: number
  /** RSS added by the contenders (steady minus baseline) / contenders. */
  readonly rssKbPerContender: number
  readonly failedReleases: number
  /** The churn window's CPU profile, counted, when the worker was asked to take one. */
  readonly telemetryProfile: TelemetryProfile | undefined
}

/**
 * @param env - More environment for the worker, e.g. BENCH_TELEMETRY (bench/telemetry-cost.ts).
 */
export async function measureScale(
  addr: string,
  setup: ScaleSetup,
  env: Readonly<Record<string, string>> = {},
): Promise<ScaleResult> {
  const contenderCount = setup.prefixes * setup.perPrefix
  const proxy = await startFaultProxy(addr)
  const runId = String(Date.now())
  const snapshots = setup.heapSnapshots
    ? mkdtempSync(join(tmpdir(), 'rxsem-bench-heap-'))
    : undefined
  const worker = fork(
    new URL('./scale-worker.ts', import.meta.url).pathname,
    [proxy.addr, String(setup.prefixes), String(setup.perPrefix), String(setup.limit), runId],
    {
      execArgv: ['--import', 'tsx', '--expose-gc'],
      env: {
        ...process.env,
        ...env,
        BENCH_CHURN_MS: String(setup.churnMs),
        ...(snapshots === undefined ? {} : { BENCH_HEAP_SNAPSHOTS: snapshots }),
      },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  )
  const inbox: WorkerMessage[] = []
  const waiters: (() => void)[] = []
  worker.on('message', (m: WorkerMessage) => {
    inbox.push(m)
    for (const w of waiters.splice(0)) w()
  })
  const exited = new Promise<void>((done) => worker.once('exit', () => done()))
  const next = async <T extends WorkerMessage['type']>(
    type: T,
    timeoutMs: number,
  ): Promise<Extract<WorkerMessage, { type: T }>> => {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const found = inbox.find((m): m is Extract<WorkerMessage, { type: T }> => m.type === type)
      if (found) return found
      if (Date.now() > deadline || worker.exitCode !== null) {
        throw new Error(`scale: no '${type}' from the worker`)
      }
      await Promise.race([new Promise<void>((done) => waiters.push(done)), sleep(500)])
    }
  }
  try {
    const baseline = await next('baseline', 60_000)
    const steady = await next('steady', 120_000 + contenderCount * 40)
    const proxyConnections = proxy.openConnections()
    let fewestInFlight = Number.POSITIVE_INFINITY
    for (let i = 0; i < 20; i++) {
      fewestInFlight = Math.min(fewestInFlight, proxy.inFlight())
      await sleep(50)
    }
    proxy.resetCounts()
    worker.send('churn')
    const churned = await next('churned', setup.churnMs + 60_000)
    const watchAnswers = proxy
      .requests()
      .filter(
        (r) => r.method === 'GET' && r.path.startsWith('/v1/kv/') && /(^|&)index=/.test(r.query),
      ).length
    if (process.env['BENCH_CPU_PROFILES'] !== undefined) {
      // With the profiles: what the churn asked of Consul, by kind (method and endpoint).
      const kinds = new Map<string, number>()
      for (const r of proxy.requests()) {
        const endpoint = r.path.replace(/^(\/v1\/[a-z]+(?:\/[a-z-]+)?).*$/, '$1')
        const query = ['recurse', 'index', 'cas', 'acquire', 'release']
          .filter((q) => new RegExp(`(^|&)${q}(=|&|$)`).test(r.query))
          .join(',')
        const verbs =
          r.path === '/v1/txn'
            ? [...(r.sent ?? '').matchAll(/"Verb":"([a-z-]+)"/g)].map((m) => m[1]).join('+')
            : ''
        const kind = `${r.method} ${endpoint} ${query}${verbs} ${r.answer?.status ?? '-'}`
        kinds.set(kind, (kinds.get(kind) ?? 0) + 1)
      }
      process.stderr.write(`churn requests: ${JSON.stringify(Object.fromEntries(kinds))}\n`)
    }
    worker.send('close')
    const closed = await next('closed', 120_000 + contenderCount * 20)
    // The snapshots are read once the worker is gone, so that reading them costs it nothing.
    await Promise.race([exited, sleep(10_000)])
    const census =
      baseline.snapshot !== undefined && steady.snapshot !== undefined
        ? await scaleCensus(baseline.snapshot, steady.snapshot, contenderCount)
        : undefined
    return {
      contenders: contenderCount,
      prefixes: setup.prefixes,
      limit: setup.limit,
      contendingMs: steady.contendingMs,
      settleMs: steady.settleMs,
      holders: steady.holders,
      baselineRssMb: baseline.rssMb,
      rssMb: steady.rssMb,
      baselineHeapMb: baseline.heapMb,
      heapMb: steady.heapMb,
      heapKbPerContender: ((steady.heapMb - baseline.heapMb) * 1024) / contenderCount,
      census,
      tcpSockets: steady.tcpSockets,
      proxyConnections,
      longPollsPerPrefix: fewestInFlight / setup.prefixes,
      churnAcquisitions: churned.acquisitions,
      churnSnapshots: watchAnswers,
      cpuUsPerSnapshot: churned.cpuUs / Math.max(1, watchAnswers),
      cpuUsPerContenderSnapshot:
        churned.cpuUs / Math.max(1, watchAnswers * (contenderCount / setup.prefixes)),
      cpuMsPerRelease:
        churned.acquisitions > 0 ? churned.cpuUs / 1000 / churned.acquisitions : Number.NaN,
      rssKbPerContender: ((steady.rssMb - baseline.rssMb) * 1024) / contenderCount,
      failedReleases: closed.failedReleases,
      telemetryProfile: churned.profile,
    }
  } finally {
    if (worker.exitCode === null) {
      const timer = setTimeout(() => worker.kill('SIGKILL'), 10_000)
      if (!worker.connected) worker.kill('SIGTERM')
      await exited
      clearTimeout(timer)
    }
    await proxy.close()
    if (snapshots !== undefined) rmSync(snapshots, { recursive: true, force: true })
  }
}

async function scaleCensus(
  baselinePath: string,
  steadyPath: string,
  contenders: number,
): Promise<ScaleCensus> {
  const before = await heapCensus(baselinePath, SUBSCRIBER_CLASSES)
  const after = await heapCensus(steadyPath, SUBSCRIBER_CLASSES)
  const subscribers = (census: typeof before): number =>
    SUBSCRIBER_CLASSES.reduce((sum, name) => sum + (census.instances[name] ?? 0), 0)
  return {
    liveKbPerContender: (after.liveBytes - before.liveBytes) / 1024 / contenders,
    baselineSubscribers: subscribers(before),
    steadySubscribers: subscribers(after),
    subscribersPerContender: (subscribers(after) - subscribers(before)) / contenders,
    subscribersByClass: Object.fromEntries(
      SUBSCRIBER_CLASSES.map((name) => [
        name,
        (after.instances[name] ?? 0) - (before.instances[name] ?? 0),
      ]),
    ),
  }
}
