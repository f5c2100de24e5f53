// Figure 2b, where a CLI's handover goes: the handover of table 2 (the holder's child's last
// timestamp R → the next holder's child's first S, at limit 1) split in three at the agent:
//   exit → release     R → the agent finished the holder's release write;
//   release → acquire  → the agent finished the write that gave the next holder the slot;
//   acquire → start    → S.
// The agent is one of its own, started with a debug log (every HTTP request, when it finished,
// its method, URL, client port and latency), so that the logging does not slow the other figures.
//
// Which request is which, from method and URL (the agent does not log a body or a status):
//   consul lock -n (limit 1: Go's Lock recipe): release = PUT <prefix>/.lock?release=<session>;
//     acquire = PUT <prefix>/.lock?acquire=<session> after it, of the session that releases next
//     (the next holder's; its rivals' attempts in the same moment fail).
//   rxsem run --leader (the same Lock recipe): release = PUT <prefix>/.lock?release=<session>;
//     acquire = PUT /v1/txn (a `lock` operation: the protocol writes no other transaction), the
//     first one after the release: the first attempt the agent applies once the key is free wins
//     and the later ones fail. It counts only when the release surely finished before it began,
//     and it before any other attempt began (a logged ms + 1 before the other's start, from its
//     latency); of attempts the log cannot order, the one sent on the connection of the next
//     release (a port is one process's: the next holder's). consul lock's acquisition is found
//     the same way at the end of a run, where no next releaser names it.
//   rxsem run --limit 1 (the semaphore): release = a PUT /v1/txn after R (at limit 1 no
//     one else writes `.lock` while the slot is held; a join is PUT <prefix>/<session>?acquire=).
//     When the release hands the slot to the first waiter, it is the acquiring write too: no
//     transaction follows before S. Otherwise the release CASes the holder out and the one other
//     transaction, which surely began after it, is the heir's acquisition; a read of `.lock`
//     between them could be the holder trying its CAS again, so such a pair is not split.
// An acquisition is looked for among the writes that ended after the release began: the agent
// logs a write when its handler returns, which under load can be after the waiters it woke were
// served (then release → acquire is negative). A handover that does not fit its implementation's
// pattern is counted as not split, with the reason, never guessed.
//
// The agent's times are wall-clock milliseconds, as the children's (`date +%s%N`), but to the ms
// only: each is taken as the middle of its millisecond. The three parts of a handover add up to
// its total exactly.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseGoDuration } from '../src/consul/durations.js'
import { startAgent, type ConsulAgent } from '../test/support/consul-agent.js'
import { consulLock, rxsemRunLeader, type CliImplementation } from './children.js'
import { cliHandovers, type Pace } from './handover.js'
import type { HandoverPair } from './pair-handovers.js'

/** One line `agent.http: Request finished: …` of the agent's debug log. */
export interface AgentRequest {
  /** When the agent finished it: wall-clock ms, the middle of the logged millisecond. */
  readonly at: number
  readonly method: string
  /** Path and query, as logged. */
  readonly url: string
  /** The client's address (host:port): one TCP connection. */
  readonly from: string
  readonly latencyMs: number
}

const REQUEST_LINE =
  /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) \[DEBUG\] +agent\.http: Request finished: method=(\S+) url=(\S+) from=(\S+) latency=(\S+)\s*$/

/** A Go duration as Go prints it (`371.172µs`, `1.5s`, `1m2.3s`) in ms; NaN when it is not one. */
export function goDurationMs(text: string): number {
  return parseGoDuration(text) ?? Number.NaN
}

/** The requests of a Consul debug log file (the format of Consul 1.8), in the log's order. */
export function parseAgentLog(text: string): AgentRequest[] {
  const out: AgentRequest[] = []
  for (const line of text.split('\n')) {
    const match = REQUEST_LINE.exec(line)
    if (!match) continue
    const [, time = '', method = '', url = '', from = '', latency = ''] = match
    out.push({
      at: Date.parse(time) + 0.5,
      method,
      url,
      from,
      latencyMs: goDurationMs(latency),
    })
  }
  return out
}

