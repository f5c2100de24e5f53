/**
 * How the transport reaches its agent: a TCP connection to the address's host and port, the
 * agent's unix socket, or either under TLS; and the Host header that names it. The modules are
 * loaded when the first connection is made (`node-net.cts`).
 */
import type { Socket } from 'node:net'
import type { ConnectionOptions, TLSSocket } from 'node:tls'
import type { ResolvedConfig } from './config.js'
import { nodeNet, nodeTls } from './node-net.cjs'

/** What `createWire` needs to reach the agent of `config`. */
export interface Connector {
  /** Opens a new connection (still connecting when returned; writes wait for it). */
  readonly connect: () => Socket
  /** The Host header: the address's host and port (`localhost` for a unix socket). */
  readonly host: string
}

/**
 * The connector of `config`'s agent. Over TLS, each new connection offers the session of the
 * last one, so that it resumes it rather than make a new one (Node's https agent does the same).
 *
 * @example
 * const { connect, host } = connector(resolveConfig({ address: '127.0.0.1:8500' }))
 */
export function connector(config: ResolvedConfig): Connector {
  const url = new URL(config.origin)
  // An IPv6 host without its brackets.
  const tcpHost = url.hostname.replace(/^\[(.*)\]$/, '$1')
  const where =
    config.socketPath === undefined
      ? { host: tcpHost, port: portOf(url) }
      : { path: config.socketPath }
  const host = config.socketPath === undefined ? url.host : 'localhost'
  const tlsOptions = config.tls
  if (tlsOptions === undefined) {
    return { host, connect: () => nodeNet().connect(where) }
  }
  const tls = nodeTls()
  const options: ConnectionOptions = {
    ...where,
    ...(tlsOptions.ca === undefined ? {} : { ca: tlsOptions.ca }),
    ...(tlsOptions.cert === undefined ? {} : { cert: tlsOptions.cert }),
    ...(tlsOptions.key === undefined ? {} : { key: tlsOptions.key }),
    rejectUnauthorized: tlsOptions.rejectUnauthorized,
    ALPNProtocols: ['http/1.1'],
  }
  // SNI and the certificate's name check: the name given, else the host unless an address.
  const servername =
    tlsOptions.servername ??
    (config.socketPath === undefined && nodeNet().isIP(tcpHost) === 0 ? tcpHost : undefined)
  let session: Buffer | undefined
  return {
    host,
    connect: () => {
      const socket: TLSSocket = tls.connect({
        ...options,
        ...(servername === undefined ? {} : { servername }),
        ...(session === undefined ? {} : { session }),
      })
      socket.on('session', (next: Buffer) => (session = next))
      return socket
    },
  }
}

/** The address's port, or its scheme's. */
function portOf(url: URL): number {
  if (url.port !== '') return Number(url.port)
  return url.protocol === 'https:' ? 443 : 80
}
