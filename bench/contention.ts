// Figure 3, contention: N contenders want one of `limit` slots, each holding `holdMs`, until
// `acquisitions` slots were taken in all. Every request to Consul goes through one fault proxy in
// `pass` mode, which counts them.
//   Library:  all contenders in ONE process sharing one client (one watch per prefix).
//   CLIs:     one process per acquisition, as an operator's script would run them.
// A wait runs from wanting a slot (semaphore created / process spawned) to holding it.
import { createConsulClient } from '../src/consul/client.js'
import { startFaultProxy, type FaultProxy, type SeenRequest } from '../test/support/fault-proxy.js'
import { Workspace, type CliImplementation } from './children.js'
import { holdOnce, now } from './library-contender.js'
import { pairHandovers, type HoldEvent } from './pair-handovers.js'
import { jain, summarize, type Summary } from './stats.js'

export interface ContentionRun {
  readonly implementation: string
  readonly acquisitions: number
  readonly requests: number
  readonly requestsPerAcquisition: number
  /** CAS writes of `.lock` (a txn for ours, `PUT .lock?cas=` for consul lock). */
  readonly casAttempts: number
  /** CAS writes of `.lock` the agent refused (`isLostCas`: a txn rolled back, a CAS answered false). */
  readonly casLost: number
  readonly perSecond: number
  readonly wait: Summary
  readonly waits: readonly number[]
  /** Waits from the contender being up and contending (without process start-up). */
  readonly queuedWait: Summary
  /** Jain's index of each contender's mean wait. */
  readonly fairness: number
  /**
   * A holder's release → the next holder's start, while that one had been contending for
   * `HANDOVER_READY_MS` (figure 2's pairing, `pairHandovers`).
   */
  readonly handover: Summary
  /** Handovers left out: the next holder had not been contending long enough (its start-up). */
  readonly handoverDropped: number
  /** Attempts to take a single-key lock's `.lock` (`isLockAttempt`); 0 for the semaphore. */
  readonly lockAttempts: number
  /** Those the agent refused (`isLostLockAttempt`). */
  readonly lockLost: number
  /** Most holders at once, from the logged intervals: must not exceed the limit. */
  readonly peakHolders: number
  readonly requestsByKind: ReadonlyMap<string, number>
}

export interface ContentionSetup {
  readonly contenders: number
  readonly limit: number
  readonly holdMs: number
  readonly acquisitions: number
}

/**
 * A CAS write of `.lock`: PUT /v1/txn with a `cas` (ours; not the join, which only takes the
 * contender key) or PUT <prefix>/.lock?cas= (consul lock).
 */
export function isCasWrite(request: SeenRequest): boolean {
  if (request.method !== 'PUT') return false
  if (request.path === '/v1/txn')
    return request.sent === undefined || request.sent.includes('"Verb":"cas"')
  return request.path.endsWith('/.lock') && /(^|&)cas=/.test(request.query)
}

/**
 * How long a contender must have been contending before a release for the handover to count: its
 * process start-up is not handover time (figure 2's `readyMs` for the CLIs).
 */
export const HANDOVER_READY_MS = 100

/**
 * An attempt to take a single-key lock (Consul's Lock recipe): a transaction that `lock`s a
 * `.lock` key (rxsem run --leader), or PUT <prefix>/.lock?acquire= (consul lock without -n). The
 * semaphore's joins lock contender keys, not `.lock`, and are not counted.
 */
export function isLockAttempt(request: SeenRequest): boolean {
  if (request.method !== 'PUT') return false
  if (request.path === '/v1/txn')
    return request.sent?.includes('"Verb":"lock"') === true && request.sent.includes('/.lock"')
  return request.path.endsWith('/.lock') && /(^|&)acquire=/.test(request.query)
}

/** A lock attempt the agent refused: a transaction rolled back (409), or an acquire answered false. */
export function isLostLockAttempt(request: SeenRequest): boolean {
  if (!isLockAttempt(request) || request.answer === undefined) return false
  if (request.path === '/v1/txn') return request.answer.status === 409
  return request.answer.status === 200 && request.answer.body?.trim() === 'false'
}

/**
 * A CAS write of `.lock` that lost, as the agent answered it: a transaction rolled back (409), or
 * a `PUT .lock?cas=` answered `false`.
 */
export function isLostCas(request: SeenRequest): boolean {
  if (!isCasWrite(request) || request.answer === undefined) return false
  if (request.path === '/v1/txn') return request.answer.status === 409
  return request.answer.status === 200 && request.answer.body?.trim() === 'false'
}

