// One default client per process: 200 semaphore contenders (limit 3) created without a
// `consul` option in a child process, which reaches the agent through a fault proxy. Counts the
// blocking list queries of their prefix in flight (one long poll expected, not 200), the most
// connections the child had open at once (the pool's 16 at most, under the agent's 200 per
// address), and the time from "close all" to the child's own exit (it never calls process.exit).
import { randomUUID } from 'node:crypto'
import { runDefaultClientChild } from '../test/support/default-client-child.js'

export interface DefaultClientResult {
  readonly contenders: number
  readonly longPollsOnPrefix: number
  readonly peakConnections: number
  /** From the close command to the process's exit, close() of all 200 included. */
  readonly exitedBySelfMs: number
}

export async function measureDefaultClient(agentAddr: string): Promise<DefaultClientResult> {
  const contenders = 200
  const prefix = `rxsem-bench/default-client/${randomUUID().slice(0, 8)}`
  const run = await runDefaultClientChild({ agentAddr, prefix, contenders, ending: 'close' })
  if (run.exitedBySelfMs === undefined) {
    throw new Error(`the contenders' process did not exit by itself; it said: ${run.stderr}`)
  }
  if (run.exitCode !== 0) throw new Error(`the contenders' process exited with ${run.exitCode}`)
  return {
    contenders,
    longPollsOnPrefix: run.longPollsOnPrefix,
    peakConnections: run.peakConnections,
    exitedBySelfMs: run.exitedBySelfMs,
  }
}
