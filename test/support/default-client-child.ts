// Runs test/integration/fixtures/default-client-contenders.ts (many contenders on the default
// client) through a fault proxy in front of an agent, and measures what the agent sees and how the
// process ends. Shared by the default-client test and bench/default-client.ts.
import { spawn } from 'node:child_process'
import { resolve } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import type { ContendersMessage } from '../integration/fixtures/default-client-contenders.js'
import { startFaultProxy, type SeenRequest } from './fault-proxy.js'
import { killTree } from './processes.js'

const repoRoot = resolve(import.meta.dirname, '../..')
const fixture = resolve(repoRoot, 'test/integration/fixtures/default-client-contenders.ts')

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
  // The child reads only the address we give it: no token or TLS setting of this shell.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('CONSUL_')),
  )
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', fixture, setup.prefix, String(setup.contenders)],
    { cwd: repoRoot, env: { ...env, CONSUL_HTTP_ADDR: proxy.addr }, stdio: 'pipe' },
  )
  const messages: ContendersMessage[] = []
  let stderr = ''
  let pending = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    pending += chunk
    const lines = pending.split('\n')
    pending = lines.pop() ?? ''
    for (const line of lines) if (line !== '') messages.push(JSON.parse(line) as ContendersMessage)
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

    const sentAt = Date.now()
    child.stdin.end(`${setup.ending}\n`)
    const exitWithinMs = setup.exitWithinMs ?? 20_000
    const exitCode = await Promise.race([exited, sleep(exitWithinMs, 'timeout' as const)])
    const exitedBySelf = exitCode !== 'timeout'
    return {
      longPollsOnPrefix,
      peakConnections,
      exitedBySelfMs: exitedBySelf && exitedAt !== undefined ? exitedAt - sentAt : undefined,
      exitCode: exitedBySelf ? exitCode : null,
      messages: [...messages],
      stderr,
    }
  } finally {
    if (exitedAt === undefined && child.pid !== undefined) {
      killTree(child.pid, 'SIGKILL')
      await exited
    }
    await proxy.close()
  }
}
