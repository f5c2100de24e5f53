// The process of figure 5: `contenders` semaphores over `prefixes` prefixes, all on one client,
// with nothing else in the process, so that its RSS is the library's. Driven by bench/scale.ts
// over IPC: baseline → steady (measured) → churn (measured) → close. With BENCH_HEAP_SNAPSHOTS set
// to a folder, it also writes a heap snapshot there at baseline and at steady state (bench/scale.ts
// reads them once the worker is gone: the census would cost this process CPU and memory).
import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { join } from 'node:path'
import { writeHeapSnapshot } from 'node:v8'
import type { Subscription } from 'rxjs'
import type { Semaphore } from '../src/recipes/semaphore.js'

// The library as users run it: the build (`npm run bench` builds first), not the sources through
// tsx, whose transform gives every closure a name property (about a third more heap per
// contender). BENCH_LIB=src measures the sources instead.
const library = (
  process.env['BENCH_LIB'] === 'src'
    ? await import('../src/index.js')
    : await import(new URL('../dist/esm/index.js', import.meta.url).href)
) as typeof import('../src/index.js')
const { createConsulClient, semaphore } = library

/**
 * What the contenders report to (bench/telemetry-cost.ts): `off`, `telemetry: false`; `api`, the
 * API's global no-op providers (the default with @opentelemetry/api installed and no SDK); `sdk`,
 * an SDK MeterProvider whose reader collects every second; `sdk-spans`, that and an SDK
 * TracerProvider that batches the spans to memory. Unset: the default (`api`).
 */
const telemetryMode = process.env['BENCH_TELEMETRY'] ?? 'api'
if (telemetryMode === 'sdk' || telemetryMode === 'sdk-spans') {
  const { metrics, trace } = await import('@opentelemetry/api')
  const sdk = await import('@opentelemetry/sdk-metrics')
  metrics.setGlobalMeterProvider(
    new sdk.MeterProvider({
      readers: [
        new sdk.PeriodicExportingMetricReader({
          exporter: new sdk.InMemoryMetricExporter(sdk.AggregationTemporality.CUMULATIVE),
          exportIntervalMillis: 1000,
        }),
      ],
    }),
  )
  if (telemetryMode === 'sdk-spans') {
    const traces = await import('@opentelemetry/sdk-trace-base')
    trace.setGlobalTracerProvider(
      new traces.BasicTracerProvider({
        spanProcessors: [new traces.BatchSpanProcessor(new traces.InMemorySpanExporter())],
      }),
    )
  }
}
const telemetry = telemetryMode === 'off' ? { telemetry: false as const } : {}

export type WorkerMessage =
  | {
      readonly type: 'baseline'
      readonly rssMb: number
      /** Live heap after a full collection, before the first contender. */
      readonly heapMb: number
      /** The heap snapshot's path, when asked for one. */
      readonly snapshot: string | undefined
    }
  | {
      readonly type: 'steady'
      readonly rssMb: number
      readonly heapMb: number
      readonly snapshot: string | undefined
      readonly tcpSockets: number
      readonly holders: number
      readonly contending: number
      /** Until every contender's key was in Consul (state.contending). */
      readonly contendingMs: number
      /** Until, in addition, every slot was held. */
      readonly settleMs: number
    }
  | {
      readonly type: 'churned'
      readonly cpuUs: number
      readonly acquisitions: number
      readonly stateEmissions: number
      readonly ms: number
      /** With BENCH_PROFILE_TELEMETRY set: the window's CPU profile, counted (see below). */
      readonly profile: TelemetryProfile | undefined
    }
  | { readonly type: 'closed'; readonly failedReleases: number }

const [proxyAddr, prefixCount, perPrefix, limit, runId] = process.argv.slice(2)
const prefixes = Number(prefixCount)
const each = Number(perPrefix)
const slots = Number(limit)

