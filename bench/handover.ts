// Figure 2, handover: a holder releases → the next waiter holds, with a few contenders that
// hold, release and contend again in a loop, so that a waiter is always queued.
//   Library:        release = close() called; holds = holding$ true (in-process clock).
//   CLIs:           release = the child's last timestamp before it exits; holds = the child's
//                   first timestamp (`date +%s%N`, written by the child itself).
// A handover counts only when the new holder had been contending for `readyMs` before the
// release (pair-handovers.ts), so the start-up of a process never passes for handover time.
import { createConsulClient } from '../src/consul/client.js'
import type { ConsulHttpClient } from '../src/consul/client.js'
import { Workspace, type CliImplementation } from './children.js'
import { holdOnce, now } from './library-contender.js'
import { pairHandovers, type HoldEvent, type Handovers } from './pair-handovers.js'

export interface HandoverRun extends Handovers {
  readonly implementation: string
  readonly limit: number
  readonly holdMs: number
  readonly contenders: number
}

export interface Pace {
  readonly holdMs: number
  /** How long a contender must have been ready (contending) to count as queued. */
  readonly readyMs: number
  /** Expected start-up of a contender process before it is ready. */
  readonly startupMs: number
}

/** Enough contenders that the one served next has always been queued for readyMs. */
function contendersFor(limit: number, pace: Pace): number {
  return limit + Math.ceil((limit * (pace.startupMs + pace.readyMs)) / pace.holdMs) + 1
}

function deadlineMs(target: number, limit: number, pace: Pace): number {
  return (2 * target * pace.holdMs) / limit + 30_000
}

export async function libraryHandovers(
  addr: string,
  limit: number,
  target: number,
  pace: Pace,
): Promise<HandoverRun> {
  const prefix = `bench-handover/library-${limit}-${Date.now()}`
  const contenders = contendersFor(limit, pace)
  const events: HoldEvent[] = []
  const deadline = now() + deadlineMs(target, limit, pace)
  // One client per contender, as separate processes would have.
  const clients: ConsulHttpClient[] = []
  let stop = false
  const enough = (): boolean =>
    stop || now() > deadline || pairHandovers(events, pace.readyMs).samples.length >= target
  try {
    const loops = Array.from({ length: contenders }, async (_, i) => {
      const client = createConsulClient({ address: addr })
      clients.push(client)
      await new Promise((done) => setTimeout(done, i * 20)) // a defined queue order
      while (!enough()) {
        await holdOnce({
          client,
          prefix,
          limit,
          who: `c${i}`,
          holdMs: pace.holdMs,
          events,
          deadline,
        })
      }
    })
    await Promise.all(loops)
  } finally {
    stop = true
    await Promise.all(clients.map((client) => client.close()))
  }
  return {
    implementation: 'library',
    limit,
    holdMs: pace.holdMs,
    contenders,
    ...pairHandovers(events, pace.readyMs),
  }
}

export async function cliHandovers(
  implementation: CliImplementation,
  addr: string,
  limit: number,
  target: number,
  pace: Pace,
): Promise<HandoverRun> {
  const slug = implementation.name.replace(/\W+/g, '-')
  const prefix = `bench-handover/${slug}-${limit}-${Date.now()}`
  const contenders = contendersFor(limit, pace)
  const workspace = new Workspace()
  const wants: HoldEvent[] = []
  const deadline = Date.now() + deadlineMs(target, limit, pace)
  // Wall clock throughout: the children's timestamps are wall-clock nanoseconds.
  const log = (): HoldEvent[] => [
    ...wants,
    ...workspace.readEvents().map((e): HoldEvent => ({
      kind: e.kind === 'S' ? 'start' : 'release',
      who: e.who,
      at: e.at,
    })),
  ]
  let stop = false
  const enough = (): boolean =>
    stop || Date.now() > deadline || pairHandovers(log(), pace.readyMs).samples.length >= target
  try {
    const loops = Array.from({ length: contenders }, async (_, i) => {
      await new Promise((done) => setTimeout(done, i * 50))
      while (!enough()) {
        const contender = { addr, prefix, limit, who: `c${i}`, holdMs: pace.holdMs, deadline }
        if (!(await workspace.runContender(implementation, contender, wants))) return
      }
    })
    await Promise.all(loops)
    return {
      implementation: implementation.name,
      limit,
      holdMs: pace.holdMs,
      contenders,
      ...pairHandovers(log(), pace.readyMs),
    }
  } finally {
    stop = true
    workspace.terminateAll()
    await workspace.killAll()
  }
}
