// A real Consul agent serving HTTPS that requires client certificates, with a CA and certificates
// made by `consul tls` for this agent alone.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { consulBin, freePort, startAgent, type ConsulAgent } from './consul-agent.js'

export interface TlsAgent {
  readonly agent: ConsulAgent
  /** A file in the agent's certificate folder, e.g. 'consul-agent-ca.pem'. */
  readonly file: (name: string) => string
  readonly httpsPort: number
  /** CONSUL_* variables for a client that trusts the CA and presents the client certificate. */
  readonly env: (extra?: Record<string, string>) => Record<string, string>
  /** Stops the agent and removes the certificates. */
  stop(): Promise<void>
}

/** Makes a CA, a server and a client certificate, and starts an agent with https on. */
export async function startTlsAgent(): Promise<TlsAgent> {
  const dir = mkdtempSync(join(tmpdir(), 'rxsem-tls-'))
  const file = (name: string): string => join(dir, name)
  for (const args of [
    ['ca', 'create'],
    ['cert', 'create', '-server'],
    ['cert', 'create', '-client'],
  ]) {
    execFileSync(consulBin(), ['tls', ...args], { cwd: dir, stdio: 'ignore' })
  }
  const httpsPort = await freePort()
  const agent = await startAgent({
    hcl: [
      `ca_file = "${file('consul-agent-ca.pem')}"`,
      `cert_file = "${file('dc1-server-consul-0.pem')}"`,
      `key_file = "${file('dc1-server-consul-0-key.pem')}"`,
      'verify_incoming_https = true',
      `ports { https = ${httpsPort} }`,
    ],
  })
  return {
    agent,
    file,
    httpsPort,
    env: (extra = {}) => ({
      CONSUL_HTTP_ADDR: `https://127.0.0.1:${httpsPort}`,
      CONSUL_CACERT: file('consul-agent-ca.pem'),
      CONSUL_CLIENT_CERT: file('dc1-client-consul-0.pem'),
      CONSUL_CLIENT_KEY: file('dc1-client-consul-0-key.pem'),
      ...extra,
    }),
    async stop() {
      await agent.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
