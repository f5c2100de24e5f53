// `npm run agent`: a throwaway Consul agent for your own experiments, in the foreground until
// Ctrl-C. A dev agent (one server, everything in memory) on 127.0.0.1 only: on Consul's default
// HTTP port 8500 when that is free, so that the `consul` CLI finds it without settings, else on a
// free port. It prints the `export CONSUL_HTTP_ADDR=...` line that points the library, `rxsem` and
// the `consul` CLI at it. scripts/consul.sh finds or fetches the binary, as for the tests.
//
// Options: `--port <n>` for another HTTP port (`npm run agent -- --port 8600`).
import { randomUUID } from 'node:crypto'
import { consulBin, freePort, portIsFree, startAgent } from '../test/support/consul-agent.js'

const CONSUL_HTTP_PORT = 8500

/** The HTTP port: `--port <n>`, else 8500 when free, else a free one. */
async function httpPort(): Promise<number> {
  const flag = process.argv.indexOf('--port')
  if (flag >= 0) {
    const port = Number(process.argv[flag + 1])
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      throw new Error(`--port wants a port number, got ${process.argv[flag + 1] ?? 'nothing'}`)
    }
    return port
  }
  return (await portIsFree(CONSUL_HTTP_PORT)) ? CONSUL_HTTP_PORT : await freePort()
}

async function main(): Promise<void> {
  const bin = consulBin()
  const http = await httpPort()
  const ports = {
    http,
    serfLan: await freePort(),
    serfWan: await freePort(),
    server: await freePort(),
  }
  const agent = await startAgent({ node: `rxsem-agent-${randomUUID().slice(0, 8)}`, ports })
  const stopped = new Promise<NodeJS.Signals>((done) => {
    process.once('SIGINT', done)
    process.once('SIGTERM', done)
  })
  console.log(
    [
      `Consul dev agent ${bin} (pid ${agent.pid}) on ${agent.url}, in memory.`,
      'Point the library, rxsem and the consul CLI at it (in another terminal):',
      '',
      `  export CONSUL_HTTP_ADDR=${agent.addr}`,
      '',
      'Ctrl-C stops it, and what it held is gone.',
    ].join('\n'),
  )
  await stopped
  await agent.stop()
  console.log(`Consul agent pid ${agent.pid} stopped.`)
}

main().catch((error: unknown) => {
  console.error(`agent: ${error instanceof Error ? error.message : String(error)}`)
  process.exitCode = 1
})
