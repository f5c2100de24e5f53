/**
 * The library's instruments on one MeterProvider, made once per provider and shared by every
 * contender that reports to it; and the tracer of one TracerProvider. The contenders-by-phase
 * gauge is observed: contenders keep counts here, and the SDK reads them when it collects.
 */
import type {
  Attributes,
  Counter,
  Histogram,
  Meter,
  MeterProvider,
  ObservableResult,
  Tracer,
  TracerProvider,
} from '@opentelemetry/api'
import type { ConsulClient } from '../consul/client-api.js'
import { requestFeedOf, type ConsulEndpoint, type RequestOutcome } from '../consul/request-feed.js'
import type { ContenderPhase } from '../core/contender/contender-state-model.js'
import { ATTRIBUTES, DURATION_BUCKETS_S, METRICS } from './metric-names.js'
import type { OtelApiModule } from './otel-api.cjs'
import { SCOPE_NAME, SCOPE_VERSION } from './scope.js'
import type { MeterProviderLike, TracerProviderLike } from './telemetry-options.js'

/** How many contenders of one attribute set are in each phase. */
export interface PhaseCounts {
  readonly move: (from: ContenderPhase | undefined, to: ContenderPhase | undefined) => void
}

/** The instruments of one MeterProvider. */
export class MetricInstruments {
  readonly acquisitions: Counter
  readonly waitDuration: Histogram
  readonly holdDuration: Histogram
  readonly handovers: Counter
  readonly losses: Counter
  readonly casConflicts: Counter
  /** Counts by phase, per contender attribute set (prefix, limit, protocol). */
  private readonly phases = new Map<string, PhaseTally>()
  private readonly counted = new WeakSet<ConsulClient>()
  /**
   * Consul requests counted here and reported when the SDK collects: a request is frequent (a
   * thousand contenders renew over a hundred sessions a second), and a synchronous counter's
   * add() hashes its attributes each time, which cost the library a few percent of its CPU.
   */
  private readonly requests = new Map<ConsulEndpoint, RequestTally>()

  /**
   * @param meter - The library's meter.
   * @param live - False for the API's no-op meter (no SDK registered): then nothing is tallied
   *   for it (the requests, the phases), since nothing would ever read it.
   */
  constructor(
    meter: Meter,
    private readonly live = true,
  ) {
    const durations = { advice: { explicitBucketBoundaries: DURATION_BUCKETS_S } }
    this.acquisitions = meter.createCounter(METRICS.acquisitions, {
      description: 'Tenures begun: a won CAS or a hand-off made this contender a holder',
      unit: '{acquisition}',
    })
    this.waitDuration = meter.createHistogram(METRICS.waitDuration, {
      description: 'Time from starting to contend to holding a slot',
      unit: 's',
      ...durations,
    })
    this.holdDuration = meter.createHistogram(METRICS.holdDuration, {
      description: 'Time a slot was held, from holding true to holding false',
      unit: 's',
      ...durations,
    })
    this.handovers = meter.createCounter(METRICS.handovers, {
      description: 'Slots a release handed straight to the first waiter',
      unit: '{handover}',
    })
    this.losses = meter.createCounter(METRICS.losses, {
      description: 'Falls of holding that were not a release, by reason',
      unit: '{loss}',
    })
    this.casConflicts = meter.createCounter(METRICS.casConflicts, {
      description: 'Acquiring writes that lost to another writer',
      unit: '{conflict}',
    })
    meter
      .createObservableCounter(METRICS.consulRequests, {
        description:
          'Consul HTTP requests, by endpoint kind, with the error kind of those that failed',
        unit: '{request}',
      })
      .addCallback((result) => this.observeRequests(result))
    meter
      .createObservableUpDownCounter(METRICS.contenders, {
        description: 'Contenders of this process, by phase',
        unit: '{contender}',
      })
      .addCallback((result) => this.observePhases(result))
  }

  /** The phase counts of one attribute set (prefix, limit, protocol). */
  phaseCounts(key: string, attributes: Attributes): PhaseCounts {
    if (!this.live) return NO_PHASE_COUNTS
    let tally = this.phases.get(key)
    if (tally === undefined) {
      tally = new PhaseTally(attributes)
      this.phases.set(key, tally)
    }
    return tally
  }

