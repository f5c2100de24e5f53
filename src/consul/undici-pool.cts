/**
 * The one place that loads undici: its connection Pool, and only when the first transport is made,
 * so that importing the library loads none of undici.
 *
 * undici's index loads all of undici (fetch, WebSocket, cookies, caches, mocks), which at import
 * cost a process about 20 MB of RSS and more CPU than a bare node takes to start (bench step
 * `import`); the library uses a Pool and its `dispatch` (`http-read-body.ts`). undici has no
 * "exports" map, so its modules load by path; should a later undici move them, the index is loaded
 * instead (heavier, the same classes). A CommonJS module (`.cts`) in both builds, as
 * src/telemetry/otel-api.cts, so that the load is synchronous under `import` and `require` alike.
 *
 * undici's Client loads its HTTP/2 client with it, and that module loads Node's http2, tls and
 * fs/promises: a third of the Pool's CPU and memory, for a protocol the library never
 * speaks (its Pool sets neither `allowH2` nor `useH2c`, so a connection offers HTTP/1.1 alone).
 * While the Pool loads, `deferHttp2Client` puts a stand-in in that module's place in Node's module
 * cache: a function that loads the real module the first time it is called, and hands it its
 * arguments. The stand-in leaves the cache once the Pool is loaded, so that anything else that
 * asks for the module gets the real one.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports -- the Module class, in a .cts
import Module = require('node:module')
import type { Pool } from 'undici'

let loaded: typeof Pool | undefined

/**
 * undici's Pool, loaded on the first call: all the transport uses of undici.
 *
 * @returns The Pool class.
 */
export function undiciPool(): typeof Pool {
  if (loaded === undefined) {
    /* eslint-disable @typescript-eslint/no-require-imports -- loaded on first use, by path */
    try {
      loaded = deferHttp2Client(() => require('undici/lib/dispatcher/pool.js') as typeof Pool)
    } catch {
      loaded = (require('undici') as typeof import('undici')).Pool
    }
    /* eslint-enable @typescript-eslint/no-require-imports */
  }
  return loaded
}

/** undici's HTTP/2 client, as its Client requires it: one function. */
type ConnectH2 = (...args: unknown[]) => unknown

/**
 * Runs `load` with undici's HTTP/2 client replaced, in Node's module cache, by a stand-in that
 * loads it on first call (see the top of this file). Does nothing when the module is already
 * loaded, cannot be found as a file (a bundle of the library), or the cache refuses the stand-in:
 * `load` then gets the module as usual.
 *
 * @param load - Loads undici's modules.
 * @returns What `load` returns.
 */
function deferHttp2Client<T>(load: () => T): T {
  let path: string
  try {
    path = require.resolve('undici/lib/dispatcher/client-h2.js')
  } catch {
    return load()
  }
  if (require.cache[path] !== undefined) return load()
  const standIn = new Module(path)
  standIn.filename = path
  standIn.loaded = true
  const leave = (): void => {
    if (require.cache[path] === standIn) delete require.cache[path]
  }
  standIn.exports = ((...args: unknown[]): unknown => {
    leave()
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- the real module, on demand
    return (require(path) as ConnectH2)(...args)
  }) satisfies ConnectH2
  try {
    require.cache[path] = standIn
  } catch {
    // A module system whose cache takes no entries (a test runner's own): nothing to defer.
    return load()
  }
  try {
    return load()
  } finally {
    leave()
  }
}
