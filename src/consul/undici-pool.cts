/**
 * The one place that loads undici: its connection Pool and the request API of that Pool, and only
 * when the first transport is made, so that importing the library loads none of undici.
 *
 * undici's index loads all of undici (fetch, WebSocket, cookies, caches, mocks), which at import
 * cost a process about 20 MB of RSS and more CPU than a bare node takes to start (bench step
 * `import`); the library uses a Pool and `request`. undici has no "exports" map, so its modules
 * load by path; should a later undici move them, the index is loaded instead (heavier, the same
 * classes). A CommonJS module (`.cts`) in both builds, as src/telemetry/otel-api.cts, so that the
 * load is synchronous under `import` and `require` alike.
 */
import type { Dispatcher, Pool } from 'undici'

/** What the transport uses of undici. */
export interface UndiciPool {
  readonly Pool: typeof Pool
  /** undici's `Dispatcher.prototype.request`, called with the pool as `this`. */
  readonly request: (
    this: Dispatcher,
    options: Dispatcher.RequestOptions,
  ) => Promise<Dispatcher.ResponseData>
}

let loaded: UndiciPool | undefined

/**
 * undici's Pool and its `request`, loaded on the first call.
 *
 * @returns Them.
 */
export function undiciPool(): UndiciPool {
  if (loaded === undefined) {
    /* eslint-disable @typescript-eslint/no-require-imports -- loaded on first use, by path */
    try {
      loaded = {
        Pool: require('undici/lib/dispatcher/pool.js') as typeof Pool,
        request: require('undici/lib/api/api-request.js') as UndiciPool['request'],
      }
    } catch {
      const undici = require('undici') as typeof import('undici')
      // eslint-disable-next-line @typescript-eslint/unbound-method -- called with a pool as `this`
      loaded = { Pool: undici.Pool, request: undici.Pool.prototype.request }
    }
    /* eslint-enable @typescript-eslint/no-require-imports */
  }
  return loaded
}
