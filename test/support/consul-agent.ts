// Starts and stops real Consul agents for tests: a dev agent on loopback (the common case),
// a second independent agent, or a 3-server cluster. No mock ever stands in for Consul.
//
// Every process started here is recorded as a pid file in $RXSEM_TEST_RUN_DIR (set by
// scripts/run-tests.ts) and killed when the test process exits, so the runner can check that no
// `consul` process outlives a run, even one whose test process crashed.
import { spawn, execFileSync, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { createSocket } from 'node:dgram'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'

const repoRoot = resolve(import.meta.dirname, '../..')

let consulBinary: string | undefined
/** The path of the Consul binary: $CONSUL_BIN, else what scripts/consul.sh finds or fetches. */
export function consulBin(): string {
  consulBinary ??=
    process.env['CONSUL_BIN'] ||
    execFileSync('bash', [join(repoRoot, 'scripts/consul.sh')], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    }).trim()
  return consulBinary
}

export interface AgentPorts {
  readonly http: number
  readonly serfLan: number
  readonly serfWan: number
  readonly server: number
}

export interface AgentOptions {
  /** Extra HCL fragments, e.g. ACL or TLS configuration. */
  readonly hcl?: readonly string[]
  /** Extra command-line arguments for `consul agent`. */
  readonly args?: readonly string[]
  /** Start as a dev agent (in-memory, single server). Default true. */
  readonly dev?: boolean
  /** Node name; default a unique one. */
  readonly node?: string
  /**
   * Fixed ports; the others free ones. Ports not fixed here are picked again when the agent fails
   * to start (a port picked as free can be taken before the agent binds it).
   */
  readonly ports?: Partial<AgentPorts>
  /** Probe for readiness with this ACL token (agents with default-deny ACLs). */
  readonly token?: string
  /** A readiness check of its own (e.g. over https); default: a leader and a healthy node. */
  readonly probe?: (agent: ConsulAgent) => Promise<void>
  /** Wait until ready before resolving. Default true (a cluster member waits for its peers). */
  readonly wait?: boolean
}

export interface ConsulAgent {
  /** host:port of the HTTP API, the form of CONSUL_HTTP_ADDR. */
  readonly addr: string
  /** http://host:port */
  readonly url: string
  readonly node: string
  readonly ports: AgentPorts
  readonly pid: number | undefined
  /** Stops the agent (SIGINT, then SIGKILL after 5 s) and waits for it to exit. */
  stop(): Promise<void>
  /** Kills the agent at once (SIGKILL) and waits for it to exit. */
  kill(): Promise<void>
  /**
   * Stops and starts it again on the same ports: a dev agent comes back empty; another keeps its
   * state, unless `wipe` (its data folder emptied in between: every session, key and index lost).
   */
  restart(options?: {
    readonly wipe?: boolean
    /** Called once the old process has exited, before the new one starts. */
    readonly onStopped?: () => void
  }): Promise<void>
  /** Resolves once the agent answers with a known leader and its node is healthy. */
  ready(timeoutMs?: number): Promise<void>
}

const running = new Set<ChildProcess>()
let exitHookInstalled = false

function runDir(): string | undefined {
  return process.env['RXSEM_TEST_RUN_DIR']
}

function recordPid(pid: number): void {
  const dir = runDir()
  if (dir) writeFileSync(join(dir, `consul-${pid}.pid`), `${pid}\n`)
}

function forgetPid(pid: number): void {
  const dir = runDir()
  if (dir) rmSync(join(dir, `consul-${pid}.pid`), { force: true })
}

function installExitHook(): void {
  if (exitHookInstalled) return
  exitHookInstalled = true
  // 'exit' handlers run synchronously: a kill is all that can be done there, and enough.
  process.on('exit', () => {
    for (const port of handedOut) rmSync(join(reservations, String(port)), { force: true })
    for (const child of running) {
      if (child.pid !== undefined && child.exitCode === null) {
        child.kill('SIGKILL')
        try {
          unlinkSync(join(runDir() ?? '/nonexistent', `consul-${child.pid}.pid`))
        } catch {
          // already gone
        }
      }
    }
  })
}