/** Most holders at once in a log of starts and releases (a release first on a tie). */
export function peakHolders(events: readonly HoldEvent[]): number {
  let current = 0
  let peak = 0
  // Releases first on a tie: a slot handed over within the same microsecond is not an overlap.
  const order = { release: 0, start: 1, want: 2, ready: 2 }
  for (const e of [...events].sort((a, b) => a.at - b.at || order[a.kind] - order[b.kind])) {
    if (e.kind === 'start') peak = Math.max(peak, ++current)
    if (e.kind === 'release') current--
  }
  return peak
}

function summarizeRun(
  implementation: string,
  events: readonly HoldEvent[],
  proxy: FaultProxy,
): ContentionRun {
  const requests = proxy.requests()
  const acquisitions = events.filter((e) => e.kind === 'start').length
  const casAttempts = requests.filter(isCasWrite).length
  const { waits, queuedWaits, samples, dropped } = pairHandovers(events, HANDOVER_READY_MS)
  const byContender = new Map<string, number[]>()
  for (const w of waits) byContender.set(w.who, [...(byContender.get(w.who) ?? []), w.ms])
  const means = [...byContender.values()].map((ms) => ms.reduce((s, x) => s + x, 0) / ms.length)
  const times = events.map((e) => e.at)
  const seconds = (Math.max(...times) - Math.min(...times)) / 1000
  const kinds = new Map<string, number>()
  for (const r of requests) {
    const path = r.path.replace(/\/v1\/kv\/.*\/\.lock$/, '/v1/kv/<p>/.lock')
    const key = `${r.method} ${path.replace(/\/v1\/(kv|session\/\w+)\/.*/, '/v1/$1/…')}`
    kinds.set(key, (kinds.get(key) ?? 0) + 1)
  }
  return {
    implementation,
    acquisitions,
    requests: requests.length,
    requestsPerAcquisition: requests.length / Math.max(1, acquisitions),
    casAttempts,
    casLost: requests.filter(isLostCas).length,
    perSecond: acquisitions / seconds,
    wait: summarize(waits.map((w) => w.ms)),
    waits: waits.map((w) => w.ms),
    queuedWait: summarize(queuedWaits),
    fairness: jain(means),
    handover: summarize(samples),
    handoverDropped: dropped,
    lockAttempts: requests.filter(isLockAttempt).length,
    lockLost: requests.filter(isLostLockAttempt).length,
    peakHolders: peakHolders(events),
    requestsByKind: kinds,
  }
}

export async function libraryContention(
  addr: string,
  setup: ContentionSetup,
): Promise<ContentionRun> {
  const proxy = await startFaultProxy(addr)
  const client = createConsulClient({ address: proxy.addr })
  const prefix = `bench-contention/library-${Date.now()}`
  const events: HoldEvent[] = []
  const deadline = now() + 120_000
  const rounds = Math.ceil(setup.acquisitions / setup.contenders)
  try {
    proxy.resetCounts()
    await Promise.all(
      Array.from({ length: setup.contenders }, async (_, i) => {
        for (let round = 0; round < rounds && now() < deadline; round++) {
          await holdOnce({
            client,
            prefix,
            limit: setup.limit,
            who: `c${i}`,
            holdMs: setup.holdMs,
            events,
            deadline,
          })
        }
      }),
    )
    return summarizeRun('library', events, proxy)
  } finally {
    await client.close()
    await proxy.close()
  }
}

export async function cliContention(
  implementation: CliImplementation,
  addr: string,
  setup: ContentionSetup,
): Promise<ContentionRun> {
  const proxy = await startFaultProxy(addr)
  const workspace = new Workspace()
  const slug = implementation.name.replace(/\W+/g, '-')
  const prefix = `bench-contention/${slug}-${Date.now()}`
  const wants: HoldEvent[] = []
  const deadline = Date.now() + 240_000
  const rounds = Math.ceil(setup.acquisitions / setup.contenders)
  try {
    proxy.resetCounts()
    await Promise.all(
      Array.from({ length: setup.contenders }, async (_, i) => {
        for (let round = 0; round < rounds && Date.now() < deadline; round++) {
          const contender = {
            addr: proxy.addr,
            prefix,
            limit: setup.limit,
            who: `c${i}`,
            holdMs: setup.holdMs,
            deadline,
          }
          if (!(await workspace.runContender(implementation, contender, wants))) return
        }
      }),
    )
    const events = [
      ...wants,
      ...workspace.readEvents().map((e): HoldEvent => ({
        kind: e.kind === 'S' ? 'start' : 'release',
        who: e.who,
        at: e.at,
      })),
    ]
    return summarizeRun(implementation.name, events, proxy)
  } finally {
    workspace.terminateAll()
    await workspace.killAll()
    await proxy.close()
  }
}
