// leaderElection(...) end to end against a real Consul agent, alone, with `consul lock`, and with a
// leader in another process killed with SIGKILL.
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { pathToFileURL } from 'node:url'
import { firstValueFrom, filter, type Subscription } from 'rxjs'
import {
  leaderElection,
  SemaphoreError,
  type LeaderElection,
  type LeaderElectionOptions,
  type Leader,
} from '../../src/index.js'
import { agentSuite } from '../support/agent-suite.js'
import { consulBin } from '../support/consul-agent.js'
import { intervalsIn } from '../support/cli.js'
import { keep, testPrefix } from '../support/tracked.js'
import {
  LOCK_FLAGS,
  SEMAPHORE_FLAGS,
  createRawSession,
  destroyRawSession,
  eventually,
  listPrefix,
  putRaw,
  sessionsNamed,
  type RawEntry,
  sleep,
} from '../support/observe.js'
import { SUITE_TIMEOUT_MS, killTree } from '../support/processes.js'
import { SafetyRecorder } from '../support/safety-recorder.js'

const now = () => performance.timeOrigin + performance.now()
const repoRoot = resolve(import.meta.dirname, '../..')

describe('leaderElection', { timeout: SUITE_TIMEOUT_MS }, () => {
  let scratch: string
  const children = new Set<ChildProcess>()
  const elections = new Set<LeaderElection>()
  /** leaderElection, closed in teardown if a failed test left it running. */
  const elect = (options: LeaderElectionOptions): LeaderElection => {
    const e = leaderElection(options)
    elections.add(e)
    return e
  }

  before(() => {
    scratch = mkdtempSync(join(tmpdir(), 'rxsem-leader-'))
  })
  // Registered above agentSuite(), so it runs before the client and the agent close.
  after(async () => {
    // A failed test must not leave a `consul lock` or a leader process behind.
    await Promise.allSettled([...elections].map((e) => e.close()))
    for (const child of children)
      if (child.exitCode === null && child.pid) killTree(child.pid, 'SIGKILL')
    await Promise.all([...children].map(exited))
    rmSync(scratch, { recursive: true, force: true })
  })
  const agent = agentSuite()

  const held = (e: LeaderElection) => firstValueFrom(e.holding$.pipe(filter(Boolean)))
  const lockOf = async (prefix: string): Promise<RawEntry | undefined> =>
    (await listPrefix(agent.url, prefix)).find((e) => e.Key === `${prefix}/.lock`)
  const valueOf = (entry: RawEntry | undefined): string | null =>
    entry?.Value ? Buffer.from(entry.Value, 'base64').toString('utf8') : null

  /** The latest leader$ value of an election, kept up to date by a subscription. */
  function follow(e: LeaderElection): {
    latest: () => Leader | null | undefined
    sub: Subscription
  } {
    let latest: Leader | null | undefined
    const sub = e.leader$.subscribe((leader) => (latest = leader))
    return { latest: () => latest, sub }
  }

  /**
   * Runs `consul lock <prefix> <command>` with a command that appends `start <ms>` and `end <ms>`
   * to `log` around `body` (a shell fragment).
   */
  function consulLock(prefix: string, log: string, body: string): ChildProcess {
    const command = `echo start $(date +%s%3N) >> ${log}; ${body}; echo end $(date +%s%3N) >> ${log}`
    const child = spawn(consulBin(), ['lock', `-http-addr=${agent.addr}`, prefix, command], {
      env: { ...process.env, SHELL: '/bin/sh' },
      stdio: ['ignore', 'ignore', 'pipe'],
    })
    children.add(child)
    return child
  }

  /**
   * Resolves once every `consul lock` logging to one of `logs` has started: it has its session
   * (named after its command, which names its log) or has already run. `consul lock` takes a
   * while to start on a loaded machine; a test of both kinds side by side waits for it.
   */
  async function consulLocksStarted(logs: readonly string[]): Promise<void> {
    const seen = new Set<string>()
    await eventually(
      `${logs.length} consul lock sessions`,
      async () => {
        const sessions = await sessionsNamed(agent.url, 'Consul lock for')
        for (const log of logs) if (sessions.some((s) => s.Name.includes(log))) seen.add(log)
        for (const log of logs) if (existsSync(log)) seen.add(log)
        return seen.size === logs.length ? true : undefined
      },
      60_000,
    )
  }

  it('leads when uncontended, names itself in leader$, and close() leaves the key unheld and no session', async (t) => {
    const prefix = testPrefix(t, agent.url, 'leader-uncontended')
    const name = `leader-uncontended ${prefix}`
    const e = elect({ prefix, value: 'node-a', consul: agent.client, sessionName: name })
    const seen: boolean[] = []
    const sub = keep(
      t,
      e.holding$.subscribe((h) => seen.push(h)),
    )
    const leader = follow(e)
    await held(e)
    const state = await firstValueFrom(e.state$.pipe(filter((s) => s.holding)))
    assert.ok(state.session)
    assert.deepEqual(state.leader, { session: state.session, value: 'node-a' })
    const lock = await lockOf(prefix)
    assert.equal(lock?.Flags, LOCK_FLAGS, "Consul's lock flags, as `consul lock` writes them")
    assert.equal(lock?.Session, state.session)
    assert.equal(valueOf(lock), 'node-a')
    assert.equal(state.fencingToken, BigInt(lock?.ModifyIndex ?? -1), 'the acquisition index')
    await eventually('leader$ names itself', () =>
      leader.latest()?.session === state.session && leader.latest()?.value === 'node-a'
        ? true
        : undefined,
    )

    await e.close()
    sub.unsubscribe()
    leader.sub.unsubscribe()
    assert.deepEqual(seen, [false, true, false])
    const left = await lockOf(prefix)
    assert.equal(left?.Session, undefined, 'nobody holds the key')
    assert.equal(valueOf(left), 'node-a', 'the value stays, as Go leaves it')
    assert.equal(left?.Flags, LOCK_FLAGS)
    assert.deepEqual(await sessionsNamed(agent.url, name), [])
  })

  it('hands leadership over at once when the leader closes (no lock-delay on release)', async (t) => {
    const prefix = testPrefix(t, agent.url, 'leader-handover')
    const a = elect({ prefix, value: 'a', consul: agent.client })
    const b = elect({ prefix, value: 'b', consul: agent.client })
    const subs = [a.holding$.subscribe()]
    await held(a)
    const sessionA = (await firstValueFrom(a.state$)).session
    const tokenA = (await firstValueFrom(a.state$)).fencingToken
    subs.push(b.holding$.subscribe())
    const waiting = await firstValueFrom(
      b.state$.pipe(filter((s) => s.session !== undefined && s.leader?.session === sessionA)),
    )
    assert.equal(waiting.holding, false)
    assert.deepEqual(waiting.leader, { session: sessionA, value: 'a' })
    const closedAt = now()
    await a.close()
    await held(b)
    const handover = now() - closedAt
    const stateB = await firstValueFrom(b.state$)
    console.log(`# handover on close: ${handover.toFixed(0)} ms`)
    assert.ok(handover < 1000, `b led ${handover.toFixed(0)} ms after a closed`)
    assert.ok(
      tokenA !== undefined && stateB.fencingToken !== undefined && stateB.fencingToken > tokenA,
      `fencing tokens increase: ${tokenA} then ${stateB.fencingToken}`,
    )
    await b.close()
    subs.forEach((s) => s.unsubscribe())
  })

  it('follows the election in leader$ without creating a session', async (t) => {
    const prefix = testPrefix(t, agent.url, 'leader-observer')
    const name = `observer ${prefix}`
    const observer = elect({ prefix, consul: agent.client, sessionName: name })
    const seen: (Leader | null)[] = []
    const sub = keep(
      t,
      observer.leader$.subscribe((l) => seen.push(l)),
    )
    await eventually('nobody leads', () => (seen.length > 0 ? true : undefined))
    assert.deepEqual(seen, [null])
    const leader = elect({ prefix, value: 'the-one', consul: agent.client })
    const lsub = keep(t, leader.holding$.subscribe())
    await held(leader)
    const session = (await firstValueFrom(leader.state$)).session ?? ''
    await eventually('observer sees the leader', () => (seen.length === 2 ? true : undefined))
    assert.deepEqual(seen, [null, { session, value: 'the-one' }])
    assert.deepEqual(await sessionsNamed(agent.url, name), [], 'no session for a reader')
    await leader.close()
    lsub.unsubscribe()
    await eventually('observer sees nobody', () => (seen.length === 3 ? true : undefined))
    assert.equal(seen[2], null)
    await observer.close()
    sub.unsubscribe()
  })

  for (const [what, flags, body] of [
    ["a semaphore's .lock", SEMAPHORE_FLAGS, '{"Limit":3,"Holders":{}}'],
    ['a .lock written by hand without flags', '0', 'by-curl'],
  ] as const) {
    it(`errors with a typed Conflict and writes nothing on ${what}`, async (t) => {
      const prefix = testPrefix(t, agent.url, 'leader-conflict')
      const name = `leader-conflict ${prefix}`
      await putRaw(agent.url, `${prefix}/.lock`, body, `flags=${flags}`)
      const before = await listPrefix(agent.url, prefix)
      const e = elect({ prefix, consul: agent.client, sessionName: name })
      const seen: boolean[] = []
      const error = await new Promise<unknown>((done) =>
        keep(t, e.holding$.subscribe({ next: (h) => seen.push(h), error: done })),
      )
      assert.ok(error instanceof SemaphoreError)
      assert.equal(error.kind, 'Conflict')
      assert.match(error.message, /\.lock/)
      assert.match(error.message, /not a lock/)
      assert.deepEqual(seen, [false])
      assert.deepEqual(await listPrefix(agent.url, prefix), before, 'nothing written')
      await eventually('session destroyed', async () =>
        (await sessionsNamed(agent.url, name)).length === 0 ? true : undefined,
      )
      await e.close()
    })
  }

  it('leaves no session when unsubscribed while waiting', async (t) => {
    const prefix = testPrefix(t, agent.url, 'leader-cancel-wait')
    const leader = elect({ prefix, value: 'leader', consul: agent.client })
    const lsub = keep(t, leader.holding$.subscribe())
    await held(leader)
    const leaderSession = (await firstValueFrom(leader.state$)).session
    const name = `waiter ${prefix}`
    const waiter = elect({ prefix, consul: agent.client, sessionName: name })
    const wsub = keep(t, waiter.holding$.subscribe())
    await firstValueFrom(
      waiter.state$.pipe(filter((s) => s.session !== undefined && s.leader !== null)),
    )
    assert.equal((await sessionsNamed(agent.url, name)).length, 1, 'the waiter had a session')
    wsub.unsubscribe()
    await eventually('waiter session gone', async () =>
      (await sessionsNamed(agent.url, name)).length === 0 ? true : undefined,
    )
    assert.equal((await lockOf(prefix))?.Session, leaderSession, 'the leader still leads')
    await leader.close()
    lsub.unsubscribe()
  })

  it("takes over after the leader's session is destroyed, once its lock-delay ends, not before", async (t) => {
    // The leader is another client (as Go's Lock would be), with a 2 s lock-delay.
    const prefix = testPrefix(t, agent.url, 'leader-lock-delay')
    const foreign = await createRawSession(agent.url, {
      Name: `foreign ${prefix}`,
      TTL: '30s',
      Behavior: 'release',
      LockDelay: '2s',
    })
    assert.ok(
      await putRaw(
        agent.url,
        `${prefix}/.lock`,
        'foreign',
        `acquire=${foreign}&flags=${LOCK_FLAGS}`,
      ),
    )
    const waiter = elect({ prefix, value: 'waiter', consul: agent.client })
    const seen: { holding: boolean; at: number }[] = []
    const sub = keep(
      t,
      waiter.holding$.subscribe((holding) => seen.push({ holding, at: now() })),
    )
    const waiting = await firstValueFrom(
      waiter.state$.pipe(filter((s) => s.session !== undefined && s.leader !== null)),
    )
    assert.deepEqual(waiting.leader, { session: foreign, value: 'foreign' })
    const destroyedAt = now()
    await destroyRawSession(agent.url, foreign)
    await held(waiter)
    const takeover = (seen.find((s) => s.holding)?.at ?? Infinity) - destroyedAt
    console.log(`# takeover after destroy with lock-delay 2 s: ${takeover.toFixed(0)} ms`)
    assert.deepEqual(
      seen.map((s) => s.holding),
      [false, true],
    )
    assert.ok(takeover >= 2000, `led ${takeover.toFixed(0)} ms after the destroy: inside the delay`)
    assert.ok(takeover < 3300, `led ${takeover.toFixed(0)} ms after the destroy: not ~delay + 1 s`)
    await waiter.close()
    sub.unsubscribe()
  })

  it('replaces a leader killed with SIGKILL only after its session is invalidated', async (t) => {
    const prefix = testPrefix(t, agent.url, 'leader-sigkill')
    const script = join(scratch, 'doomed-leader.mjs')
    writeFileSync(
      script,
      [
        `import { createConsulClient, leaderElection } from ${JSON.stringify(pathToFileURL(join(repoRoot, 'src/index.ts')).href)}`,
        `const consul = createConsulClient({ address: process.env.ADDR })`,
        `const e = leaderElection({ prefix: process.env.PREFIX, consul, value: 'doomed', ttl: '10s', lockDelay: '1s' })`,
        `e.state$.subscribe((s) => { if (s.holding) console.log(JSON.stringify({ session: s.session })) })`,
      ].join('\n'),
    )
    const doomed = spawn(process.execPath, ['--import', 'tsx', script], {
      cwd: repoRoot,
      env: { ...process.env, ADDR: agent.addr, PREFIX: prefix },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    children.add(doomed)
    const doomedSession = await new Promise<string>((done, fail) => {
      let out = ''
      doomed.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString()
        const line = out.split('\n').find((l) => l.startsWith('{'))
        if (line) done((JSON.parse(line) as { session: string }).session)
      })
      doomed.once('exit', (code) => fail(new Error(`the leader process exited early (${code})`)))
    })

    const follower = elect({ prefix, value: 'follower', consul: agent.client })
    const seen: { holding: boolean; at: number }[] = []
    const sub = keep(
      t,
      follower.holding$.subscribe((holding) => seen.push({ holding, at: now() })),
    )
    await firstValueFrom(
      follower.state$.pipe(filter((s) => s.session !== undefined && s.leader !== null)),
    )
    assert.deepEqual((await firstValueFrom(follower.state$)).leader, {
      session: doomedSession,
      value: 'doomed',
    })

    const killedAt = now()
    doomed.kill('SIGKILL')
    await exited(doomed)
    // Watch the killed leader's session until Consul invalidates it (TTL 10 s, up to 2 × TTL).
    let lastAliveSentAt = killedAt
    let goneAt = Infinity
    while (goneAt === Infinity && now() - killedAt < 40_000) {
      const sentAt = now()
      const res = await fetch(`${agent.url}/v1/session/info/${doomedSession}`)
      const info = (await res.json()) as unknown[] | null
      if (info && info.length > 0) lastAliveSentAt = sentAt
      else goneAt = now()
      await sleep(25)
    }
    assert.ok(goneAt < Infinity, 'Consul invalidated the killed leader’s session')
    await held(follower)
    const ledAt = seen.find((s) => s.holding)?.at ?? Infinity
    console.log(
      `# SIGKILL: session gone ${(goneAt - killedAt).toFixed(0)} ms after the kill; follower led ` +
        `${(ledAt - goneAt).toFixed(0)} ms after that (${(ledAt - killedAt).toFixed(0)} ms after the kill)`,
    )
    assert.deepEqual(
      seen.map((s) => s.holding),
      [false, true],
    )
    // The session existed when the last 'alive' answer was sent; the lock-delay (1 s) runs from its
    // invalidation, which came later.
    assert.ok(ledAt > lastAliveSentAt + 1000 - 50, 'never led while the killed session lived')
    assert.ok(ledAt - goneAt < 2500, `led ${(ledAt - goneAt).toFixed(0)} ms after invalidation`)
    const lock = await lockOf(prefix)
    assert.equal(valueOf(lock), 'follower')
    await follower.close()
    sub.unsubscribe()
  })

  it('shares leadership with `consul lock`: one leader at a time, and leader$ names it everywhere', async (t) => {
    const prefix = testPrefix(t, agent.url, 'leader-consul-lock')
    const log = join(scratch, 'consul-lock-1.log')
    const stop = join(scratch, 'consul-lock-1.stop')
    const recorder = new SafetyRecorder(1)
    const first = consulLock(prefix, log, `while [ ! -f ${stop} ]; do sleep 0.05; done`)
    await eventually('consul lock runs its child', () =>
      existsSync(log) && readFileSync(log, 'utf8').includes('start') ? true : undefined,
    )
    const lockHolder = await lockOf(prefix)
    assert.ok(lockHolder?.Session)
    assert.equal(lockHolder.Flags, LOCK_FLAGS)
    const [goLock] = (await sessionsNamed(agent.url, 'Consul lock for')).filter(
      (s) => s.ID === lockHolder.Session,
    )
    assert.ok(goLock, 'the key is held by the `consul lock` session')

    const ours = [
      elect({ prefix, value: 'a', consul: agent.client }),
      elect({ prefix, value: 'b', consul: agent.client }),
    ] as const
    const subs = ours.map((e, i) =>
      e.holding$.subscribe((h) => recorder.record(i === 0 ? 'a' : 'b', h)),
    )
    const followers = ours.map(follow)
    await eventually('leader$ names `consul lock` on every follower', () =>
      followers.every(
        (f) => f.latest()?.session === lockHolder.Session && f.latest()?.value === null,
      )
        ? true
        : undefined,
    )
    for (const e of ours) assert.equal((await firstValueFrom(e.state$)).holding, false)

    writeFileSync(stop, '')
    const winner = await Promise.race(ours.map((e, i) => held(e).then(() => i)))
    assert.equal(await exited(first), 0, '`consul lock` exits cleanly')
    const leader = ours[winner]
    const other = ours[1 - winner]
    assert.ok(leader && other)
    const leaderState = await firstValueFrom(leader.state$)
    await eventually('leader$ names our leader on the other follower', () => {
      const seen = followers[1 - winner]?.latest()
      return seen?.session === leaderState.session && seen?.value === (winner === 0 ? 'a' : 'b')
        ? true
        : undefined
    })

    // A second `consul lock` queues behind our leader; closing it lets one of the others lead.
    const log2 = join(scratch, 'consul-lock-2.log')
    const second = consulLock(prefix, log2, 'sleep 1')
    // Once it has its session (it then tries the key and waits), nothing runs for 500 ms.
    await consulLocksStarted([log2])
    await sleep(500)
    assert.ok(!existsSync(log2), '`consul lock` waits while we lead')
    await leader.close()
    // Either the other follower or the second `consul lock` leads next, the other one after it.
    await held(other)
    await other.close()
    await eventually(
      'the second `consul lock` ran',
      () => (existsSync(log2) && readFileSync(log2, 'utf8').includes('end') ? true : undefined),
      15_000,
    )
    assert.equal(await exited(second), 0)
    subs.forEach((s) => s.unsubscribe())
    followers.forEach((f) => f.sub.unsubscribe())

    for (const interval of [...intervalsIn(log, 'lock1'), ...intervalsIn(log2, 'lock2')]) {
      recorder.addInterval(interval)
    }
    assert.equal(recorder.intervals().length, 4, JSON.stringify(recorder.intervals()))
    assert.equal(recorder.maxConcurrent(), 1, JSON.stringify(recorder.intervals()))
  })

  it('never has two leaders while `consul lock` processes and leaderElection contend together', async (t) => {
    const prefix = testPrefix(t, agent.url, 'leader-mixed')
    const recorder = new SafetyRecorder(1)
    const logs = [0, 1, 2].map((i) => join(scratch, `mixed-${i}.log`))
    const locks = logs.map((log) => consulLock(prefix, log, 'sleep 0.3'))
    // Ours contend once the `consul lock` processes do, not after them (as a slow start made it).
    await consulLocksStarted(logs)
    const cycle = async (who: string): Promise<void> => {
      for (let round = 0; round < 2; round++) {
        const e = elect({ prefix, value: who, consul: agent.client })
        const sub = keep(
          t,
          e.holding$.subscribe((h) => recorder.record(`${who}.${round}`, h)),
        )
        await held(e)
        await sleep(300)
        await e.close()
        sub.unsubscribe()
      }
    }
    await Promise.all([cycle('a'), cycle('b')])
    const codes = await Promise.all(locks.map(exited))
    assert.deepEqual(codes, [0, 0, 0])
    for (const [i, log] of logs.entries()) {
      for (const interval of intervalsIn(log, `lock${i}`)) recorder.addInterval(interval)
    }
    assert.equal(recorder.intervals().length, 7, JSON.stringify(recorder.intervals()))
    assert.equal(recorder.maxConcurrent(), 1, JSON.stringify(recorder.intervals()))
  })
})

/** Resolves with the exit code once the child has exited (at once if it already has). */
function exited(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode)
  return new Promise((done) => child.once('exit', (code) => done(code)))
}