/** Whether `port` is free for TCP and UDP on 127.0.0.1 now. */
export async function portIsFree(port: number): Promise<boolean> {
  const tcp = await new Promise<boolean>((done) => {
    const server = createServer()
    server.once('error', () => done(false))
    server.listen(port, '127.0.0.1', () => server.close(() => done(true)))
  })
  if (!tcp) return false
  return new Promise<boolean>((done) => {
    const udp = createSocket('udp4')
    udp.once('error', () => {
      udp.close()
      done(false)
    })
    udp.bind(port, '127.0.0.1', () => udp.close(() => done(true)))
  })
}

// Test files run in parallel processes, each picking ports at random: a port is reserved across
// them by a file named after it, created exclusively, that holds the reserving pid. A file whose
// pid is gone is taken over; this process's files go when it exits.
const reservations = join(tmpdir(), 'rxsem-test-ports')
const handedOut = new Set<number>()

function pidIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Reserves `port` for this process unless a live process reserved it first. */
function reserve(port: number): boolean {
  const file = join(reservations, String(port))
  for (let tries = 0; tries < 2; tries++) {
    try {
      writeFileSync(file, `${process.pid}\n`, { flag: 'wx' })
      handedOut.add(port)
      installExitHook()
      return true
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
    let owner = Number.NaN
    try {
      owner = Number.parseInt(readFileSync(file, 'utf8'), 10)
    } catch {
      // removed meanwhile: try again
    }
    if (Number.isInteger(owner) && pidIsAlive(owner)) return false
    rmSync(file, { force: true })
  }
  return false
}

/**
 * A port free for TCP and UDP on 127.0.0.1, handed out once across every test process of the
 * machine that lives.
 */
export async function freePort(): Promise<number> {
  mkdirSync(reservations, { recursive: true })
  for (;;) {
    // Below the Linux ephemeral range (32768+) so outgoing connections cannot take it meanwhile.
    const port = 20000 + Math.floor(Math.random() * 12000)
    if (handedOut.has(port) || !reserve(port)) continue
    if (await portIsFree(port)) return port
  }
}

/** `fixed`, with a free port for each one it leaves out. */
async function freePorts(fixed: Partial<AgentPorts> = {}): Promise<AgentPorts> {
  return {
    http: fixed.http ?? (await freePort()),
    serfLan: fixed.serfLan ?? (await freePort()),
    serfWan: fixed.serfWan ?? (await freePort()),
    server: fixed.server ?? (await freePort()),
  }
}

async function defaultProbe(agent: ConsulAgent, token: string | undefined): Promise<void> {
  const headers: Record<string, string> = token ? { 'X-Consul-Token': token } : {}
  const leader = await fetch(`${agent.url}/v1/status/leader`, { headers })
  const leaderText = await leader.text()
  if (!leader.ok || !/^"[^"]+"\s*$/.test(leaderText))
    throw new Error(`no leader yet: ${leaderText}`)
  // Sessions need the node registered with a passing serfHealth check.
  const health = await fetch(`${agent.url}/v1/health/node/${agent.node}`, { headers })
  const checks = (await health.json()) as { CheckID: string; Status: string }[]
  if (!checks.some((c) => c.CheckID === 'serfHealth' && c.Status === 'passing')) {
    throw new Error('node not yet healthy')
  }
}

/** Starts a Consul agent bound to 127.0.0.1 on free ports, DNS and gRPC off, and waits for it. */
export async function startAgent(options: AgentOptions = {}): Promise<ConsulAgent> {
  installExitHook()
  const dev = options.dev ?? true
  const node = options.node ?? `rxsem-test-${randomUUID().slice(0, 8)}`
  let ports = await freePorts(options.ports)
  let child: ChildProcess | undefined
  let dataDir: string | undefined
  let output = ''
  let spawnError: Error | undefined

  const args = (): string[] => [
    'agent',
    ...(dev ? ['-dev'] : []),
    `-node=${node}`,
    '-bind=127.0.0.1',
    '-client=127.0.0.1',
    '-advertise=127.0.0.1',
    `-http-port=${ports.http}`,
    `-serf-lan-port=${ports.serfLan}`,
    `-serf-wan-port=${ports.serfWan}`,
    `-server-port=${ports.server}`,
    '-dns-port=-1',
    '-grpc-port=-1',
    '-log-level=warn',
    ...(dataDir ? [`-data-dir=${dataDir}`] : []),
    ...(options.hcl ?? []).map((h) => `-hcl=${h}`),
    ...(options.args ?? []),
  ]

  if (!dev) dataDir = mkdtempSync(join(tmpdir(), 'rxsem-consul-'))

  const launch = (): void => {
    output = ''
    spawnError = undefined
    const proc = spawn(consulBin(), args(), { stdio: ['ignore', 'pipe', 'pipe'] })
    proc.stdout?.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-8000)))
    proc.stderr?.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-8000)))
    // A binary that cannot be started (missing, not executable) is reported by ready(), not thrown.
    proc.once('error', (error) => {
      spawnError = error
      output += `\ncannot start ${consulBin()}: ${error.message}`
    })
    running.add(proc)
    if (proc.pid !== undefined) recordPid(proc.pid)
    proc.once('exit', () => {
      running.delete(proc)
      if (proc.pid !== undefined) forgetPid(proc.pid)
    })
    child = proc
  }

  const waitExit = (proc: ChildProcess, killAfterMs: number): Promise<void> =>
    new Promise<void>((done) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return done()
      const timer = setTimeout(() => proc.kill('SIGKILL'), killAfterMs)
      proc.once('exit', () => {
        clearTimeout(timer)
        done()
      })
    })

  const agent: ConsulAgent = {
    get addr() {
      return `127.0.0.1:${ports.http}`
    },
    get url() {
      return `http://127.0.0.1:${ports.http}`
    },
    node,
    get ports() {
      return ports
    },
    get pid() {
      return child?.pid
    },
    async stop() {
      const proc = child
      if (!proc) return
      proc.kill('SIGINT')
      await waitExit(proc, 5000)
      if (dataDir && !restarting) rmSync(dataDir, { recursive: true, force: true })
    },
    async kill() {
      const proc = child
      if (!proc) return
      proc.kill('SIGKILL')
      await waitExit(proc, 0)
    },
    async restart(restartOptions) {
      restarting = true
      try {
        await agent.stop()
      } finally {
        restarting = false
      }
      restartOptions?.onStopped?.()
      if (dataDir && restartOptions?.wipe === true) {
        rmSync(dataDir, { recursive: true, force: true })
        mkdirSync(dataDir)
      }
      launch()
      await agent.ready()
    },
    async ready(timeoutMs = 20000) {
      const deadline = Date.now() + timeoutMs
      let last: unknown
      for (;;) {
        const proc = child
        if (!proc || spawnError || proc.exitCode !== null || proc.signalCode !== null) {
          throw new Error(`consul agent exited before it was ready:\n${output}`)
        }
        try {
          await (options.probe ? options.probe(agent) : defaultProbe(agent, options.token))
          return
        } catch (error) {
          last = error
        }
        if (Date.now() > deadline) {
          throw new Error(
            `consul agent not ready after ${timeoutMs} ms (${String(last)}):\n${output}`,
          )
        }
        await sleep(100)
      }
    },
  }
  let restarting = false

  // A port picked as free can be taken before the agent binds it: retry with new ones.
  for (let attempt = 1; ; attempt++) {
    launch()
    try {
      if (options.wait ?? true) await agent.ready()
      return agent
    } catch (error) {
      await agent.kill()
      const fixed = Object.values(options.ports ?? {}).filter((p) => p !== undefined).length
      if (attempt >= 3 || fixed === Object.keys(ports).length) {
        if (dataDir) rmSync(dataDir, { recursive: true, force: true })
        throw error
      }
      ports = await freePorts(options.ports)
    }
  }
}