/** What a request does to a lock, as far as its method and URL tell. */
type RequestKind = 'release' | 'acquire' | 'txn' | 'lock-read'

function kindOf(request: AgentRequest): RequestKind | undefined {
  const [path = '', query = ''] = request.url.split('?', 2)
  const params = new URLSearchParams(query)
  if (request.method === 'PUT' && path === '/v1/txn') return 'txn'
  if (!path.startsWith('/v1/kv/') || !path.endsWith('/.lock')) return undefined
  if (request.method === 'PUT' && params.has('release')) return 'release'
  if (request.method === 'PUT' && params.has('acquire')) return 'acquire'
  if (request.method === 'GET' && !params.has('index')) return 'lock-read'
  return undefined
}

const sessionOf = (request: AgentRequest, param: 'acquire' | 'release'): string | null =>
  new URLSearchParams(request.url.split('?', 2)[1] ?? '').get(param)

/** Which requests release and acquire, per implementation (see the head of this file). */
export type Recipe = 'consul lock' | 'rxsem lock' | 'rxsem semaphore'

export function recipeOf(implementation: CliImplementation): Recipe {
  if (implementation === consulLock) return 'consul lock'
  return implementation === rxsemRunLeader ? 'rxsem lock' : 'rxsem semaphore'
}

/** One handover split in three, ms. */
export interface HandoverSplit {
  readonly exitToRelease: number
  readonly releaseToAcquire: number
  readonly acquireToStart: number
  readonly total: number
  /** The release was the acquiring write too (a semaphore's hand-off to the first waiter). */
  readonly oneWrite: boolean
}

/** The earliest `request` may have begun: its logged ms, less its latency. */
const began = (request: AgentRequest): number => request.at - 0.5 - request.latencyMs

/** Whether `a` surely finished before `b` began, at the log's millisecond resolution. */
const surelyBefore = (a: AgentRequest, b: AgentRequest): boolean => a.at + 0.5 <= began(b)

/** Whether `a` surely began before `b` did. */
const startedBefore = (a: AgentRequest, b: AgentRequest): boolean => began(a) + 1 <= began(b)

/**
 * Splits one handover (its child's R and S, wall-clock ms) with the agent's requests of its run.
 *
 * @param requests - The agent's requests, in the log's order.
 * @param pair - R and S of the handover.
 * @param recipe - Which requests release and acquire.
 * @returns The split, or why it could not be split.
 */
