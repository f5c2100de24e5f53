// `npm run agent`: a throwaway Consul agent for your own experiments, in the foreground until
// Ctrl-C. A dev agent (one server, everything in memory) on 127.0.0.1 only: on Consul's default
// HTTP port 8500 when that is free, so that the `consul` CLI finds it without settings, else on a
// free port. It prints the `export CONSUL_HTTP_ADDR=...` line that points the library, `rxsem` and
// the `consul` CLI at it. scripts/consul.sh finds or fetches the binary, as for the tests; when
// that binary is not the `consul` of PATH (a fetched copy in .cache/), it prints the alias line that
// makes `consul` run it.
//
// Options: `--port <n>` for another HTTP port (`npm run agent -- --port 8600`).
import { randomUUID } from 'node:crypto'
import { accessSync, constants, realpathSync } from 'node:fs'
import { delimiter, join } from 'node:path'
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

/** The `consul` a shell would run: the first executable `consul` in PATH, or undefined. */
function consulOnPath(): string | undefined {
  for (const dir of (process.env['PATH'] ?? '').split(delimiter)) {
    if (dir === '') continue
    const candidate = join(dir, 'consul')
    try {
      accessSync(candidate, constants.X_OK)
      return candidate
    } catch {
      // Not here.
    }
  }
  return undefined
}

const sameFile = (a: string, b: string): boolean => {
  try {
    return realpathSync(a) === realpathSync(b)
  } catch {
    return false
  }
}

/** How to run the `consul` CLI against the agent: directly, or through an alias to `bin`. */
function consulCliLines(bin: string): string[] {
  const onPath = consulOnPath()
  if (onPath !== undefined && sameFile(onPath, bin)) {
    return ['The consul CLI on your PATH reads it too, e.g. `consul members`.']
  }
  const where =
    onPath === undefined
      ? 'There is no consul on your PATH'
      : `The consul on your PATH (${onPath}) is another binary`
  return [
    `${where}; this agent runs ${bin}. For its CLI, in the same terminal:`,
    '',
    `  alias consul=${bin}`,
  ]
}

async function main(): Promise<void> {
  const bin = consulBin()
  // Only the HTTP port is fixed: the others are picked again if one is taken before consul binds it.
  const ports = { http: await httpPort() }
  const agent = await startAgent({ node: `rxsem-agent-${randomUUID().slice(0, 8)}`, ports })
  const stopped = new Promise<NodeJS.Signals>((done) => {
    process.once('SIGINT', done)
    process.once('SIGTERM', done)
  })
  console.log(
    [
      `Consul dev agent ${bin} (pid ${agent.pid}) on ${agent.url}, in memory.`,
      'Point the library and rxsem at it (in another terminal):',
      '',
      `  export CONSUL_HTTP_ADDR=${agent.addr}`,
      '',
      ...consulCliLines(bin),
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