/**
 * Resolves true once `pid` is gone (or a zombie waiting to be reaped by its new parent), false if
 * it still runs after `withinMs`.
 */
export async function processGone(pid: number, withinMs = 3000): Promise<boolean> {
  const deadline = Date.now() + withinMs
  for (;;) {
    let state: string | undefined
    try {
      state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0]
    } catch {
      return true
    }
    if (state === 'Z' || state === 'X') return true
    if (Date.now() > deadline) return false
    await sleep(50)
  }
}

export interface ConsulCluster {
  readonly servers: readonly ConsulAgent[]
  /** The server that is the Raft leader now. */
  leader(): Promise<ConsulAgent>
  stop(): Promise<void>
}

/** Starts `size` Consul servers on loopback that form one cluster, and waits for a leader. */
export async function startCluster(size = 3): Promise<ConsulCluster> {
  // The servers join each other by port, so every port is fixed before the first starts: when
  // one was taken meanwhile, the whole cluster starts again on new ones.
  for (let attempt = 1; ; attempt++) {
    try {
      return await startClusterOn(
        await Promise.all(Array.from({ length: size }, () => freePorts())),
      )
    } catch (error) {
      if (attempt >= 3 || !String(error).includes('address already in use')) throw error
    }
  }
}

async function startClusterOn(allPorts: readonly AgentPorts[]): Promise<ConsulCluster> {
  const join = allPorts.map((p) => `-retry-join=127.0.0.1:${p.serfLan}`)
  const servers: ConsulAgent[] = []
  try {
    for (const [i, ports] of allPorts.entries()) {
      servers.push(
        await startAgent({
          dev: false,
          ports,
          node: `rxsem-server-${i}-${randomUUID().slice(0, 6)}`,
          args: [
            '-server',
            `-bootstrap-expect=${allPorts.length}`,
            '-disable-host-node-id',
            ...join,
          ],
          hcl: ['performance { raft_multiplier = 1 }'],
          wait: false,
        }),
      )
    }
    await Promise.all(servers.map((s) => s.ready(60000)))
  } catch (error) {
    await Promise.all(servers.map((s) => s.stop()))
    throw error
  }
  return {
    servers,
    async leader() {
      const first = servers[0]
      if (!first) throw new Error('empty cluster')
      for (const s of servers) {
        try {
          const res = await fetch(`${s.url}/v1/status/leader`)
          const leaderAddr = (await res.json()) as string
          const found = servers.find((x) => leaderAddr === `127.0.0.1:${x.ports.server}`)
          if (found) return found
        } catch {
          // this one is down; ask the next
        }
      }
      throw new Error('no server knows a leader')
    },
    async stop() {
      await Promise.all(servers.map((s) => s.stop()))
    },
  }
}

