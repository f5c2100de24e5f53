// The nemesis suite's driver: starts actors (this library in processes of its own, each behind its
// own fault proxy, and `consul lock -n` loops) on one prefix of real Consul servers, injects seeded
// faults for a while, heals everything, lets the actors run quietly, stops them, and hands the
// history to the checker (test/support/nemesis-history.ts) along with what Consul still holds.
//
// Reproducible as far as real processes allow: the seed fixes which faults come, in what order,
// to whom and for how long, and each actor's hold and rest times; the moments they land at depend
// on the machine.
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { setTimeout as sleep } from 'node:timers/promises'
import { consulBin, type ConsulAgent } from './consul-agent.js'
import { startFaultProxy, type FaultProxy } from './fault-proxy.js'
import {
  actorOf,
  check,
  type ActorEvent,
  type ActorKind,
  type Fault,
  type FaultKind,
  type Occupancy,
  type Report,
} from './nemesis-history.js'
import { holdersOf, listPrefix, lockBody, readLock, sessionsNamed } from './observe.js'
import { seededRandom } from './seeded-random.js'

const fixtures = join(import.meta.dirname, '../reliability/fixtures')

export interface NemesisConfig {
  /** Names the run in session names and the report. */
  readonly name: string
  readonly seed: number
  readonly prefix: string
  readonly limit: number
  /** The Consul servers; actor i talks to server i mod n. */
  readonly servers: readonly ConsulAgent[]
  /** The Raft leader now (a cluster), for leader failovers. */
  readonly leader?: () => Promise<ConsulAgent>
  readonly libraryActors: number
  readonly consulLockActors: number
  /**
   * What library actors do while they hold. 'counter-jobs': each library actor is a process that
   * runs `jobsPerActor` withSlot jobs at once, each a fenced CAS increment or three of the counter
   * (test/reliability/fixtures/nemesis-jobs-actor.ts); each job is a contender of the history.
   */
  readonly workload: 'tick' | 'counter-fenced' | 'counter-unfenced' | 'counter-jobs'
  /**
   * What each library actor takes, by its index ('tick' and the counters): 'slot' (one permit,
   * the default), 'permits:<k>', 'read' or 'write' (the read-write lock of `limit` readers).
   */
  readonly locks?: readonly string[]
  /** How many jobs each library actor runs at once ('counter-jobs'). */
  readonly jobsPerActor?: number
  /** The counter's key (outside the prefix), for the counter workloads. */
  readonly counterKey?: string
  /** At most this many actors under a fault at once (default: no limit). */
  readonly maxFaulted?: number
  /** How long a pause lasts, at least and at most (ms); default 2 to 20 s. */
  readonly pauseMs?: readonly [number, number]
  /** Faults to choose from, with their weights. */
  readonly faults: Readonly<Partial<Record<FaultKind, number>>>
  /** How long faults are injected. */
  readonly faultMs: number
  /** How long the actors run after everything healed, before they are stopped. */
  readonly quietMs: number
  /** Session TTL of the library actors (the fixture's) and of `consul lock` (Consul's default). */
  readonly ttlMs: Readonly<Record<ActorKind, number>>
}

export interface NemesisResult {
  readonly config: NemesisConfig
  readonly report: Report
  readonly events: readonly ActorEvent[]
  readonly faults: readonly Fault[]
  readonly startedAt: number
  readonly healedAt: number
  readonly endedAt: number
  /** Actors that did not hold once during the quiet time. */
  readonly unservedAfterHeal: readonly string[]
  /** What Consul held once the actors were stopped (and dead sessions had had time to go). */
  readonly leftover: {
    readonly sessions: number
    readonly keys: readonly string[]
    readonly lockHolders: readonly string[]
  }
  /** Lines an actor wrote that were not events (errors), with who wrote them. */
  readonly complaints: readonly string[]
  /** The counter's value at the end (counter workloads). */
  readonly counterValue: number | undefined
  /** What Consul said over the run (.lock's holders, the contender keys), for reading a failure. */
  readonly samples: readonly NemesisSample[]
  /** Each library actor's requests as its fault proxy saw them, for reading a failure. */
  readonly requests: Readonly<Record<string, readonly { at: number; what: string }[]>>
}

