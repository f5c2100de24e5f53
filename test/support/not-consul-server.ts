// A web server on loopback that is not a Consul agent, as a newcomer's CONSUL_HTTP_ADDR may name
// one (a dashboard, `python3 -m http.server`): every request gets the same answer.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface NotConsulServer {
  /** `127.0.0.1:<port>`, the form of CONSUL_HTTP_ADDR. */
  readonly addr: string
  close(): void
}

/** Starts a server that answers every request with `status`, `type` and `body`. */
export async function startNotConsul(
  status: number,
  type: string,
  body: string,
): Promise<NotConsulServer> {
  const server: Server = createServer((request, response) => {
    request.resume()
    response.writeHead(status, { 'Content-Type': type }).end(body)
  })
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done))
  return {
    addr: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.close()
      server.closeAllConnections()
    },
  }
}
