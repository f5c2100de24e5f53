/**
 * `node:http` for the health endpoint, loaded when `--health-addr` starts it: a run without the
 * flag never compiles Node's HTTP modules (about a millisecond of every run's start). A CommonJS
 * module (`.cts`), as src/consul/node-net.cts, so that the load is a plain synchronous `require`
 * in the CLI's bundle.
 */
import type * as Http from 'node:http'

let http: typeof Http | undefined

/** `node:http`, loaded on the first call. */
export function nodeHttp(): typeof Http {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
  return (http ??= require('node:http') as typeof Http)
}
