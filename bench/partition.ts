// Figure 4, loss detection under partition. Limit 2: a holder A talks to Consul through its own
// fault proxy, a holder B and a waiter C directly. At t0 A's proxy turns to `blackhole` (requests
// and answers vanish, no error, no RST), as when a firewall drops a host. Measured from t0:
//   stop:     A stops acting as a holder (library: holding$ false; CLIs: A's child gets SIGTERM
//             and writes a timestamp from its trap);
//   takeover: C holds (holding$ true / C's child started).
// Safe = A stopped before C took over. Limit 2, not 1: `consul lock -n 1` is Consul's Lock
// recipe, whose 15 s lock-delay would add to its takeover and blur the comparison.
import { setTimeout as sleep } from 'node:timers/promises'
import { createConsulClient } from '../src/consul/client.js'
import { semaphore, type Semaphore } from '../src/recipes/semaphore.js'
import { startFaultProxy } from '../test/support/fault-proxy.js'
import { Workspace, type CliImplementation } from './children.js'
import { now } from './library-contender.js'

export interface PartitionTrial {
  /** ms from the blackhole to the holder's stop; undefined: it never stopped before the end. */
  readonly stopMs: number | undefined
  readonly takeoverMs: number | undefined
  /** How long the trial watched after the blackhole. */
  readonly watchedMs: number
  readonly safe: boolean
}

/** The longest a trial waits: consul lock's 15 s TTL is only enforced after 2 × 15 s. */
const WATCH_CAP_MS = 50_000
/** How long to wait for the holder's stop after a takeover (it may still come, late). */
const AFTER_TAKEOVER_MS = 6_000

function trial(stopMs: number | undefined, takeoverMs: number | undefined, watchedMs: number) {
  return {
    stopMs,
    takeoverMs,
    watchedMs,
    safe: stopMs !== undefined && (takeoverMs === undefined || stopMs < takeoverMs),
  }
}

async function until(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) return false
    await sleep(25)
  }
  return true
}

export async function cliPartitionTrial(
  implementation: CliImplementation,
  addr: string,
  ttl: string,
): Promise<PartitionTrial> {
  const proxy = await startFaultProxy(addr)
  const workspace = new Workspace()
  const slug = implementation.name.replace(/\W+/g, '-')
  const prefix = `bench-partition/${slug}-${Date.now()}`
  const started = (who: string) => () =>
    workspace.readEvents().some((e) => e.kind === 'S' && e.who === who)
  const launch = (who: string, via: string): void => {
    const [command, ...args] = implementation.argv({
      addr: via,
      prefix,
      limit: 2,
      who,
      script: workspace.script,
      ttl,
    })
    if (command !== undefined) workspace.start(command, args, { BENCH_HOLD: 'forever' })
  }
  try {
    launch('holder', proxy.addr)
    if (!(await until(started('holder'), 30_000))) throw new Error('partition: no holder')
    launch('filler', addr)
    if (!(await until(started('filler'), 30_000))) throw new Error('partition: no filler')
    launch('waiter', addr)
    // The waiter's process must be up and queued; rxsem's start-up from source takes ~1-2 s.
    await sleep(4000)
    const t0 = Date.now()
    proxy.setMode('blackhole')
    const find = (kind: 'S' | 'T', who: string): number | undefined =>
      workspace.readEvents().find((e) => e.kind === kind && e.who === who && e.at >= t0)?.at
    let takenAt: number | undefined
    await until(() => {
      takenAt ??= find('S', 'waiter') !== undefined ? Date.now() : undefined
      if (find('T', 'holder') !== undefined && takenAt !== undefined) return true
      return takenAt !== undefined && Date.now() > takenAt + AFTER_TAKEOVER_MS
    }, WATCH_CAP_MS)
    const end = Date.now()
    // Read before the cleanup below SIGTERMs everyone (which makes the holder's trap write too).
    const stop = find('T', 'holder')
    const takeover = find('S', 'waiter')
    return trial(
      stop === undefined ? undefined : stop - t0,
      takeover === undefined ? undefined : takeover - t0,
      end - t0,
    )
  } finally {
    await proxy.close()
    workspace.terminateAll()
    await sleep(500)
    await workspace.killAll()
  }
}

export async function libraryPartitionTrial(addr: string, ttl: string): Promise<PartitionTrial> {
  const proxy = await startFaultProxy(addr)
  const partitioned = createConsulClient({ address: proxy.addr })
  const direct = createConsulClient({ address: addr })
  const prefix = `bench-partition/library-${Date.now()}`
  const make = (consul: typeof direct, value: string): Semaphore =>
    semaphore({ prefix, limit: 2, consul, value, ttl })
  const holder = make(partitioned, 'holder')
  const filler = make(direct, 'filler')
  const waiter = make(direct, 'waiter')
  const at: { holderHeld?: number; holderStop?: number; fillerHeld?: number; taken?: number } = {}
  let waiterQueued = false
  // For the error message when a step does not come: what the holder last knew.
  let holderState = 'no state yet'
  // One after the other: the holder must hold before the others contend, or they could take
  // both slots first (the holder's path through the proxy is a little slower).
  const subscriptions = [
    holder.state$.subscribe({
      next: (s) =>
        (holderState = `holding ${s.holding}, contending ${s.contending}, connected ${s.connected}, reason ${s.reason}`),
      error: (e: unknown) => (holderState = `error ${String(e)}`),
    }),
    holder.holding$.subscribe({
      next: (h) => (h ? (at.holderHeld ??= now()) : at.holderHeld && (at.holderStop ??= now())),
      error: () => (at.holderStop ??= now()),
    }),
  ]
  try {
    if (!(await until(() => at.holderHeld !== undefined, 30_000))) {
      throw new Error(`no holder within 30 s (${holderState})`)
    }
    subscriptions.push(
      filler.holding$.subscribe({ next: (h) => h && (at.fillerHeld ??= now()), error: () => {} }),
    )
    if (!(await until(() => at.fillerHeld !== undefined, 30_000))) throw new Error('no filler')
    subscriptions.push(
      waiter.state$.subscribe({
        next: (s) => {
          waiterQueued ||= s.contending
          if (s.holding) at.taken ??= now()
        },
        error: () => {},
      }),
    )
    if (!(await until(() => waiterQueued, 30_000))) throw new Error('waiter not queued')
    await sleep(500)
    const t0 = now()
    proxy.setMode('blackhole')
    await until(() => {
      if (at.taken === undefined) return false
      return at.holderStop !== undefined || now() > at.taken + AFTER_TAKEOVER_MS
    }, WATCH_CAP_MS)
    const end = now()
    return trial(
      at.holderStop === undefined ? undefined : at.holderStop - t0,
      at.taken === undefined ? undefined : at.taken - t0,
      end - t0,
    )
  } finally {
    for (const s of subscriptions) s.unsubscribe()
    // The partitioned holder cannot release through the blackhole: cut it off, and let its
    // session expire by its TTL (the agent is stopped at the end anyway).
    await proxy.close()
    const bounded = (p: Promise<void>) =>
      Promise.race([p.catch(() => undefined), sleep(5000)]).then(() => undefined)
    await Promise.all([bounded(holder.close()), bounded(filler.close()), bounded(waiter.close())])
    await partitioned.close()
    await direct.close()
  }
}
