/**
 * The `telemetry` option of a contender. Structural types, not the OpenTelemetry API's: the
 * library's declarations must compile for users who do not install `@opentelemetry/api`.
 */

/**
 * What the library asks of a MeterProvider: the SDK's `MeterProvider`, or any other
 * implementation of `@opentelemetry/api`'s interface.
 *
 * @example
 * ```ts
 * import { MeterProvider } from '@opentelemetry/sdk-metrics'
 * const meterProvider: MeterProviderLike = new MeterProvider({ readers: [reader] })
 * ```
 */
export interface MeterProviderLike {
  /** Returns the meter of an instrumentation scope (OpenTelemetry's `MeterProvider.getMeter`). */
  getMeter(name: string, version?: string, options?: object): unknown
}

/**
 * What the library asks of a TracerProvider: the SDK's `BasicTracerProvider`, or any other
 * implementation of `@opentelemetry/api`'s interface.
 *
 * @example
 * ```ts
 * import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base'
 * const tracerProvider: TracerProviderLike = new BasicTracerProvider({ spanProcessors })
 * ```
 */
export interface TracerProviderLike {
  /** Returns the tracer of an instrumentation scope (OpenTelemetry's `TracerProvider.getTracer`). */
  getTracer(name: string, version?: string, options?: object): unknown
}

/**
 * Where a contender's metrics and spans go (docs/observability.md). Without this option they go
 * to the global providers that `@opentelemetry/api` holds (what an SDK registers), as
 * OpenTelemetry's instrumentations do; a provider given here replaces the global one. Without
 * `@opentelemetry/api` installed nothing is measured, whatever the option says.
 *
 * @example
 * ```ts
 * semaphore({ prefix: 'service/db/lock', limit: 3, telemetry: { meterProvider } })
 * semaphore({ prefix: 'service/db/lock', limit: 3, telemetry: false }) // measures nothing
 * ```
 */
export interface TelemetryOptions {
  /** Receives the metrics. Default: the global MeterProvider of `@opentelemetry/api`. */
  readonly meterProvider?: MeterProviderLike
  /** Receives the spans. Default: the global TracerProvider of `@opentelemetry/api`. */
  readonly tracerProvider?: TracerProviderLike
}
