/**
 * The one place that loads Node's socket modules: `node:net`, and `node:tls` for an agent spoken
 * to over TLS, when the first client's first connection is made, so that importing the library
 * loads neither. A CommonJS module (`.cts`) in both builds, as src/telemetry/otel-api.cts, so
 * that the load is synchronous under `import` and `require` alike.
 */
import type * as Net from 'node:net'
import type * as Tls from 'node:tls'

let net: typeof Net | undefined
let tls: typeof Tls | undefined

/** `node:net`, loaded on the first call. */
export function nodeNet(): typeof Net {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
  return (net ??= require('node:net') as typeof Net)
}

/** `node:tls`, loaded on the first call. */
export function nodeTls(): typeof Tls {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use
  return (tls ??= require('node:tls') as typeof Tls)
}
