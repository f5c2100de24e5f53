// Runs test/integration/fixtures/default-client-contenders.ts (many contenders on the default
// client) or default-client-tenures.ts (tenure after tenure of one replica) through a fault proxy
// in front of an agent, and measures what the agent sees and how the process ends. Shared by the
// default-client test and bench/default-client.ts.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { ContendersMessage } from '../integration/fixtures/default-client-contenders.js'
import type { TenuresMessage } from '../integration/fixtures/default-client-tenures.js'
import { startFaultProxy, type SeenRequest } from './fault-proxy.js'
import { killTree } from './processes.js'

const repoRoot = resolve(import.meta.dirname, '../..')
const fixture = resolve(repoRoot, 'test/integration/fixtures/default-client-contenders.ts')
const tenuresFixture = resolve(repoRoot, 'test/integration/fixtures/default-client-tenures.ts')

export interface DefaultClientRunSetup {
  /** `host:port` of the agent; the child reaches it through a fault proxy. */
  readonly agentAddr: string
  readonly prefix: string
  readonly contenders: number
  /** What the child does once all contend: close() each, or only unsubscribe. */
  readonly ending: 'close' | 'unsubscribe'
  /** How long the child may take to exit after the command; then it is killed. Default 20 s. */
  readonly exitWithinMs?: number
}

export interface DefaultClientRun {
  /** Most blocking list GETs of the prefix in flight at once over a quiet second. */
  readonly longPollsOnPrefix: number
  /** Most connections the child had open at the proxy at once, from its start. */
  readonly peakConnections: number
  /** From the command to the child's exit, or undefined when it had to be killed. */
  readonly exitedBySelfMs: number | undefined
  /**
   * From the child's last word (`closed` once every close() resolved, or `unsubscribed`) to its
   * exit, or undefined when it had to be killed.
   */
  readonly exitedAfterLastWordMs: number | undefined
  /**
   * From the arrival at the proxy of the child's last request (the last release's session
   * destroy, say) to its exit, or undefined when it had to be killed.
   */
  readonly exitedAfterLastRequestMs: number | undefined
  readonly exitCode: number | null
  readonly messages: readonly ContendersMessage[]
  readonly stderr: string
}

/** The blocking queries (they carry `index=`) that list `prefix`, among `requests`. */
export function longPollsOn(prefix: string, requests: readonly SeenRequest[]): number {
  return requests.filter(
    (r) =>
      r.method === 'GET' &&
      decodeURIComponent(r.path).startsWith(`/v1/kv/${prefix}`) &&
      /(^|&)index=/.test(r.query),
  ).length
}

/** A fixture running in a child process of its own, its stdout read as JSON lines. */
export interface Child<M> {
  readonly child: ChildProcessWithoutNullStreams
  readonly messages: M[]
  /** When the child's last stdout line arrived (Date.now()), or undefined before any. */
  readonly lastWordAt: () => number | undefined
  readonly stderr: () => string
  readonly exited: Promise<number | null>
  /** When the child exited (Date.now()), or undefined while it runs. */
  readonly exitedAt: () => number | undefined
  /** Polls `ok` every 20 ms; throws when the child exited first or after `timeoutMs`. */
  readonly waitFor: (what: string, ok: () => boolean, timeoutMs: number) => Promise<void>
  /**
   * Ends stdin with `command` and waits up to `withinMs` for the child's own exit: how long it
   * took from the command, or undefined when it had not exited by then.
   */
  readonly endWith: (
    command: string,
    withinMs: number,
  ) => Promise<{ exitedBySelfMs: number | undefined; exitCode: number | null }>
  /** Kills the child (with its descendants) if it still runs, and waits for its exit. */
  readonly stop: () => Promise<void>
}

/** Starts `fixture` with `args` and CONSUL_HTTP_ADDR at `addr` (no other CONSUL_* variable). */
export function startChild<M>(
  fixturePath: string,
  args: readonly string[],
  addr: string,
): Child<M> {
  // The child reads only the address we give it: no token or TLS setting of this shell.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('CONSUL_')),
  )
  const child = spawn(process.execPath, ['--import', 'tsx', fixturePath, ...args], {
    cwd: repoRoot,
    env: { ...env, CONSUL_HTTP_ADDR: addr },
    stdio: 'pipe',
  })
  const messages: M[] = []
  let lastWordAt: number | undefined
  let stderr = ''
  let pending = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk
    const lines = pending.split('\n')
    pending = lines.pop() ?? ''
    for (const line of lines) {
      if (line === '') continue
      messages.push(JSON.parse(line) as M)
      lastWordAt = Date.now()
    }
  })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  let exitedAt: number | undefined
  const exited = new Promise<number | null>((done) =>
    child.once('exit', (code) => {
      exitedAt = Date.now()
      done(code)
    }),
  )
  const waitFor = async (what: string, ok: () => boolean, timeoutMs: number): Promise<void> => {
    const deadline = Date.now() + timeoutMs
    while (!ok()) {
      if (exitedAt !== undefined) throw new Error(`the child exited before ${what}: ${stderr}`)
      if (Date.now() > deadline) throw new Error(`no ${what} within ${timeoutMs} ms: ${stderr}`)
      await sleep(20)
    }
  }
  return {
    child,
    messages,
    lastWordAt: () => lastWordAt,
    stderr: () => stderr,
    exited,
    exitedAt: () => exitedAt,
    waitFor,
    endWith: async (command, withinMs) => {
      const sentAt = Date.now()
      child.stdin.end(`${command}\n`)
      const exitCode = await Promise.race([exited, sleep(withinMs, 'timeout' as const)])
      const exitedBySelf = exitCode !== 'timeout'
      return {
        exitedBySelfMs: exitedBySelf && exitedAt !== undefined ? exitedAt - sentAt : undefined,
        exitCode: exitedBySelf ? exitCode : null,
      }
    },
    stop: async () => {
      if (exitedAt === undefined && child.pid !== undefined) {
        killTree(child.pid, 'SIGKILL')
        await exited
      }
    },
  }
}

