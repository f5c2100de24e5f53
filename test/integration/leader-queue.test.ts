// The leader lock's queue end to end against a real Consul agent: this library's waiters queue by
// arrival under <prefix>/.queue/, only the first in line tries the key, each waiter sleeps on the
// key ahead, and `consul lock` processes share the key with them as they always did. Each of our
// contenders has a client of its own behind a proxy of its own: a process of its own as Consul
// sees it, its requests counted.
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { firstValueFrom, filter } from 'rxjs'
import {
  createConsulClient,
  leaderElection,
  type Leader,
  type LeaderElection,
  type LeaderElectionState,
} from '../../src/index.js'
import { agentSuite } from '../support/agent-suite.js'
import { intervalsIn, startCli } from '../support/cli.js'
import { consulBin } from '../support/consul-agent.js'
import { startFaultProxy, type FaultProxy, type SeenRequest } from '../support/fault-proxy.js'
import {
  LOCK_FLAGS,
  destroyRawSession,
  eventually,
  listPrefix,
  sessionsNamed,
  sleep,
  type RawEntry,
} from '../support/observe.js'
import { SUITE_TIMEOUT_MS, killTree } from '../support/processes.js'
import { SafetyRecorder } from '../support/safety-recorder.js'
import { closing, keep, killing, onEnd, testPrefix, type Scope } from '../support/tracked.js'

/** The flags of a waiter key: the lock's plus one. */
const WAITER_FLAGS = String(BigInt(LOCK_FLAGS) + 1n)

/** One of our contenders, in a "process" of its own: its proxy, client and election. */
interface Contender {
  readonly who: string
  readonly proxy: FaultProxy
  readonly election: LeaderElection
  /** Its latest state. */
  readonly last: () => LeaderElectionState | undefined
  /** Its latest leader$ value. */
  readonly leader: () => Leader | null | undefined
}