/**
 * Starts a Consul client agent (no `-server`) on loopback and free ports that joins `cluster`
 * through its servers' Serf LAN ports, as an application host's local agent does in a fleet: its
 * HTTP API forwards KV, session and txn requests to the servers over RPC. DNS and gRPC are off,
 * as on every agent here. Resolves once the agent knows a leader (`/v1/status/leader`) and its own
 * node is registered and healthy, so sessions can be created through it. Its pid is recorded like
 * every agent's; stop it (`agent.stop()`) before the cluster.
 */
export async function startClientAgent(
  cluster: ConsulCluster,
  options: { readonly node?: string } = {},
): Promise<ConsulAgent> {
  // startAgent waits for the leader and the healthy node, and retries on new ports if one of
  // them was taken meanwhile.
  return startAgent({
    dev: false,
    node: options.node ?? `rxsem-client-${randomUUID().slice(0, 6)}`,
    // Several agents on one host would otherwise derive the same node ID from it.
    args: [
      '-disable-host-node-id',
      ...cluster.servers.map((s) => `-retry-join=127.0.0.1:${s.ports.serfLan}`),
    ],
  })
}

/**
 * The agent shared by the whole test run (started by scripts/run-tests.ts), or, when a test file
 * is run on its own, one started for this process. Use a unique prefix per test (`uniquePrefix`).
 */
export async function sharedAgent(): Promise<{
  addr: string
  url: string
  close(): Promise<void>
}> {
  const addr = process.env['RXSEM_TEST_CONSUL_ADDR']
  if (addr) return { addr, url: `http://${addr}`, close: async () => {} }
  const own = await startAgent()
  return { addr: own.addr, url: own.url, close: () => own.stop() }
}

/** A KV prefix no other test uses; a test takes it from `testPrefix`, which cleans it up. */
export function uniquePrefix(name: string): string {
  return `rxsem-test/${name}/${randomUUID().slice(0, 8)}`
}