const send = (message: WorkerMessage): void => {
  process.send?.(message)
}
const mb = (bytes: number): number => bytes / 1024 / 1024
const snapshots = process.env['BENCH_HEAP_SNAPSHOTS']
/** The live heap: after a full collection (the worker runs with --expose-gc), not garbage. */
const liveHeapMb = (): number => {
  ;(globalThis as { gc?: () => void }).gc?.()
  return mb(process.memoryUsage().heapUsed)
}
/** A heap snapshot in the asked folder (V8 collects garbage first), or nothing when not asked. */
const heapSnapshot = (name: string): string | undefined =>
  snapshots === undefined ? undefined : writeHeapSnapshot(join(snapshots, `${name}.heapsnapshot`))

/**
 * With BENCH_CPU_PROFILES set to a folder: V8 CPU profiles of the start-up (first contender to
 * steady state) and of the churn window, written there as startup.cpuprofile and
 * churn.cpuprofile (open them in Chrome's DevTools or read them with a script).
 */
const cpuProfiles = process.env['BENCH_CPU_PROFILES']
async function startCpuProfile(): Promise<Session | undefined> {
  if (cpuProfiles === undefined) return undefined
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.setSamplingInterval', { interval: 200 })
  await session.post('Profiler.start')
  return session
}
async function writeCpuProfile(session: Session | undefined, name: string): Promise<void> {
  if (session === undefined || cpuProfiles === undefined) return
  const { profile } = await session.post('Profiler.stop')
  session.disconnect()
  writeFileSync(join(cpuProfiles, `${name}.cpuprofile`), JSON.stringify(profile))
}

interface Contender {
  readonly prefix: string
  readonly sem: Semaphore
  subscription: Subscription | undefined
  holding: boolean
  contending: boolean
}

const client = createConsulClient({ address: proxyAddr })
const live = new Set<Contender>()
let churning = false
let acquisitions = 0
let stateEmissions = 0
const closing: Promise<void>[] = []
let failedReleases = 0

function contend(prefix: string): void {
  const sem = semaphore({ prefix, limit: slots, consul: client, ...telemetry })
  const contender: Contender = {
    prefix,
    sem,
    holding: false,
    contending: false,
    subscription: undefined,
  }
  // state$ answers synchronously on subscribe: the object must exist before.
  contender.subscription = sem.state$.subscribe({
    next: (state) => {
      stateEmissions++
      contender.contending = state.contending
      if (state.holding && !contender.holding && churning) replaceSoon(contender)
      contender.holding = state.holding
    },
    error: () => {},
  })
  live.add(contender)
}

/** Acquired during the churn: hold 100 ms, then make room; a new contender takes its place. */
function replaceSoon(contender: Contender): void {
  acquisitions++
  setTimeout(() => {
    if (!churning || !live.has(contender)) return
    retire(contender)
    contend(contender.prefix)
  }, 100)
}

function retire(contender: Contender): void {
  live.delete(contender)
  closing.push(
    contender.sem.close().catch(() => {
      failedReleases++
    }),
  )
  contender.subscription?.unsubscribe()
}

const wait = (ms: number) => new Promise((done) => setTimeout(done, ms))

async function main(): Promise<void> {
  const baselineHeapMb = liveHeapMb()
  const baselineSnapshot = heapSnapshot('baseline')
  // RSS after the snapshot: what writing it left in the process counts in both RSS figures.
  send({
    type: 'baseline',
    rssMb: mb(process.memoryUsage().rss),
    heapMb: baselineHeapMb,
    snapshot: baselineSnapshot,
  })
  const startupProfile = await startCpuProfile()
  const started = performance.now()
  for (let p = 0; p < prefixes; p++) {
    for (let c = 0; c < each; c++) contend(`bench-scale/${runId}/p${p}`)
  }
  let contendingMs: number | undefined
  const settled = (): boolean => {
    let holders = 0
    let contending = 0
    for (const c of live) {
      if (c.holding) holders++
      if (c.contending) contending++
    }
    if (contending === live.size) contendingMs ??= performance.now() - started
    return holders === prefixes * slots && contending === live.size
  }
  const limitMs = 60_000 + live.size * 20
  while (!settled() && performance.now() - started < limitMs) await wait(20)
  const settleMs = performance.now() - started
  await writeCpuProfile(startupProfile, 'startup')
  await wait(2000) // let the start-up burst's garbage and sockets settle
  const tcpSockets = process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length
  const rssMb = mb(process.memoryUsage().rss)
  const heapMb = liveHeapMb()
  const snapshot = heapSnapshot('steady')
  // Writing the snapshot stops the process for a while: let the renewals and answers it held up
  // go through before the churn is measured.
  if (snapshot !== undefined) await wait(2000)
  send({
    type: 'steady',
    rssMb,
    heapMb,
    snapshot,
    tcpSockets,
    holders: [...live].filter((c) => c.holding).length,
    contending: [...live].filter((c) => c.contending).length,
    contendingMs: contendingMs ?? Number.NaN,
    settleMs,
  })
}