describe('the leader lock’s queue', { timeout: SUITE_TIMEOUT_MS }, () => {
  let scratch: string
  const children = new Set<ChildProcess>()
  before(() => {
    scratch = mkdtempSync(join(tmpdir(), 'rxsem-leader-queue-'))
  })
  // Registered above agentSuite(), so it runs before the agent stops.
  after(async () => {
    for (const child of children)
      if (child.exitCode === null && child.pid) killTree(child.pid, 'SIGKILL')
    await Promise.all([...children].map(exited))
    rmSync(scratch, { recursive: true, force: true })
  })
  const agent = agentSuite()

  /**
   * One of our contenders with a client and proxy of its own. `follow`: subscribe its leader$ too
   * (a long poll of the whole prefix of its own, so not where requests are counted).
   */
  async function contender(
    t: Scope,
    prefix: string,
    who: string,
    follow = false,
  ): Promise<Contender> {
    const proxy = closing(t, await startFaultProxy(agent.addr))
    const client = closing(t, createConsulClient({ address: proxy.addr, env: {} }))
    const election = closing(
      t,
      leaderElection({ prefix, value: who, consul: client, sessionName: `queue ${prefix}` }),
    )
    let last: LeaderElectionState | undefined
    let leader: Leader | null | undefined
    keep(
      t,
      election.state$.subscribe((state) => (last = state)),
    )
    if (follow) {
      keep(
        t,
        election.leader$.subscribe((seen) => (leader = seen)),
      )
    }
    return { who, proxy, election, last: () => last, leader: () => leader }
  }

  const waiterKeys = async (prefix: string): Promise<RawEntry[]> =>
    (await listPrefix(agent.url, prefix))
      .filter((e) => e.Key.startsWith(`${prefix}/.queue/`))
      .sort((a, b) => a.CreateIndex - b.CreateIndex)
  const lockOf = async (prefix: string): Promise<RawEntry | undefined> =>
    (await listPrefix(agent.url, prefix)).find((e) => e.Key === `${prefix}/.lock`)
  const leads = (c: Contender) => eventually(`${c.who} leads`, () => c.last()?.holding || undefined)
  /** Waits until `c`'s waiter key is in line, locked by its session. */
  const inLine = (prefix: string, c: Contender) =>
    eventually(`${c.who} in line`, async () => {
      const session = c.last()?.session
      if (session === undefined) return undefined
      const key = (await waiterKeys(prefix)).find((e) => e.Key === `${prefix}/.queue/${session}`)
      return key?.Session === session && key.Flags === WAITER_FLAGS ? key : undefined
    })
  /** Waits until `c` has a long poll out whose path names `path` (its watch target). */
  const polling = (c: Contender, what: string, test: (r: SeenRequest) => boolean) =>
    eventually(
      `${c.who} long-polls ${what}`,
      () => c.proxy.inFlightRequests().some((r) => r.method === 'GET' && test(r)) || undefined,
    )
  /** What `c` sent since its counts were reset, renewals left out (they come every TTL/2). */
  const sent = (c: Contender) =>
    c.proxy
      .requests()
      .filter((r) => !r.path.startsWith('/v1/session/renew'))
      .map((r) => `${r.method} ${r.path}`)

  it('wakes one waiter per release, which alone tries the key, and leads in arrival order', async (t) => {
    const prefix = testPrefix(t, agent.url, 'queue-herd')
    const all = await lineUp(t, prefix, ['a0', 'a1', 'a2', 'a3', 'a4'])
    const order: string[] = ['a0']
    for (let turn = 1; turn < all.length; turn++) {
      const [leader, next, ...behind] = all.slice(turn - 1)
      assert.ok(leader && next)
      // Everyone asleep: the next in line on .lock, each one behind on the key ahead.
      await polling(next, '.lock', (r) => r.path === `/v1/kv/${prefix}/.lock`)
      for (const c of behind) await polling(c, 'the key ahead', (r) => r.path.includes('/.queue/'))
      for (const c of all) c.proxy.resetCounts()
      await leader.election.close()
      await leads(next)
      order.push(next.who)
      // The next one moved up: it long-polls .lock (or leads), and the one behind it the key ahead.
      const [second, ...rest] = behind
      if (second !== undefined) {
        await polling(second, '.lock', (r) => r.path === `/v1/kv/${prefix}/.lock`)
      }
      const txns = all.map((c) => sent(c).filter((r) => r === 'PUT /v1/txn').length)
      assert.deepEqual(
        txns,
        all.map((c) => (c === next ? 1 : 0)),
        `one lock attempt, by the first in line: ${JSON.stringify(all.map(sent))}`,
      )
      // Those further back did not even wake: their key ahead did not change.
      for (const c of rest) assert.deepEqual(sent(c), [], `${c.who} slept`)
    }
    assert.deepEqual(order, ['a0', 'a1', 'a2', 'a3', 'a4'])
    await all.at(-1)?.election.close()
    assert.deepEqual(await waiterKeys(prefix), [], 'no waiter key left')
    assert.deepEqual(await sessionsNamed(agent.url, `queue ${prefix}`), [])
  })

  /**
   * Runs `consul lock <prefix> <command>` with a command that appends `start <ms>` and `end <ms>`
   * to `log` around a sleep of `seconds`.
   */
  function consulLock(t: Scope, prefix: string, log: string, seconds: number): ChildProcess {
    const command = `echo start $(date +%s%3N) >> ${log}; sleep ${seconds}; echo end $(date +%s%3N) >> ${log}`
    const child = spawn(consulBin(), ['lock', `-http-addr=${agent.addr}`, prefix, command], {
      env: { ...process.env, SHELL: '/bin/sh' },
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    children.add(child)
    return killing(t, child)
  }

  /** Our contender leads once for `ms`, its holding recorded, then closes. */
  async function leadOnce(
    t: Scope,
    c: Contender,
    recorder: SafetyRecorder,
    ms: number,
  ): Promise<void> {
    keep(
      t,
      c.election.holding$.subscribe((holding) => recorder.record(c.who, holding)),
    )
    await firstValueFrom(c.election.holding$.pipe(filter(Boolean)))
    await sleep(ms)
    await c.election.close()
  }

  /**
   * The end of a run shared with `consul lock` children (`locks`, each logging its tenures to the
   * log of the same place in `logs`, as go0, go1…): every child exited 0, the tenures of ours
   * (recorded) and of Go's add up to `tenures`, never two at once, and no waiter key is left.
   */
  async function ledOneAtATime(
    prefix: string,
    recorder: SafetyRecorder,
    locks: readonly ChildProcess[],
    logs: readonly string[],
    tenures: number,
  ): Promise<void> {
    assert.deepEqual(
      await Promise.all(locks.map(exited)),
      locks.map(() => 0),
    )
    for (const [i, log] of logs.entries()) {
      for (const interval of intervalsIn(log, `go${i}`)) recorder.addInterval(interval)
    }
    const intervals = recorder.intervals()
    assert.equal(intervals.length, tenures, JSON.stringify(intervals))
    assert.equal(recorder.maxConcurrent(), 1, JSON.stringify(intervals))
    assert.deepEqual(await waiterKeys(prefix), [], 'no waiter key left')
  }

  /**
   * Contenders named `names`, started one at a time so that the arrival order is theirs: the
   * first leads, and each other is in line before the next one starts.
   */
  async function lineUp(t: Scope, prefix: string, names: readonly string[]): Promise<Contender[]> {
    const line: Contender[] = []
    for (const who of names) {
      const c = await contender(t, prefix, who)
      await (line.length === 0 ? leads(c) : inLine(prefix, c))
      line.push(c)
    }
    return line
  }

  /** A `consul lock` child that holds the key now (its log says so), and the session on it. */
  const goHolds = (prefix: string, log: string) =>
    eventually(
      `consul lock leads (${log})`,
      async () => {
        const lock = await lockOf(prefix)
        return existsSync(log) && lock?.Session !== undefined ? lock.Session : undefined
      },
      60_000,
    )

  it('shares the key with `consul lock` first in line: one leader at a time, all lead, leader$ names Go’s', async (t) => {
    const prefix = testPrefix(t, agent.url, 'queue-go-first')
    const recorder = new SafetyRecorder(1)
    const logs = [0, 1].map((i) => join(scratch, `go-first-${i}.log`))
    const [goLog] = logs
    assert.ok(goLog)
    const locks = [consulLock(t, prefix, goLog, 1.5)]
    const goSession = await goHolds(prefix, goLog)
    locks.push(consulLock(t, prefix, logs[1] ?? '', 0.3))
    const ours = await Promise.all(['b0', 'b1', 'b2'].map((who) => contender(t, prefix, who, true)))
    for (const c of ours) await inLine(prefix, c)
    await eventually(
      'leader$ names the Go leader',
      () =>
        ours.every((c) => c.leader()?.session === goSession && c.leader()?.value === null) ||
        undefined,
    )
    await Promise.all(ours.map((c) => leadOnce(t, c, recorder, 300)))
    await ledOneAtATime(prefix, recorder, locks, logs, 5)
  })

  it('shares the key with `consul lock` waiters behind and beside ours first in line: one leader at a time, all lead', async (t) => {
    const prefix = testPrefix(t, agent.url, 'queue-ours-first')
    const recorder = new SafetyRecorder(1)
    const ours = await lineUp(t, prefix, ['c0', 'c1', 'c2'])
    const logs = [0, 1, 2].map((i) => join(scratch, `ours-first-${i}.log`))
    const locks = logs.map((log) => consulLock(t, prefix, log, 0.3))
    // The Go waiters are in: their sessions exist (named after their command, which names the log).
    await eventually(
      'three consul lock sessions',
      async () => {
        const sessions = await sessionsNamed(agent.url, 'Consul lock for')
        return logs.every((log) => sessions.some((s) => s.Name.includes(log))) || undefined
      },
      60_000,
    )
    await Promise.all(ours.map((c) => leadOnce(t, c, recorder, 300)))
    await ledOneAtATime(prefix, recorder, locks, logs, 6)
  })

  it('skips a dead waiter in the middle of the line: the one behind takes its place, leads in turn, and removes its key', async (t) => {
    const prefix = testPrefix(t, agent.url, 'queue-dead')
    const [leader, d1, d2, d3] = (await lineUp(t, prefix, ['d0', 'd1', 'd2', 'd3'])) as [
      Contender,
      Contender,
      Contender,
      Contender,
    ]
    await polling(d3, 'd2’s key', (r) => r.path.endsWith(`/.queue/${d2.last()?.session ?? ''}`))
    const dead = d2.last()?.session
    assert.ok(dead)
    // d2's process dies with its session: its traffic is cut (as a killed process sends nothing),
    // and its session ends (as Consul ends it at its TTL). Its key stays, with no session.
    d2.proxy.setMode('blackhole')
    // Its traffic flows again before it is closed, so that its close ends at once.
    onEnd(t, () => d2.proxy.setMode('pass'))
    await destroyRawSession(agent.url, dead)
    // d3 woke (the key ahead lost its session), skipped it and removed it, and sleeps on d1's.
    await eventually('the dead waiter key removed', async () =>
      (await waiterKeys(prefix)).some((e) => e.Key.endsWith(dead)) ? undefined : true,
    )
    await polling(d3, 'd1’s key', (r) => r.path.endsWith(`/.queue/${d1.last()?.session ?? ''}`))
    await leader.election.close()
    await leads(d1)
    await d1.election.close()
    await leads(d3)
    assert.equal(d2.last()?.holding, false)
    await d3.election.close()
  })

  it('passes over a first in line whose process was SIGKILLed: the next in line leads after its recheck and grace, while the dead session still locks its waiter key', async (t) => {
    const prefix = testPrefix(t, agent.url, 'queue-killed')
    const leader = await contender(t, prefix, 'k0')
    await leads(leader)
    // First in line: an rxsem run --leader whose session outlives its process by 30 to 60 s.
    const killed = startCli(
      ['run', '--leader', '--prefix', prefix, '--ttl', '30s', '--', 'sleep', '600'],
      { addr: agent.addr },
    )
    onEnd(t, async () => {
      killTree(killed.pid, 'SIGKILL')
      await killed.exited
    })
    const first = await eventually(
      'rxsem run in line',
      async () => (await waiterKeys(prefix))[0],
      30_000,
    )
    const deadSession = first.Session
    assert.ok(deadSession)
    onEnd(t, () => destroyRawSession(agent.url, deadSession))
    const behind = await contender(t, prefix, 'k1')
    await inLine(prefix, behind)
    killTree(killed.pid, 'SIGKILL')
    await killed.exited
    // The key goes free with nobody of ours first in line alive to try it.
    const releasedAt = Date.now()
    await leader.election.close()
    await eventually('k1 leads', () => behind.last()?.holding || undefined, 20_000)
    const took = Date.now() - releasedAt
    const dead = (await waiterKeys(prefix)).find((e) => e.Key === first.Key)
    assert.equal(dead?.Session, deadSession, 'the SIGKILLed waiter’s session still locks its key')
    process.stderr.write(`# the next in line led ${took} ms after the release\n`)
    assert.equal((await lockOf(prefix))?.Session, behind.last()?.session)
    await behind.election.close()
  })

  it('leaves no waiter key and no session when closed while waiting, first in line, or leading', async (t) => {
    const prefix = testPrefix(t, agent.url, 'queue-close')
    const [e0, e1, e2] = (await lineUp(t, prefix, ['e0', 'e1', 'e2'])) as [
      Contender,
      Contender,
      Contender,
    ]
    await polling(e2, 'the key ahead', (r) => r.path.includes('/.queue/'))
    // Waiting behind another: its key goes, and e1 stays first in line.
    await e2.election.close()
    assert.deepEqual(
      (await waiterKeys(prefix)).map((e) => e.Session),
      [e1.last()?.session],
      'only e1 waits',
    )
    // First in line: its key goes; nobody else waits.
    await polling(e1, '.lock', (r) => r.path === `/v1/kv/${prefix}/.lock`)
    await e1.election.close()
    assert.deepEqual(await waiterKeys(prefix), [])
    // Leading: the key is given back.
    await e0.election.close()
    assert.equal((await lockOf(prefix))?.Session, undefined)
    assert.deepEqual(await waiterKeys(prefix), [])
    assert.deepEqual(await sessionsNamed(agent.url, `queue ${prefix}`), [])
  })
})

/** Resolves with the exit code once the child has exited (at once if it already has). */
function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode)
  return new Promise((done) => child.once('exit', (code) => done(code)))
}
