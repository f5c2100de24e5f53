// The real OpenTelemetry SDK for the telemetry tests: a MeterProvider whose reader collects on
// demand, and a BasicTracerProvider that keeps finished spans in memory. Each test makes its own,
// so that what one records never shows in another's assertions.
import {
  DataPointType,
  MeterProvider,
  MetricReader,
  type DataPoint,
} from '@opentelemetry/sdk-metrics'
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base'
import type { Attributes } from '@opentelemetry/api'

/** A reader that collects when the test asks (the SDK's readers otherwise export on a timer). */
class OnDemandReader extends MetricReader {
  protected onForceFlush(): Promise<void> {
    return Promise.resolve()
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve()
  }
}

/** One data point of a collection, with its metric's name, unit and type. */
export interface Point {
  readonly name: string
  readonly unit: string
  readonly type: DataPointType
  readonly attributes: Attributes
  readonly value: number | { readonly count: number; readonly sum?: number | undefined }
}

export interface TelemetrySdk {
  readonly meterProvider: MeterProvider
  readonly tracerProvider: BasicTracerProvider
  /** Every data point of the library's meter as of now. */
  points(): Promise<Point[]>
  /** The spans that ended so far. */
  spans(): ReadableSpan[]
  shutdown(): Promise<void>
}

export function telemetrySdk(): TelemetrySdk {
  const reader = new OnDemandReader()
  const meterProvider = new MeterProvider({ readers: [reader] })
  const exporter = new InMemorySpanExporter()
  const tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  })
  return {
    meterProvider,
    tracerProvider,
    points: async () => {
      const { resourceMetrics, errors } = await reader.collect()
      if (errors.length > 0) throw new AggregateError(errors, 'the SDK failed to collect')
      return resourceMetrics.scopeMetrics
        .filter((scope) => scope.scope.name === 'rx-consul-semaphore')
        .flatMap((scope) =>
          scope.metrics.flatMap((metric) =>
            (metric.dataPoints as DataPoint<Point['value']>[]).map((point) => ({
              name: metric.descriptor.name,
              unit: metric.descriptor.unit,
              type: metric.dataPointType,
              attributes: point.attributes,
              value: point.value,
            })),
          ),
        )
    },
    spans: () => exporter.getFinishedSpans(),
    shutdown: async () => {
      await meterProvider.shutdown()
      await tracerProvider.shutdown()
    },
  }
}

/** Whether `attributes` has every attribute of `subset`. */
export function matches(attributes: Attributes, subset: Attributes): boolean {
  return Object.entries(subset).every(([name, value]) => attributes[name] === value)
}

/** The sum of a counter's (or gauge's) points that match `subset`; 0 when there is none. */
export function total(points: readonly Point[], name: string, subset: Attributes = {}): number {
  return points
    .filter((p) => p.name === name && matches(p.attributes, subset))
    .reduce((sum, p) => sum + (typeof p.value === 'number' ? p.value : 0), 0)
}

/** How many values a histogram recorded (points matching `subset`), and their sum. */
export function recorded(
  points: readonly Point[],
  name: string,
  subset: Attributes = {},
): { count: number; sum: number } {
  return points
    .filter((p) => p.name === name && matches(p.attributes, subset))
    .reduce(
      (acc, p) =>
        typeof p.value === 'number'
          ? acc
          : { count: acc.count + p.value.count, sum: acc.sum + (p.value.sum ?? 0) },
      { count: 0, sum: 0 },
    )
}
