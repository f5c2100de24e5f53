/**
 * The one place that loads Node's HTTP client: `node:http`, or `node:https` for an agent spoken to
 * over TLS, when the first transport is made, so that importing the library loads neither. A
 * CommonJS module (`.cts`) in both builds, as src/telemetry/otel-api.cts, so that the load is
 * synchronous under `import` and `require` alike.
 */
import type * as Http from 'node:http'
import type * as Https from 'node:https'

/** The parts of `node:http` and `node:https` the transport uses: the one or the other. */
export type HttpModule = Pick<typeof Http, 'Agent' | 'request'>

let http: typeof Http | undefined
let https: typeof Https | undefined

/**
 * Node's HTTP client, loaded on the first call: `node:https` when `secure`, else `node:http`.
 *
 * @param secure - Whether the agent is spoken to over TLS.
 * @returns The module.
 */
export function nodeHttp(secure: boolean): HttpModule {
  /* eslint-disable @typescript-eslint/no-require-imports -- loaded on first use */
  if (secure) return (https ??= require('node:https') as typeof Https)
  return (http ??= require('node:http') as typeof Http)
  /* eslint-enable @typescript-eslint/no-require-imports */
}