  /** Counts the requests of `client` from now on (once per client; only createConsulClient's). */
  countRequestsOf(client: ConsulClient): void {
    if (!this.live || this.counted.has(client)) return
    this.counted.add(client)
    requestFeedOf(client)?.listen((outcome) => this.countRequest(outcome))
  }

  private countRequest({ endpoint, error }: RequestOutcome): void {
    let tally = this.requests.get(endpoint)
    if (tally === undefined) {
      tally = { ok: { n: 0, attributes: { [ATTRIBUTES.endpoint]: endpoint } }, failed: new Map() }
      this.requests.set(endpoint, tally)
    }
    if (error === undefined) {
      tally.ok.n++
      return
    }
    let failed = tally.failed.get(error)
    if (failed === undefined) {
      const attributes = { [ATTRIBUTES.endpoint]: endpoint, [ATTRIBUTES.errorType]: error }
      failed = { n: 0, attributes }
      tally.failed.set(error, failed)
    }
    failed.n++
  }

  private observeRequests(result: ObservableResult): void {
    for (const { ok, failed } of this.requests.values()) {
      if (ok.n > 0) result.observe(ok.n, ok.attributes)
      for (const count of failed.values()) result.observe(count.n, count.attributes)
    }
  }

  private observePhases(result: ObservableResult): void {
    for (const tally of this.phases.values()) tally.observe(result)
  }
}

const NO_PHASE_COUNTS: PhaseCounts = { move: () => undefined }

/** The requests of one endpoint kind: those that succeeded, and the failed ones by error kind. */
interface RequestTally {
  readonly ok: { n: number; readonly attributes: Attributes }
  readonly failed: Map<string, { n: number; readonly attributes: Attributes }>
}

/** Contenders per phase for one attribute set; a phase once seen is reported, also at 0. */
class PhaseTally implements PhaseCounts {
  private readonly counts = new Map<ContenderPhase, { n: number; attributes: Attributes }>()

  constructor(private readonly attributes: Attributes) {}

  move(from: ContenderPhase | undefined, to: ContenderPhase | undefined): void {
    if (from === to) return
    if (from !== undefined) this.entry(from).n--
    if (to !== undefined) this.entry(to).n++
  }

  observe(result: ObservableResult): void {
    for (const { n, attributes } of this.counts.values()) result.observe(n, attributes)
  }

  private entry(phase: ContenderPhase): { n: number; attributes: Attributes } {
    let entry = this.counts.get(phase)
    if (entry === undefined) {
      entry = { n: 0, attributes: { ...this.attributes, [ATTRIBUTES.phase]: phase } }
      this.counts.set(phase, entry)
    }
    return entry
  }
}

const instrumentsByProvider = new WeakMap<object, MetricInstruments>()
const tracerByProvider = new WeakMap<object, Tracer>()

/**
 * The instruments on `provider`, or on the API's global MeterProvider as it is now (an SDK may
 * register one after the library loaded: each new contender looks again).
 */
export function metricInstruments(
  api: OtelApiModule,
  provider: MeterProviderLike | undefined,
): MetricInstruments {
  const meterProvider = (provider as MeterProvider | undefined) ?? api.metrics.getMeterProvider()
  let instruments = instrumentsByProvider.get(meterProvider)
  if (instruments === undefined) {
    const meter = meterProvider.getMeter(SCOPE_NAME, SCOPE_VERSION)
    // The global provider before an SDK registers one hands out the API's no-op meter.
    const noop = typeof api.createNoopMeter === 'function' && meter === api.createNoopMeter()
    instruments = new MetricInstruments(meter, !noop)
    instrumentsByProvider.set(meterProvider, instruments)
  }
  return instruments
}

/** The library's tracer on `provider`, or on the API's global TracerProvider. */
export function libraryTracer(
  api: OtelApiModule,
  provider: TracerProviderLike | undefined,
): Tracer {
  const tracerProvider = (provider as TracerProvider | undefined) ?? api.trace.getTracerProvider()
  let tracer = tracerByProvider.get(tracerProvider)
  if (tracer === undefined) {
    tracer = tracerProvider.getTracer(SCOPE_NAME, SCOPE_VERSION)
    tracerByProvider.set(tracerProvider, tracer)
  }
  return tracer
}