/**
 * Starts the child with CONSUL_HTTP_ADDR at a fresh fault proxy, waits until its contenders all
 * contend, counts the long polls of the prefix and the connections, sends the ending command and
 * times the child's own exit. A child still running after `exitWithinMs` is killed (with its
 * descendants) and reported with `exitedBySelfMs: undefined`; nothing is left running either way.
 */
export async function runDefaultClientChild(
  setup: DefaultClientRunSetup,
): Promise<DefaultClientRun> {
  const proxy = await startFaultProxy(setup.agentAddr)
  const run = startChild<ContendersMessage>(
    fixture,
    [setup.prefix, String(setup.contenders)],
    proxy.addr,
  )
  const { messages, waitFor } = run
  try {
    await waitFor(
      'contending',
      () => messages.some((m) => m.type === 'contending' || m.type === 'error'),
      90_000,
    )
    const failed = messages.find((m) => m.type === 'error')
    if (failed) throw new Error(`a contender failed: ${failed.message}`)
    // The snapshots that follow the last contender key come and go; then the prefix is quiet.
    const parked = (): number => longPollsOn(setup.prefix, proxy.inFlightRequests())
    await waitFor('long poll parked on the prefix', () => parked() > 0, 10_000)
    let longPollsOnPrefix = 0
    for (let i = 0; i < 50; i++) {
      longPollsOnPrefix = Math.max(longPollsOnPrefix, parked())
      await sleep(20)
    }
    const peakConnections = proxy.peakConnections()

    const ended = await run.endWith(setup.ending, setup.exitWithinMs ?? 20_000)
    const exitedAt = run.exitedAt()
    const lastWordAt = run.lastWordAt()
    const lastRequestAt = Math.max(...proxy.requests().map((r) => r.at))
    return {
      longPollsOnPrefix,
      peakConnections,
      ...ended,
      exitedAfterLastWordMs:
        ended.exitedBySelfMs !== undefined && exitedAt !== undefined && lastWordAt !== undefined
          ? exitedAt - lastWordAt
          : undefined,
      exitedAfterLastRequestMs:
        ended.exitedBySelfMs !== undefined && exitedAt !== undefined
          ? exitedAt - lastRequestAt
          : undefined,
      messages: [...messages],
      stderr: run.stderr(),
    }
  } finally {
    await run.stop()
    await proxy.close()
  }
}

export interface TenuresRunSetup {
  /** `host:port` of the agent; the child reaches it through a fault proxy. */
  readonly agentAddr: string
  readonly prefix: string
  /** How many tenures, one after the other, in the one child. */
  readonly tenures: number
  /** How each tenure contends: `withSlot(...)`, or a new `semaphore(...)` closed once it holds. */
  readonly how: 'withSlot' | 'semaphore'
  /** How long the child may take to exit after `end`; then it is killed. Default 20 s. */
  readonly exitWithinMs?: number
}

/** What the proxy saw of one tenure, from its command to its end. */
export interface TenureCounts {
  /** Requests the child sent. */
  readonly requests: number
  /** New TCP connections the child opened. */
  readonly newConnections: number
  /** `METHOD path` of each request, in order (for a failure's message). */
  readonly seen: readonly string[]
}

export interface TenuresRun {
  readonly tenures: readonly TenureCounts[]
  /** Connections the child opened over the whole run. */
  readonly connections: number
  /** The child's connections still open (its idle client's keep-alive ones) when it got `end`. */
  readonly openAtEnd: number
  /** From `end` (sent after the last tenure) to the child's exit, or undefined when killed. */
  readonly exitedBySelfMs: number | undefined
  readonly exitCode: number | null
  readonly stderr: string
}

/**
 * Runs `tenures` tenures one after the other in one child (test/integration/fixtures/
 * default-client-tenures.ts) through a fresh fault proxy, counts what the proxy saw of each (from
 * the command to the child's word that the tenure is over), then sends `end` and times the child's
 * own exit. A child still running after `exitWithinMs` is killed and reported with
 * `exitedBySelfMs: undefined`.
 */
export async function runTenuresChild(setup: TenuresRunSetup): Promise<TenuresRun> {
  const proxy = await startFaultProxy(setup.agentAddr)
  const run = startChild<TenuresMessage>(tenuresFixture, [setup.prefix], proxy.addr)
  const { messages, waitFor } = run
  let connections = 0
  const tenures: TenureCounts[] = []
  try {
    for (let i = 1; i <= setup.tenures; i++) {
      proxy.resetCounts()
      run.child.stdin.write(`${setup.how}\n`)
      await waitFor(
        `the end of tenure ${i}`,
        () => messages.some((m) => (m.type === 'tenure' && m.tenure === i) || m.type === 'error'),
        30_000,
      )
      const failed = messages.find((m) => m.type === 'error')
      if (failed) throw new Error(`tenure ${i} failed: ${failed.message}`)
      const seen = proxy.requests()
      tenures.push({
        requests: seen.length,
        newConnections: proxy.acceptedConnections(),
        seen: seen.map((r) => `${r.method} ${decodeURIComponent(r.path)}?${r.query}`),
      })
      connections += proxy.acceptedConnections()
    }
    const openAtEnd = proxy.openConnections()
    const ended = await run.endWith('end', setup.exitWithinMs ?? 20_000)
    return { tenures, connections, openAtEnd, ...ended, stderr: run.stderr() }
  } finally {
    await run.stop()
    await proxy.close()
  }
}