export function splitHandover(
  requests: readonly AgentRequest[],
  pair: HandoverPair,
  recipe: Recipe,
): HandoverSplit | { readonly unsplit: string } {
  const { release: exitAt, start: startAt } = pair
  // Requests that surely finished after R and may have finished before S.
  const window = requests.filter((r) => r.at > exitAt - 0.5 && r.at < startAt + 0.5)
  const releaseKind: RequestKind = recipe === 'rxsem semaphore' ? 'txn' : 'release'
  const acquireKind: RequestKind = recipe === 'consul lock' ? 'acquire' : 'txn'
  const releases = window.filter((r) => kindOf(r) === releaseKind)
  let release: AgentRequest | undefined
  let acquire: AgentRequest | undefined
  if (recipe === 'rxsem semaphore') {
    // One transaction: the release handed the slot over. Two: the holder's, then the heir's.
    const [one, other, extra] = releases
    if (extra !== undefined) return { unsplit: 'more transactions than a handover writes' }
    if (one === undefined) return { unsplit: 'no release write before the start' }
    if (other === undefined) [release, acquire] = [one, one]
    else {
      // The heir's was sent once the release was applied: it began after the release began.
      if (startedBefore(one, other)) [release, acquire] = [one, other]
      else if (startedBefore(other, one)) [release, acquire] = [other, one]
      else return { unsplit: 'two transactions the log cannot order' }
      const [from, to] = [began(release), acquire.at]
      if (window.some((r) => kindOf(r) === 'lock-read' && r.at > from && r.at < to))
        return { unsplit: 'a read of .lock between the two transactions' }
    }
  } else {
    const [only, second] = releases
    if (second !== undefined) return { unsplit: 'two releases' }
    if (only === undefined) return { unsplit: 'no release write before the start' }
    release = only
    // An acquisition is applied after the release was, so it ended after the release began; the
    // agent may log it before the release, whose handler can end later (under load, ms later).
    const since = began(release)
    const acquiring = window.filter((r) => kindOf(r) === acquireKind && r.at + 0.5 > since)
    // The next release after S is the next holder's: its session (consul lock names it in the
    // URL) or its connection (a port is one process's) tells which attempt was its own.
    const nextRelease = requests.find((r) => r.at > startAt && kindOf(r) === 'release')
    const heir = nextRelease && recipe === 'consul lock' && sessionOf(nextRelease, 'release')
    if (heir) acquire = acquiring.filter((r) => sessionOf(r, 'acquire') === heir).at(-1)
    else {
      // The attempts that may have been applied first: none surely came after another.
      const foremost = acquiring.filter((r) => !acquiring.some((o) => surelyBefore(o, r)))
      const own = foremost.filter((r) => r.from === nextRelease?.from)
      if (foremost.length > 1 && own.length !== 1)
        return { unsplit: 'two acquiring writes in the same millisecond' }
      acquire = foremost.length > 1 ? own[0] : foremost[0]
      if (acquire !== undefined && !surelyBefore(release, acquire))
        return { unsplit: 'an acquiring write in the same millisecond as the release' }
    }
    if (acquire === undefined) return { unsplit: 'no acquiring write before the start' }
  }
  return {
    exitToRelease: release.at - exitAt,
    releaseToAcquire: acquire.at - release.at,
    acquireToStart: startAt - acquire.at,
    total: startAt - exitAt,
    oneWrite: acquire === release,
  }
}

export interface AnatomyRun {
  readonly implementation: string
  readonly contenders: number
  readonly holdMs: number
  /** Handovers of the run (paired as in table 2). */
  readonly handovers: number
  readonly splits: readonly HandoverSplit[]
  /** Handovers not split, by reason. */
  readonly unsplit: Readonly<Record<string, number>>
}

/** The requests the agent logged in its log folder, in order. */
function readRequests(dir: string): AgentRequest[] {
  const files = readdirSync(dir)
    .filter((f) => f.startsWith('consul') && f.endsWith('.log'))
    .sort()
  return files.flatMap((f) => parseAgentLog(readFileSync(join(dir, f), 'utf8')))
}

/**
 * Runs `fn` with a Consul dev agent of its own that logs every HTTP request to a file, and stops
 * it and removes the folder after, whatever happens.
 */
export async function withLoggingAgent<T>(
  fn: (agent: ConsulAgent, requests: () => AgentRequest[]) => Promise<T>,
): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), 'rxsem-anatomy-'))
  let agent: ConsulAgent | undefined
  try {
    agent = await startAgent({
      args: ['-log-level=debug', `-log-file=${join(dir, 'consul.log')}`],
    })
    return await fn(agent, () => readRequests(dir))
  } finally {
    await agent?.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Table 2's handovers of one CLI at limit 1 on the logging agent, each split in three. */
export async function anatomyRun(
  agent: ConsulAgent,
  requests: () => AgentRequest[],
  implementation: CliImplementation,
  target: number,
  pace: Pace,
): Promise<AnatomyRun> {
  const from = Date.now()
  const run = await cliHandovers(implementation, agent.addr, 1, target, pace)
  const logged = requests().filter((r) => r.at >= from - 1)
  const splits: HandoverSplit[] = []
  const unsplit: Record<string, number> = {}
  for (const pair of run.pairs) {
    const split = splitHandover(logged, pair, recipeOf(implementation))
    if ('unsplit' in split) unsplit[split.unsplit] = (unsplit[split.unsplit] ?? 0) + 1
    else splits.push(split)
  }
  return {
    implementation: implementation.name,
    contenders: run.contenders,
    holdMs: run.holdMs,
    handovers: run.pairs.length,
    splits,
    unsplit,
  }
}
