/**
 * The one place that loads `@opentelemetry/api`, an optional peer dependency: a CommonJS module
 * (`.cts`) in both builds, so that `require` resolves the package from where the library is
 * installed, synchronously, under `import` and `require` alike. (The ES module build has no
 * `require`, and `import.meta`, which `createRequire` would need, is a syntax error in the
 * CommonJS build; a dynamic `import()` would leave the first contenders unmeasured.)
 */
import type * as OtelApi from '@opentelemetry/api'

/** The OpenTelemetry API as the library uses it. */
export type OtelApiModule = typeof OtelApi

let loaded: { readonly api: OtelApiModule | undefined } | undefined

/**
 * The API, or undefined when it is not installed (or does not load): then the library measures
 * nothing and behaves as without telemetry. Tried once per process.
 *
 * @returns The module, or undefined.
 */
export function otelApi(): OtelApiModule | undefined {
  if (loaded === undefined) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- an optional peer: a missing package must be a value, not a failed import
      loaded = { api: require('@opentelemetry/api') as OtelApiModule }
    } catch {
      loaded = { api: undefined }
    }
  }
  return loaded.api
}

/**
 * The key under which `@opentelemetry/api` 1.x keeps what was registered globally in the process
 * (its `registerGlobal`): the tracer and meter providers, the context manager, the propagator and
 * the diagnostic logger all sit in one object there, made by the first registration.
 */
const OTEL_GLOBALS = Symbol.for('opentelemetry.js.api.1')

/**
 * Whether anything has registered an OpenTelemetry global in this process (an SDK started by a
 * `--require` or `--import` of NODE_OPTIONS, say), told without loading the API. When nothing has,
 * the global providers are the API's no-op ones: a contender reporting to them measures nothing.
 *
 * @returns True once a global of `@opentelemetry/api` 1.x is registered.
 */
export function otelGlobalsRegistered(): boolean {
  return (globalThis as Record<symbol, unknown>)[OTEL_GLOBALS] !== undefined
}
