// `rxsem evict` and `rxsem drain` against `rxsem run` contenders on the real agent: evict takes
// the session `rxsem status` shows, the evicted command is stopped (exit 75) at once and the next
// holder's fencing token is above the floor printed; a drain holds back the waiter while the
// holder finishes, `status` shows the drain, and `--lift` lets the waiter in.
import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import { CLI_START_MS, killAllCli, runCli, startCliFor, type CliRun } from '../support/cli.js'
import { agentSuite } from '../support/agent-suite.js'
import { onEnd, testPrefix } from '../support/tracked.js'
import {
  destroyRawSession,
  eventually,
  holdersOf,
  listPrefix,
  readLock,
  parkedAt,
  prefixIndex,
  sessionsNamed,
} from '../support/observe.js'
import { startFaultProxy } from '../support/fault-proxy.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'

interface StatusJson {
  holders: { session: string; alive: boolean; value: string | null; name: string | null }[]
  waiting: { session: string; rank: number; value: string | null }[] | null
}

describe('rxsem evict and rxsem drain', { timeout: SUITE_TIMEOUT_MS }, () => {
  after(() => killAllCli())
  const agent = agentSuite()

  const cli = (args: readonly string[]) => runCli(args, { addr: agent.addr })
  const status = async (prefix: string): Promise<StatusJson> => {
    const result = await cli(['status', '--prefix', prefix, '--json'])
    assert.equal(result.code, 0, result.stderr)
    return JSON.parse(result.stdout) as StatusJson
  }
  const until = (what: string, prefix: string, done: (s: StatusJson) => boolean) =>
    eventually(
      what,
      async () => {
        const s = await status(prefix)
        return done(s) ? s : undefined
      },
      CLI_START_MS,
    )
  /** Starts `rxsem run -n 1` on `prefix`, stopped at the end of the test `t` whatever happens. */
  const run = (
    t: { after: (fn: () => unknown) => void },
    prefix: string,
    value: string,
    command: string,
    flags: readonly string[] = [],
    addr = agent.addr,
  ): CliRun => {
    return startCliFor(
      t,
      ['run', '-n', '1', '--prefix', prefix, '--value', value, ...flags, '--shell', '--', command],
      { addr },
    )
  }

  it('evicts the session status shows: the command stops at once (75), the next holder’s token is above the floor', async (t) => {
    const prefix = testPrefix(t, agent.url, 'cli-evict')
    const first = run(t, prefix, 'first', 'sleep 300')
    const shown = await until('the first holding', prefix, (s) => s.holders.length === 1)
    const session = shown.holders[0]?.session ?? ''
    const second = run(t, prefix, 'second', 'echo token $RXSEM_FENCING_TOKEN; sleep 300')
    await until('the second waiting', prefix, (s) => s.waiting?.length === 1)

    const evicted = await cli(['evict', '--prefix', prefix, '--session', session])
    const at = Date.now()
    assert.equal(evicted.code, 0, evicted.stderr)
    assert.match(evicted.stdout, new RegExp(`^${prefix}: evicted session ${session} \\(taken out`))
    const floor = BigInt(/fencing-token floor (\d+):/.exec(evicted.stdout)?.[1] ?? '0')
    assert.equal(await first.exited, 75, 'the evicted command was stopped: slot lost')
    const stoppedMs = Date.now() - at
    assert.ok(stoppedMs < 10_000, `stopped ${stoppedMs} ms after the eviction`)
    console.log(`# the evicted rxsem run exited ${stoppedMs} ms after evict returned`)
    const token = await eventually(
      'the second holding',
      () => /token (\d+)/.exec(second.stdout())?.[1],
      CLI_START_MS,
    )
    assert.ok(floor < BigInt(token), `the next token ${token} is above the floor ${floor}`)

    // Not a holder any more: refused, with exit 1 and nothing written.
    const before = await readLock(agent.url, prefix)
    const again = await cli(['evict', '--prefix', prefix, '--session', session, '--json'])
    assert.equal(again.code, 1)
    assert.equal(again.stdout, '')
    assert.match(
      again.stderr,
      new RegExp(`^rxsem: session ${session} is not a holder of ${prefix}`),
    )
    assert.deepEqual(await readLock(agent.url, prefix), before)

    const holder = (await status(prefix)).holders[0]?.session ?? ''
    const json = await cli(['evict', '--prefix', prefix, '--session', holder, '--json'])
    assert.equal(json.code, 0, json.stderr)
    const said = JSON.parse(json.stdout) as Record<string, unknown>
    assert.deepEqual(Object.keys(said).sort(), ['floor', 'how', 'lock', 'prefix', 'session'])
    assert.equal(said['session'], holder)
    assert.equal(said['lock'], 'semaphore')
    assert.match(String(said['floor']), /^\d+$/)
    assert.equal(await second.exited, 75)

    const usage = await cli(['evict', '--prefix', prefix])
    assert.equal(usage.code, 1)
    assert.match(usage.stderr, /--session is required/)
  })

  it('with --grace, asks first: rxsem run stops its command and gives the slot back, nothing is forced', async (t) => {
    const prefix = testPrefix(t, agent.url, 'cli-evict-grace')
    const first = run(
      t,
      prefix,
      'first',
      'trap "echo stopping; exit 0" TERM; echo started; sleep 300 & wait',
    )
    const shown = await until('the first holding', prefix, (s) => s.holders.length === 1)
    const session = shown.holders[0]?.session ?? ''
    await eventually(
      'its command running',
      () => (first.stdout().includes('started') ? true : undefined),
      CLI_START_MS,
    )

    const evicted = await cli([
      'evict',
      '--prefix',
      prefix,
      '--session',
      session,
      '--grace',
      '60s',
      '--reason',
      'deploy',
    ])
    assert.equal(evicted.code, 0, evicted.stderr)
    assert.match(
      evicted.stderr,
      new RegExp(`asked session ${session} to give its slot back within 60s`),
    )
    assert.match(
      evicted.stdout,
      new RegExp(
        `^${prefix}: evicted session ${session} \\(it gave its slot back when asked; nothing was forced\\)`,
      ),
    )
    assert.equal(await first.exited, 75, 'rxsem run stopped its command, then gave the slot back')
    assert.match(first.stdout(), /stopping/, 'the command got SIGTERM')
    assert.match(
      first.stderr(),
      /asked to give the slot back within 60s: deploy; stopping the command/,
    )
    assert.deepEqual(
      (await listPrefix(agent.url, prefix)).filter((e) => e.Key.includes('/.lock.revoke/')),
      [],
      'the request is withdrawn',
    )
  })

  it('with --grace, an rxsem run --leader steps down: its command stops, the leader lock is released, nothing is forced', async (t) => {
    const prefix = testPrefix(t, agent.url, 'cli-evict-grace-leader')
    const leader = startCliFor(
      t,
      [
        'run',
        '--leader',
        '--prefix',
        prefix,
        '--value',
        'first',
        '--shell',
        '--',
        'trap "echo stopping; exit 0" TERM; echo started; sleep 300 & wait',
      ],
      { addr: agent.addr },
    )
    await eventually(
      'its command running',
      () => (leader.stdout().includes('started') ? true : undefined),
      CLI_START_MS,
    )
    const leaderKey = async () =>
      (await listPrefix(agent.url, prefix)).find((e) => e.Key === `${prefix}/.lock`)
    const session = (await leaderKey())?.Session ?? ''
    const evicted = await cli(['evict', '--prefix', prefix, '--session', session, '--grace', '60s'])
    assert.equal(evicted.code, 0, evicted.stderr)
    assert.match(
      evicted.stdout,
      new RegExp(
        `^${prefix}: evicted session ${session} \\(it stepped down when asked; nothing was forced\\)`,
      ),
    )
    assert.equal(await leader.exited, 75)
    assert.match(leader.stdout(), /stopping/, 'the command got SIGTERM')
    assert.equal((await leaderKey())?.Session, undefined, 'the lock is free')
  })

  it('evicts by the 8 characters rxsem watch prints; refuses a start no session has, naming the sessions', async (t) => {
    const prefix = testPrefix(t, agent.url, 'cli-evict-short')
    const first = run(t, prefix, 'first', 'sleep 300')
    const watch = startCliFor(t, ['watch', '--prefix', prefix], { addr: agent.addr })
    // The holder's row in the piped frame starts with the 8 characters watch prints.
    const short = await eventually(
      'a watch frame with the holder',
      () => /^([0-9a-f]{8}) .*\bfirst\b/m.exec(watch.stdout())?.[1],
      CLI_START_MS,
    )
    const [holder] = (await status(prefix)).holders
    assert.ok(holder !== undefined && holder.session.startsWith(short), 'watch shows the holder')

    // No session starts so: refused, naming the sessions there are; nothing written.
    const before = await readLock(agent.url, prefix)
    const none = await cli(['evict', '--prefix', prefix, '--session', 'ffffffff'])
    assert.equal(none.code, 1)
    assert.match(none.stderr, new RegExp(`the sessions of ${prefix} are ${holder.session}\\b`))
    assert.match(none.stderr, /Give the full session ID, or its start/)
    assert.deepEqual(await readLock(agent.url, prefix), before)

    const evicted = await cli(['evict', '--prefix', prefix, '--session', short])
    assert.equal(evicted.code, 0, evicted.stderr)
    assert.match(evicted.stdout, new RegExp(`^${prefix}: evicted session ${holder.session} \\(`))
    assert.equal(await first.exited, 75, 'the evicted command was stopped: slot lost')
  })

  it('drains: the holder finishes, the waiter is held back and keeps waiting, status shows the drain, --lift lets it in', async (t) => {
    const prefix = testPrefix(t, agent.url, 'cli-drain')
    onEnd(t, async () => {
      for (const s of await sessionsNamed(agent.url, `rxsem drain of ${prefix}`))
        await destroyRawSession(agent.url, s.ID)
    })
    const holder = run(t, prefix, 'holder', 'sleep 300')
    await until('the holder', prefix, (s) => s.holders.length === 1)
    // The waiter reaches the agent through a proxy, which shows when it has read the drained
    // prefix and gone back to waiting.
    const proxy = await startFaultProxy(agent.addr)
    onEnd(t, () => proxy.close())
    const waiter = run(t, prefix, 'waiter', 'echo admitted', [], proxy.addr)
    await until('the waiter', prefix, (s) => s.waiting?.length === 1)

    const drained = await cli(['drain', '--prefix', prefix])
    assert.equal(drained.code, 0, drained.stderr)
    const lines = drained.stdout.trimEnd().split('\n')
    assert.equal(lines[0], `${prefix} drained: 1 drain session holds the 1 slot of limit 1.`)
    assert.equal(
      lines[1],
      '1 holder keeps its slot until it releases; no one is admitted until the drain is lifted.',
    )
    const again = await cli(['drain', '--prefix', prefix])
    assert.equal(again.code, 0, again.stderr)
    assert.match(
      again.stdout,
      new RegExp(
        `^${prefix} was drained already \\(1 drain session, limit 1\\); nothing written\\.`,
      ),
    )

    const shown = await status(prefix)
    const drain = shown.holders.find((h) => h.value === 'rxsem drain')
    assert.equal(
      drain?.name,
      `rxsem drain of ${prefix}`,
      'status shows the drain by value and name',
    )
    assert.equal(drain?.alive, true)

    holder.child.kill('SIGTERM')
    assert.equal(await holder.exited, 143)
    const onlyDrainHolds = async (): Promise<boolean> => {
      const entries = await listPrefix(agent.url, prefix)
      const live = new Set(entries.flatMap((e) => (e.Session ? [e.Session] : [])))
      const listed = holdersOf((await readLock(agent.url, prefix))?.body).filter((h) => live.has(h))
      return listed.length === 1 && listed[0] === drain?.session
    }
    await eventually('only the drain holding', async () =>
      (await onlyDrainHolds()) ? true : undefined,
    )
    // The waiter has read the drained prefix, decided, and is back in a blocking read: had it
    // taken the slot, its write would be in .lock by now.
    await parkedAt(proxy, prefix, await prefixIndex(agent.url, prefix), CLI_START_MS)
    assert.equal(await onlyDrainHolds(), true, 'no one admitted')
    assert.equal(waiter.stdout().includes('admitted'), false, 'the waiter was not admitted')
    assert.equal(waiter.child.exitCode, null, 'the waiter keeps waiting')

    const lifted = await cli(['drain', '--prefix', prefix, '--lift', '--json'])
    assert.equal(lifted.code, 0, lifted.stderr)
    const said = JSON.parse(lifted.stdout) as Record<string, unknown>
    assert.equal(said['lifted'], true)
    assert.deepEqual(said['sessions'], [drain?.session])
    assert.equal(await waiter.exited, 0)
    assert.match(waiter.stdout(), /admitted/)
    const twice = await cli(['drain', '--prefix', prefix, '--lift'])
    assert.equal(twice.code, 0, twice.stderr)
    assert.equal(twice.stdout, `${prefix} is not drained; nothing to lift.\n`)
    assert.deepEqual(await sessionsNamed(agent.url, `rxsem drain of ${prefix}`), [])
  })
})