/** Samples of a CPU profile, and those with telemetry code anywhere on their stack. */
export interface TelemetryProfile {
  /** Samples in which the process ran JavaScript or native code (not idle). */
  readonly busySamples: number
  /** Of those, samples with a frame of the telemetry on the stack (inclusive time). */
  readonly telemetrySamples: number
}

/**
 * The telemetry's code: the library's src/telemetry (built), the request feed the transport
 * publishes to, and the OpenTelemetry packages (API, SDK).
 */
const TELEMETRY_CODE = /\/telemetry\/|\/consul\/request-feed\.js|\/@opentelemetry\//

interface ProfileNode {
  readonly id: number
  readonly callFrame: { readonly url: string; readonly functionName: string }
  readonly children?: readonly number[]
}

/** Counts the samples of a V8 CPU profile that ran telemetry code, itself or below it. */
function countTelemetry(profile: {
  readonly nodes: readonly ProfileNode[]
  readonly samples?: readonly number[]
}): TelemetryProfile {
  const parent = new Map<number, number>()
  const byId = new Map<number, ProfileNode>()
  for (const node of profile.nodes) {
    byId.set(node.id, node)
    for (const child of node.children ?? []) parent.set(child, node.id)
  }
  const idle = new Set(['(idle)', '(program)', '(root)'])
  const memo = new Map<number, boolean>()
  const inTelemetry = (id: number): boolean => {
    const known = memo.get(id)
    if (known !== undefined) return known
    const node = byId.get(id)
    const up = parent.get(id)
    const found =
      node !== undefined &&
      (TELEMETRY_CODE.test(node.callFrame.url) || (up !== undefined && inTelemetry(up)))
    memo.set(id, found)
    return found
  }
  let busySamples = 0
  let telemetrySamples = 0
  for (const id of profile.samples ?? []) {
    const name = byId.get(id)?.callFrame.functionName ?? ''
    if (idle.has(name)) continue
    busySamples++
    if (inTelemetry(id)) telemetrySamples++
  }
  return { busySamples, telemetrySamples }
}

process.on('message', (message: string) => {
  if (message === 'churn') {
    void (async () => {
      const ms = Number(process.env['BENCH_CHURN_MS'] ?? 5000)
      const churnProfile = await startCpuProfile()
      const profiler = process.env['BENCH_PROFILE_TELEMETRY'] === '1' ? new Session() : undefined
      if (profiler !== undefined) {
        profiler.connect()
        await profiler.post('Profiler.enable')
        await profiler.post('Profiler.start')
      }
      acquisitions = 0
      stateEmissions = 0
      const cpu = process.cpuUsage()
      churning = true
      // The steady phase's holders start the churn: each retires after 100 ms like later ones.
      for (const c of [...live]) if (c.holding) replaceSoon(c)
      acquisitions = 0 // those were acquired before the window
      const start = performance.now()
      await wait(ms)
      churning = false
      const used = process.cpuUsage(cpu)
      const profile =
        profiler === undefined
          ? undefined
          : countTelemetry((await profiler.post('Profiler.stop')).profile)
      profiler?.disconnect()
      await writeCpuProfile(churnProfile, 'churn')
      send({
        type: 'churned',
        cpuUs: used.user + used.system,
        acquisitions,
        stateEmissions,
        ms: performance.now() - start,
        profile,
      })
    })()
  } else if (message === 'close') {
    void (async () => {
      for (const c of [...live]) retire(c)
      await Promise.all(closing)
      await client.close()
      send({ type: 'closed', failedReleases })
      process.disconnect()
    })()
  }
})
void main()