/**
 * One look at the prefix: the holders .lock lists whose sessions are alive (undefined: Consul could
 * not be read), .lock's holders, and the contender keys (session ids, 8 characters).
 */
export interface NemesisSample extends Occupancy {
  readonly holders: readonly string[]
  readonly keys: readonly string[]
}

interface Actor {
  readonly who: string
  readonly kind: ActorKind
  readonly index: number
  readonly seed: number
  readonly proxy: FaultProxy | undefined
  process: ChildProcess | undefined
  exited: Promise<void>
  /** A fault on this actor is in progress (the nemesis picks another). */
  faulted: boolean
  /** How many times it was started: with the seed, the seed of its next process. */
  starts: number
  /** The jobs its current process has named (`<who>/<start>.<job>`), 'counter-jobs'. */
  jobs: Set<string>
}

/**
 * How long after a state-losing restart begins a moment over the limit that only `consul lock`
 * actors put over it is counted apart: the restart itself (a few seconds), and `consul lock`'s
 * monitor, which rides out an unreachable agent with retries before it stops its child.
 */
const LOSS_WINDOW_MS = 15_000

/** Runs one seeded nemesis run; see the file's comment. */
export async function runNemesis(config: NemesisConfig): Promise<NemesisResult> {
  const random = seededRandom(config.seed)
  const between = (lo: number, hi: number): number => lo + Math.floor(random() * (hi - lo))
  const events: ActorEvent[] = []
  const faults: Fault[] = []
  const complaints: string[] = []
  const sessionName = `nemesis ${config.name} ${config.seed}`
  const server = (i: number): ConsulAgent => {
    const s = config.servers[i % config.servers.length]
    if (!s) throw new Error('no servers')
    return s
  }

  const actors: Actor[] = []
  for (let i = 0; i < config.libraryActors; i++) {
    actors.push({
      who: `lib${i}`,
      kind: 'library',
      index: i,
      seed: between(1, 2 ** 31),
      proxy: await startFaultProxy(server(i).addr),
      process: undefined,
      exited: Promise.resolve(),
      faulted: false,
      starts: 0,
      jobs: new Set(),
    })
  }
  for (let i = 0; i < config.consulLockActors; i++) {
    actors.push({
      who: `go${i}`,
      kind: 'consul-lock',
      index: i,
      seed: between(1, 32767),
      proxy: undefined,
      process: undefined,
      exited: Promise.resolve(),
      faulted: false,
      starts: 0,
      jobs: new Set(),
    })
  }

  const start = (actor: Actor): void => {
    const child =
      actor.kind === 'library' && config.workload === 'counter-jobs'
        ? spawn(
            process.execPath,
            [
              '--import',
              'tsx',
              join(fixtures, 'nemesis-jobs-actor.ts'),
              actor.proxy?.addr ?? '',
              config.prefix,
              String(config.limit),
              sessionName,
              String(actor.seed + 7919 * actor.starts),
              config.counterKey ?? '',
              String(config.jobsPerActor ?? 1),
            ],
            { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
          )
        : actor.kind === 'library'
          ? spawn(
              process.execPath,
              [
                '--import',
                'tsx',
                join(fixtures, 'nemesis-actor.ts'),
                actor.proxy?.addr ?? '',
                config.prefix,
                String(config.limit),
                sessionName,
                String(actor.seed + 7919 * actor.starts),
                config.workload,
                ...(config.counterKey === undefined ? [] : [config.counterKey]),
              ],
              {
                stdio: ['ignore', 'pipe', 'pipe'],
                detached: true,
                env: { ...process.env, NEMESIS_LOCK: config.locks?.[actor.index] ?? 'slot' },
              },
            )
          : spawn(
              'bash',
              [
                join(fixtures, 'nemesis-consul-lock.sh'),
                consulBin(),
                server(actor.index + 1).addr,
                config.prefix,
                String(config.limit),
                sessionName,
                String((actor.seed + 7919 * actor.starts) % 32768),
              ],
              { stdio: ['ignore', 'pipe', 'pipe'], detached: true },
            )
    actor.process = child
    const run = actor.starts++
    actor.jobs = new Set()
    actor.exited = new Promise((done) => child.once('exit', () => done()))
    createInterface({ input: child.stdout }).on('line', (line) => {
      try {
        const { job, ...parsed } = JSON.parse(line) as Omit<ActorEvent, 'who' | 'kind'> & {
          message?: string
          job?: string
        }
        // A job of a process: a contender of its own, named apart from those of earlier processes.
        const who = job === undefined ? actor.who : `${actor.who}/${run}.${job}`
        if (job !== undefined) actor.jobs.add(who)
        if (parsed.e === ('error' as string)) complaints.push(`${who}: ${parsed.message}`)
        else events.push({ ...parsed, who, kind: actor.kind })
      } catch {
        complaints.push(`${actor.who}: ${line}`)
      }
    })
    createInterface({ input: child.stderr }).on('line', (line) =>
      complaints.push(`${actor.who} (stderr): ${line}`),
    )
  }

  const signalGroup = (actor: Actor, signal: NodeJS.Signals): void => {
    const pid = actor.process?.pid
    if (pid === undefined) return
    try {
      process.kill(-pid, signal)
    } catch {
      // The group is gone.
    }
  }

  const pending = new Set<Promise<unknown>>()
  const healing = new AbortController()
  /** Runs `heal` after `ms`, or at once when the run heals everything. */
  const later = (ms: number, heal: () => Promise<void> | void): void => {
    const done = sleep(ms, undefined, { signal: healing.signal })
      .catch(() => undefined)
      .then(heal)
    pending.add(done)
    // A failed heal (a server that does not come back) fails the run where `pending` is awaited.
    done.finally(() => pending.delete(done)).catch(() => undefined)
  }
  const timed = (
    kind: FaultKind,
    actor: Actor | undefined,
    ms: number,
    begin: () => Promise<void> | void,
    end: () => Promise<void> | void,
    detail?: string,
  ): Promise<void> => {
    const from = Date.now()
    if (actor) actor.faulted = true
    const heal = async (): Promise<void> => {
      await end()
      if (actor) actor.faulted = false
      faults.push({
        kind,
        ...(actor ? { who: actor.who } : {}),
        from,
        to: Date.now(),
        ...(detail ? { detail } : {}),
      })
    }
    return Promise.resolve(begin()).then(() => later(ms, heal))
  }

  /** A server that knows a leader now; throws when none does. */
  const answeringServer = async (): Promise<ConsulAgent> => {
    for (const s of config.servers) {
      try {
        const res = await fetch(`${s.url}/v1/status/leader`)
        if (res.ok && ((await res.json()) as string) !== '') return s
      } catch {
        // down: try the next
      }
    }
    throw new Error('no Consul server answers with a leader')
  }
  /** A server that knows a leader, once one does. */
  const liveServer = async (): Promise<ConsulAgent> => {
    for (;;) {
      try {
        return await answeringServer()
      } catch {
        await sleep(200)
      }
    }
  }

  const inject = async (kind: FaultKind): Promise<boolean> => {
    const busy = actors.filter((a) => a.faulted).length >= (config.maxFaulted ?? Infinity)
    const free = busy ? [] : actors.filter((a) => !a.faulted)
    const libraryFree = free.filter((a) => a.kind === 'library')
    // Prefer an actor that holds right now (one of its jobs does): faults matter most to holders.
    const lastLines = new Map<string, ActorEvent['e']>()
    for (const e of events) {
      if (e.e !== 'act' && e.e !== 'inc' && e.e !== 'seen' && e.e !== 'conflict')
        lastLines.set(e.who, e.e)
    }
    const holdingNow = (list: Actor[]): Actor[] =>
      list.filter((a) =>
        [...lastLines].some(([who, last]) => actorOf(who) === a.who && last === 'hold'),
      )
    const pick = (list: Actor[]): Actor | undefined => {
      const holders = holdingNow(list)
      const from = holders.length > 0 && random() < 0.7 ? holders : list
      return from[Math.floor(random() * from.length)]
    }
    const anyLibraryFaulted = actors.some((a) => a.kind === 'library' && a.faulted)
    switch (kind) {
      case 'kill': {
        const actor = pick(free)
        if (!actor) return false
        const down = between(500, 3000)
        await timed(
          'kill',
          actor,
          down,
          () => {
            signalGroup(actor, 'SIGKILL')
            const at = Date.now()
            for (const who of [actor.who, ...actor.jobs])
              events.push({ who, kind: actor.kind, e: 'killed', at })
          },
          async () => {
            await actor.exited
            start(actor)
          },
          `SIGKILL, restarted after ${down} ms`,
        )
        return true
      }
      case 'pause': {
        const actor = pick(libraryFree)
        if (!actor) return false
        const ms = between(...(config.pauseMs ?? [2000, 20_000]))
        await timed(
          'pause',
          actor,
          ms,
          () => signalGroup(actor, 'SIGSTOP'),
          () => signalGroup(actor, 'SIGCONT'),
          `SIGSTOP for ${ms} ms`,
        )
        return true
      }
      case 'blackhole': {
        const actor = pick(libraryFree)
        if (!actor?.proxy) return false
        const proxy = actor.proxy
        const ms = between(5000, 20_000)
        await timed(
          'blackhole',
          actor,
          ms,
          () => proxy.setMode('blackhole'),
          () => proxy.setMode('pass'),
          `blackholed for ${ms} ms`,
        )
        return true
      }
      case 'slow': {
        const actor = pick(libraryFree)
        if (!actor?.proxy) return false
        const proxy = actor.proxy
        const ms = between(3000, 15_000)
        const latencyMs = between(500, 6000)
        await timed(
          'slow',
          actor,
          ms,
          () => proxy.setMode({ latencyMs }),
          () => proxy.setMode('pass'),
          `every request delayed ${latencyMs} ms, for ${ms} ms`,
        )
        return true
      }
      case 'agent-restart': {
        const target = config.servers[Math.floor(random() * config.servers.length)]
        if (!target) return false
        const from = Date.now()
        await target.restart()
        faults.push({ kind, from, to: Date.now(), detail: `${target.node} stopped and started` })
        return true
      }
      case 'state-loss': {
        // Consul forgets every session at once, with no TTL to wait out: a holder learns of it
        // only by hearing the agent, so none may be frozen, cut off or slowed then (docs/safety.md).
        if (anyLibraryFaulted || config.servers.length !== 1) return false
        const target = config.servers[0]
        if (!target) return false
        const from = Date.now()
        let stoppedAt = from
        await target.restart({ wipe: true, onStopped: () => (stoppedAt = Date.now()) })
        faults.push({
          kind,
          from,
          to: Date.now(),
          stoppedAt,
          detail: `${target.node} stopped, its data emptied, and started`,
        })
        return true
      }
      case 'leader-failover': {
        if (!config.leader) return false
        const leader = await config.leader()
        const ms = between(2000, 8000)
        await timed(
          'leader-failover',
          undefined,
          ms,
          () => leader.kill(),
          () => leader.restart(),
          `leader ${leader.node} killed, back after ${ms} ms`,
        )
        return true
      }
      case 'delete-lock':
      case 'delete-prefix': {
        // An operator's edit admits a newcomer before a holder that cannot hear (frozen, cut off)
        // has seen it: what no lease can fence (docs/safety.md). Not combined with such faults.
        if (anyLibraryFaulted) return false
        const s = await liveServer()
        const path = kind === 'delete-lock' ? `${config.prefix}/.lock` : `${config.prefix}?recurse`
        const from = Date.now()
        const res = await fetch(`${s.url}/v1/kv/${path}`, { method: 'DELETE' })
        await res.text()
        faults.push({ kind, from, to: from, detail: `DELETE ${path}` })
        return true
      }
    }
  }

  // What Consul says, sampled every 100 ms: who .lock lists, which contender keys exist, and how
  // many of the listed holders' sessions are alive (the slots really taken), when it changes.
  const samples: NemesisSample[] = []
  const sampling = new AbortController()
  const sampler = (async () => {
    let last = ''
    while (!sampling.signal.aborted) {
      let sample: Omit<NemesisSample, 'at'>
      try {
        // One pass over the servers: while none answers, no slot counts as free.
        const s = await answeringServer()
        const [entries, sessions] = await Promise.all([
          listPrefix(s.url, config.prefix),
          fetch(`${s.url}/v1/session/list`).then(async (r) => {
            if (!r.ok) throw new Error(`session list: ${r.status}`)
            return new Set(((await r.json()) as { ID: string }[]).map((x) => x.ID))
          }),
        ])
        const lock = entries.find((e) => e.Key === `${config.prefix}/.lock`)
        const holders = lock ? holdersOf(lockBody(lock)) : []
        sample = {
          taken: holders.filter((h) => sessions.has(h)).length,
          holders,
          keys: entries
            .filter((e) => e.Key !== `${config.prefix}/.lock`)
            .map(
              (e) =>
                `${e.Key.slice(config.prefix.length + 1, config.prefix.length + 9)}${e.Session ? '' : '(free)'}` +
                `${e.Value ? `@${Buffer.from(e.Value, 'base64').toString('utf8').split(':').at(-1) ?? ''}` : ''}` +
                `#${e.Flags}`,
            ),
        }
      } catch {
        sample = { taken: undefined, holders: [], keys: [] }
      }
      const text = JSON.stringify(sample)
      if (text !== last) samples.push({ at: Date.now(), ...sample })
      last = text
      await sleep(100, undefined, { signal: sampling.signal }).catch(() => undefined)
    }
  })()

  const startedAt = Date.now()
  actors.forEach(start)
  const weighted = Object.entries(config.faults).flatMap(([kind, weight]) =>
    Array.from({ length: weight ?? 0 }, () => kind as FaultKind),
  )
  const faultsUntil = startedAt + config.faultMs
  // Let every actor start and take a first turn before the first fault.
  await sleep(3000)
  // Every kind once first, in a seeded order, so that a short run still has each of them.
  const firstRound = Object.keys(config.faults)
    .map((kind) => ({ kind: kind as FaultKind, order: random() }))
    .sort((a, b) => a.order - b.order)
    .map((x) => x.kind)
  while (Date.now() < faultsUntil) {
    const first = firstRound.shift()
    const kind = first ?? weighted[Math.floor(random() * weighted.length)]
    if (kind === undefined) break
    if (await inject(kind)) {
      await sleep(between(1500, 4000))
    } else {
      // Nobody to inflict it on right now (all busy with faults): try again shortly.
      if (first) firstRound.push(first)
      await sleep(300)
    }
  }
  // Heal everything still broken, then let the actors run quietly.
  healing.abort()
  await Promise.all([...pending])
  for (const s of config.servers) await s.ready(60_000)
  const healedAt = Date.now()
  await sleep(config.quietMs)
  const unservedAfterHeal = actors
    .filter(
      (a) => !events.some((e) => actorOf(e.who) === a.who && e.e === 'hold' && e.at > healedAt),
    )
    .map((a) => a.who)

  // Stop: SIGTERM to each group (each library actor releases; each `consul lock` releases).
  for (const actor of actors) signalGroup(actor, 'SIGTERM')
  const stopped = await Promise.race([
    Promise.all(actors.map((a) => a.exited)).then(() => true),
    sleep(30_000).then(() => false),
  ])
  if (!stopped) complaints.push('some actors did not stop within 30 s of SIGTERM: killed')
  for (const actor of actors) signalGroup(actor, 'SIGKILL')
  await Promise.all(actors.map((a) => a.exited))
  const endedAt = Date.now()
  sampling.abort()
  await sampler
  const requests = Object.fromEntries(
    actors.map((a) => [
      a.who,
      (a.proxy?.requests() ?? []).map((r) => ({
        at: r.at,
        what: `${r.method} ${r.path.replace(`/v1/kv/${config.prefix}`, '<p>')}?${r.query} -> ${r.answer?.status ?? '?'} ${r.answer?.body ?? ''}`,
      })),
    ]),
  )
  await Promise.all(actors.flatMap((a) => (a.proxy ? [a.proxy.close()] : [])))

  // What Consul still holds, once dead sessions had their 2 × TTL to go.
  const s = await liveServer()
  const leftoverNow = async () => {
    const sessions = (await sessionsNamed(s.url, sessionName)).length
    const keys = (await listPrefix(s.url, config.prefix))
      .map((e) => e.Key)
      .filter((k) => k !== `${config.prefix}/.lock`)
    const lock = await readLock(s.url, config.prefix)
    return { sessions, keys, lockHolders: lock ? holdersOf(lock.body) : [] }
  }
  let leftover = await leftoverNow()
  const deadline =
    Date.now() + 2 * Math.max(config.ttlMs.library, config.ttlMs['consul-lock']) + 5000
  while (
    (leftover.sessions > 0 || leftover.keys.length > 0 || leftover.lockHolders.length > 0) &&
    Date.now() < deadline
  ) {
    await sleep(500)
    leftover = await leftoverNow()
  }
  let counterValue: number | undefined
  if (config.counterKey !== undefined) {
    const res = await fetch(`${s.url}/v1/kv/${config.counterKey}?raw`)
    const text = res.ok ? await res.text() : '0'
    // A number, or the jobs workload's JSON ({ n, token, writer }).
    counterValue = text.startsWith('{') ? (JSON.parse(text) as { n: number }).n : Number(text)
    await (await fetch(`${s.url}/v1/kv/${config.counterKey}`, { method: 'DELETE' })).text()
  }
  await (await fetch(`${s.url}/v1/kv/${config.prefix}?recurse`, { method: 'DELETE' })).text()

  const report = check(
    events,
    samples,
    faults,
    {
      limit: config.limit,
      gapMs: 500,
      longWaitMs: 2 * config.ttlMs.library,
      editWindowMs: 1000,
      lossWindowMs: LOSS_WINDOW_MS,
    },
    endedAt,
  )
  return {
    config,
    report,
    events,
    faults: faults.sort((a, b) => a.from - b.from),
    startedAt,
    healedAt,
    endedAt,
    unservedAfterHeal,
    leftover,
    complaints,
    counterValue,
    samples,
    requests,
  }
}

/**
 * How long each wait of one kind of actor lasted (ms, shortest first), of the waits that no fault
 * on the waiter touched and that ended with a slot.
 */
export function servedWaits(report: Report, kind: ActorKind): number[] {
  return report.waits
    .filter((w) => w.kind === kind && !w.faulted && !w.unserved)
    .map((w) => w.to - w.from)
    .sort((x, y) => x - y)
}

/** Acquisitions of one kind of actor per second that its actors spent free of faults. */
export function acquisitionRate(report: Report, kind: ActorKind): number {
  const a = report.acquisitions[kind]
  return a.healthySeconds > 0 ? a.tenures / a.healthySeconds : 0
}

/** One paragraph a person can read: the seed, the faults, and every violation with its moment. */
export function describeRun(result: NemesisResult): string {
  const { config, report } = result
  const t = (at: number): string => `${((at - result.startedAt) / 1000).toFixed(2)} s`
  const faultCounts = new Map<string, number>()
  for (const f of result.faults) faultCounts.set(f.kind, (faultCounts.get(f.kind) ?? 0) + 1)
  const perActor = (kind: ActorKind) => {
    const a = report.acquisitions[kind]
    const waits = servedWaits(report, kind)
    return a.actors === 0
      ? '-'
      : `${a.tenures} by ${a.actors} (${(a.tenures / a.actors).toFixed(1)} each, ` +
          `${acquisitionRate(report, kind).toFixed(2)} per healthy actor-second, ` +
          `median wait ${waits[Math.floor(waits.length / 2)] ?? 0} ms)`
  }
  const longest = servedWaits(report, 'library').at(-1) ?? 0
  const lines = [
    `nemesis ${config.name}: seed ${config.seed}, limit ${config.limit}, ${config.libraryActors} library + ` +
      `${config.consulLockActors} consul lock actors${config.locks ? ` (library: ${config.locks.join(', ')})` : ''}, ` +
      `${config.servers.length} server(s), workload ${config.workload}, ` +
      `${((result.endedAt - result.startedAt) / 1000).toFixed(0)} s (faults for ${(config.faultMs / 1000).toFixed(0)} s)`,
    `  faults: ${result.faults.length} (${[...faultCounts].map(([k, n]) => `${k} ${n}`).join(', ')})`,
    `  most slots acted under at once: ${report.maxActing} (limit ${config.limit}); moments over the limit: ${report.crowds.length}, ` +
      `within 1 s of an operator's delete: ${report.editWindows.length}, by consul lock after a state loss: ${report.lossWindows.length}`,
    `  acquisitions: library ${perActor('library')}; consul lock ${perActor('consul-lock')}`,
    `  longest library wait without a fault on the waiter: ${(longest / 1000).toFixed(1)} s; ` +
      `long waits while slots were free (counted from a fault's end for a waiter it hit): ${report.longWaits.length}`,
    `  token violations: ${report.tokenViolations.length}; unserved after healing: ${result.unservedAfterHeal.join(', ') || 'none'}`,
    `  left in Consul: ${result.leftover.sessions} sessions, ${result.leftover.keys.length} keys, ` +
      `${result.leftover.lockHolders.length} holders in .lock`,
  ]
  if (config.counterKey !== undefined) {
    lines.push(
      `  counter: ${report.counter.acknowledged} writes acknowledged, final value ${result.counterValue}, ` +
        `lost updates ${report.counter.lost}, CAS conflicts under a holding fence ${report.counter.conflicts}`,
    )
  }
  const labelled = [
    ...report.crowds.map((c) => ({ c, label: 'VIOLATION' })),
    ...report.editWindows.map((c) => ({ c, label: "OVER THE LIMIT after an operator's delete" })),
    ...report.lossWindows.map((c) => ({
      c,
      label: 'OVER THE LIMIT by consul lock after a state loss',
    })),
  ]
  for (const { c, label } of labelled) {
    const near = result.faults.filter((f) => f.from <= c.to + 1000 && f.to >= c.from - 30_000)
    lines.push(
      `  ${label} at ${t(c.from)}..${t(c.to)}: ${c.actors.length} acting (${c.actors.join(', ')}); ` +
        `faults around it: ${near.map((f) => `${f.kind} ${f.who ?? ''} ${t(f.from)}..${t(f.to)}`).join('; ') || 'none'}`,
    )
  }
  for (const w of report.longWaits) {
    const since = w.healedAt ?? w.from
    const free = w.healedAt === undefined ? w.freeMs : (w.freeAfterHealMs ?? 0)
    lines.push(
      `  LONG WAIT (${w.kind}) ${w.who} from ${t(w.from)} for ${((w.to - w.from) / 1000).toFixed(1)} s` +
        `${w.healedAt === undefined ? '' : `, ${((w.to - since) / 1000).toFixed(1)} s of it after its faults healed at ${t(since)}`}, ` +
        `slots free ${((free / Math.max(1, w.to - since)) * 100).toFixed(0)} % of that`,
    )
  }
  for (const v of report.tokenViolations) lines.push(`  TOKEN ${v}`)
  for (const c of result.complaints.slice(0, 20)) lines.push(`  said: ${c}`)
  return lines.join('\n')
}
