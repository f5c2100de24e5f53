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
import { requestFeedOf, type RequestOutcome } from '../consul/request-feed.js'
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
  private readonly consulRequests: Counter
  /** Counts by phase, per contender attribute set (prefix, limit, protocol). */
  private readonly phases = new Map<string, PhaseTally>()
  private readonly counted = new WeakSet<ConsulClient>()
  private readonly requestAttributes = new Map<string, Attributes>()

  constructor(meter: Meter) {
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
    this.consulRequests = meter.createCounter(METRICS.consulRequests, {
      description:
        'Consul HTTP requests, by endpoint kind, with the error kind of those that failed',
      unit: '{request}',
    })
    meter
      .createObservableUpDownCounter(METRICS.contenders, {
        description: 'Contenders of this process, by phase',
        unit: '{contender}',
      })
      .addCallback((result) => this.observePhases(result))
  }

  /** The phase counts of one attribute set (prefix, limit, protocol). */
  phaseCounts(key: string, attributes: Attributes): PhaseCounts {
    let tally = this.phases.get(key)
    if (tally === undefined) {
      tally = new PhaseTally(attributes)
      this.phases.set(key, tally)
    }
    return tally
  }

  /** Counts the requests of `client` from now on (once per client; only createConsulClient's). */
  countRequestsOf(client: ConsulClient): void {
    if (this.counted.has(client)) return
    this.counted.add(client)
    requestFeedOf(client)?.listen((outcome) =>
      this.consulRequests.add(1, this.attributesOf(outcome)),
    )
  }

  private attributesOf(outcome: RequestOutcome): Attributes {
    const key = `${outcome.endpoint} ${outcome.error ?? ''}`
    let attributes = this.requestAttributes.get(key)
    if (attributes === undefined) {
      attributes =
        outcome.error === undefined
          ? { [ATTRIBUTES.endpoint]: outcome.endpoint }
          : { [ATTRIBUTES.endpoint]: outcome.endpoint, [ATTRIBUTES.errorType]: outcome.error }
      this.requestAttributes.set(key, attributes)
    }
    return attributes
  }

  private observePhases(result: ObservableResult): void {
    for (const tally of this.phases.values()) tally.observe(result)
  }
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
    instruments = new MetricInstruments(meterProvider.getMeter(SCOPE_NAME, SCOPE_VERSION))
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
