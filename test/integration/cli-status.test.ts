// `rxsem status` against the real agent, on prefixes written by `rxsem run` and by the real
// `consul lock` (semaphore and single-key lock), and on hand-written `.lock` bodies.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import {
  CLI_START_MS,
  killAllCli,
  runCli,
  startCli,
  startConsulLock,
  stopAllConsulLocks,
} from '../support/cli.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'
import { sharedAgent } from '../support/consul-agent.js'
import { onEnd, testPrefix } from '../support/tracked.js'
import { createConsulClient, withSlot } from '../../src/index.js'
import {
  SEMAPHORE_FLAGS,
  sessionsNamed,
  createRawSession,
  destroyRawSession,
  eventually,
  listPrefix,
  putRaw,
} from '../support/observe.js'

interface StatusJson {
  prefix: string
  limit: number | null
  shape: string | null
  holders: {
    session: string
    alive: boolean
    value: string | null
    name: string | null
    revoke: { graceMs?: number; reason?: string } | null
  }[]
  waiting:
    | {
        session: string
        rank: number
        value: string | null
        name: string | null
        estimatedWaitMs?: number | null
      }[]
    | null
  waitingNote?: string
}

describe('rxsem status', { concurrency: 4, timeout: SUITE_TIMEOUT_MS }, () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  before(async () => {
    consul = await sharedAgent()
  })
  after(async () => {
    killAllCli()
    await stopAllConsulLocks()
    await consul.close()
  })

  const status = async (prefix: string, ...flags: string[]): Promise<StatusJson> => {
    const result = await runCli(['status', '--prefix', prefix, '--json', ...flags], {
      addr: consul.addr,
    })
    assert.equal(result.code, 0, result.stderr)
    assert.equal(result.stdout.trimEnd().split('\n').length, 1, 'one JSON object on one line')
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

  it('shows a running rxsem holder and a waiter, with session names and values', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-status-rxsem')
    const run = (who: string) =>
      startCli(
        [
          'run',
          '--prefix',
          prefix,
          '--limit',
          '1',
          '--name',
          `${who} ${prefix}`,
          '--value',
          `${who}-value`,
          '--',
          'sleep',
          '300',
        ],
        {
          addr: consul.addr,
        },
      )
    const holder = run('holder')
    await until('a holder', prefix, (s) => s.holders.length === 1)
    const waiter = run('waiter')
    const seen = await until('a waiter', prefix, (s) => s.waiting?.length === 1)
    assert.equal(seen.prefix, prefix)
    assert.equal(seen.limit, 1)
    assert.equal(seen.shape, 'go-map')
    assert.deepEqual(
      seen.holders.map(({ alive, value, name }) => ({ alive, value, name })),
      [{ alive: true, value: 'holder-value', name: `holder ${prefix}` }],
    )
    assert.deepEqual(
      (seen.waiting ?? []).map(({ rank, value, name }) => ({ rank, value, name })),
      [{ rank: 0, value: 'waiter-value', name: `waiter ${prefix}` }],
    )
    assert.match(seen.holders[0]?.session ?? '', /^[0-9a-f-]{36}$/)

    const text = await runCli(['status', '--prefix', prefix], { addr: consul.addr })
    assert.equal(text.code, 0)
    assert.match(text.stdout, /holders {2}1 of 1\n {2}\S+ {2}alive {2}value "holder-value"/)
    assert.match(text.stdout, /waiting {2}1\n {2}#0 \S+ {2}value "waiter-value" {2}name "waiter /)

    waiter.child.kill('SIGTERM')
    holder.child.kill('SIGTERM')
    assert.deepEqual(await Promise.all([waiter.exited, holder.exited]), [143, 143])
  })

  it('shows the holders and the waiter of real consul lock -n 2 processes', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-status-consul')
    const lock = () => startConsulLock(consul.addr, ['-n', '2', prefix, 'sleep 300'])
    const locks = [lock(), lock()]
    await until('two holders', prefix, (s) => s.holders.length === 2)
    locks.push(lock())
    const seen = await until('a waiter', prefix, (s) => s.waiting?.length === 1)
    assert.equal(seen.limit, 2)
    assert.equal(seen.shape, 'go-map')
    const consulName = `Consul lock for 'sleep 300' at '${prefix}'`
    assert.deepEqual(
      seen.holders.map(({ alive, value, name }) => ({ alive, value, name })),
      [
        { alive: true, value: null, name: consulName },
        { alive: true, value: null, name: consulName },
      ],
    )
    assert.deepEqual(
      (seen.waiting ?? []).map(({ rank, name }) => ({ rank, name })),
      [{ rank: 0, name: consulName }],
    )
    assert.deepEqual(
      seen.holders.map((h) => h.revoke),
      [null, null],
    )
    // A request that one holder give its slot back, as `rxsem evict --grace` writes it.
    const asked = seen.holders[1]?.session ?? ''
    const request = JSON.stringify({ graceMs: 30_000, reason: 'maintenance' })
    assert.equal(await putRaw(consul.url, `${prefix}/.lock.revoke/${asked}`, request, ''), true)
    const shown = await status(prefix)
    assert.deepEqual(
      shown.holders.map((h) => (h.session === asked ? h.revoke : null)),
      [null, { graceMs: 30_000, reason: 'maintenance' }],
    )
    const text = await runCli(['status', '--prefix', prefix], { addr: consul.addr })
    assert.match(
      text.stdout,
      new RegExp(`${asked} {2}alive.*\n {4}asked to give the slot back within 30s: maintenance\n`),
    )
    await stopAllConsulLocks(locks)
  })

  it('with --sample, gives each waiter of a moving queue an estimated wait from the hand-overs it saw, growing with its place', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-status-sample')
    const client = createConsulClient({ address: consul.addr })
    let stop = false
    // Three processes (told apart by their value) take turns on one slot, 100 ms each.
    const loops = ['p1', 'p2', 'p3'].map(async (value) => {
      while (!stop) {
        await withSlot(
          { prefix, limit: 1, value, consul: client },
          () => new Promise((done) => setTimeout(done, 100)),
        )
      }
    })
    onEnd(t, async () => {
      stop = true
      await Promise.allSettled(loops)
      await client.close()
    })
    await until('two waiting', prefix, (s) => (s.waiting?.length ?? 0) >= 2)
    const plain = await status(prefix)
    assert.ok(
      plain.waiting?.every((w) => !('estimatedWaitMs' in w)),
      'one read gives no estimate',
    )
    const sampled = await status(prefix, '--sample', '3s')
    const waits = (sampled.waiting ?? []).map((w) => w.estimatedWaitMs)
    assert.ok(waits.length >= 1, JSON.stringify(sampled))
    assert.ok(
      waits.every((ms) => typeof ms === 'number' && ms > 0),
      `an estimate for each waiter: ${JSON.stringify(waits)}`,
    )
    const ordered = waits as number[]
    assert.ok(
      ordered.every((ms, i) => i === 0 || ms > (ordered[i - 1] ?? 0)),
      `later places wait longer: ${JSON.stringify(waits)}`,
    )
    const text = await runCli(['status', '--prefix', prefix, '--sample', '2s'], {
      addr: consul.addr,
    })
    assert.equal(text.code, 0, text.stderr)
    assert.match(text.stdout, /#0 .* wait ~\d+\.\ds/)
  })

  it('shows the holder of a consul lock single-key lock as shape "lock", limit 1', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-status-lock')
    const lock = startConsulLock(consul.addr, [prefix, 'sleep 300'])
    const seen = await until('the lock holder', prefix, (s) => s.holders.length === 1)
    assert.equal(seen.limit, 1)
    assert.equal(seen.shape, 'lock')
    assert.equal(seen.waiting, null)
    assert.equal(seen.holders[0]?.alive, true)
    assert.equal(seen.holders[0]?.name, `Consul lock for 'sleep 300' at '${prefix}'`)
    // In text, it says why a leader that was killed may still be shown, and for how long.
    const text = await runCli(['status', '--prefix', prefix], { addr: consul.addr })
    assert.equal(text.code, 0, text.stderr)
    assert.match(text.stdout, /the leader is the process of the session shown/)
    assert.match(text.stdout, /up\s+to 2 x the session's TTL[^]*lock-delay/)
    await stopAllConsulLocks([lock])
  })

  it('lists the rxsem run --leader waiters of a leader lock in line, and says a consul lock waiter is not counted', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-status-lead-wait')
    const leader = (who: string) =>
      startCli(
        ['run', '--leader', '--prefix', prefix, '--name', `${who} ${prefix}`, '--', 'sleep', '300'],
        { addr: consul.addr },
      )
    const holder = leader('holder')
    const waiters: ReturnType<typeof leader>[] = []
    const goWaiters: ReturnType<typeof startConsulLock>[] = []
    try {
      await until('the leader', prefix, (s) => s.holders.length === 1)
      waiters.push(leader('waiter'), leader('waiter'))
      goWaiters.push(startConsulLock(consul.addr, [prefix, 'sleep 300']))
      // Every waiter is contending: ours are in line (a key each under .queue/), Go's has its
      // session, which is all it has in Consul.
      await eventually(
        'the three waiters',
        async () => {
          const inLine = (await listPrefix(consul.url, prefix)).filter((e) =>
            e.Key.startsWith(`${prefix}/.queue/`),
          )
          const go = (await sessionsNamed(consul.url, 'Consul lock for')).filter((s) =>
            s.Name.includes(prefix),
          )
          return inLine.length === 2 && go.length === 1 ? true : undefined
        },
        CLI_START_MS,
      )
      const seen = await status(prefix)
      assert.equal(seen.holders[0]?.name, `holder ${prefix}`)
      assert.deepEqual(
        seen.waiting?.map(({ rank, name }) => ({ rank, name })),
        [
          { rank: 0, name: `waiter ${prefix}` },
          { rank: 1, name: `waiter ${prefix}` },
        ],
        'our two waiters, in line; not the consul lock one',
      )
      assert.match(seen.waitingNote ?? '', /waiters of consul lock .* not listed or counted/)

      const text = await runCli(['status', '--prefix', prefix], { addr: consul.addr })
      assert.equal(text.code, 0, text.stderr)
      assert.match(text.stdout, /^waiting {2}2$/m)
      // The note on whom the list leaves out, laid out as the notes above it are.
      assert.match(text.stdout, /^note {5}these are the waiters in line of rxsem run --leader /m)
      assert.match(text.stdout, /^ {9}.*counted\.\n$/m)
    } finally {
      for (const run of [holder, ...waiters]) run.child.kill('SIGTERM')
      await Promise.all([holder.exited, ...waiters.map((w) => w.exited)])
      await stopAllConsulLocks(goWaiters)
    }
  })

  it('lists a holder whose session is gone as alive: false, and reads the list shapes', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-status-dead')
    const dead = '00000000-dead-dead-dead-000000000000'
    const live = await createRawSession(consul.url, {
      Name: `live ${prefix}`,
      TTL: '30s',
      Behavior: 'delete',
    })
    try {
      assert.ok(
        await putRaw(
          consul.url,
          `${prefix}/${live}`,
          'live-value',
          `acquire=${live}&flags=${SEMAPHORE_FLAGS}`,
        ),
      )
      await putRaw(
        consul.url,
        `${prefix}/.lock`,
        JSON.stringify({ Limit: 2, Holders: [live, dead] }),
        `flags=${SEMAPHORE_FLAGS}`,
      )
      const guide = await status(prefix)
      assert.equal(guide.shape, 'guide-list')
      assert.deepEqual(guide.holders, [
        { session: live, alive: true, value: 'live-value', name: `live ${prefix}`, revoke: null },
        { session: dead, alive: false, value: null, name: null, revoke: null },
      ])
      await putRaw(
        consul.url,
        `${prefix}/.lock`,
        JSON.stringify({ limit: 2, holders: [live] }),
        `flags=${SEMAPHORE_FLAGS}`,
      )
      assert.equal((await status(prefix)).shape, 'java-list')
    } finally {
      await destroyRawSession(consul.url, live)
    }
  })

  it('shows an empty prefix as no limit, no shape, nobody', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-status-empty')
    assert.deepEqual(await status(prefix), {
      prefix,
      limit: null,
      shape: null,
      holders: [],
      waiting: [],
    })
    assert.equal((await status(prefix, '--limit', '3')).limit, 3)
  })

  it('exits 1 with one line on a corrupt .lock, a conflicting limit and an unreachable agent', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-status-errors')
    await putRaw(consul.url, `${prefix}/corrupt/.lock`, '{"Limit":', `flags=${SEMAPHORE_FLAGS}`)
    await putRaw(
      consul.url,
      `${prefix}/limit/.lock`,
      '{"Limit":2,"Holders":{}}',
      `flags=${SEMAPHORE_FLAGS}`,
    )
    const results = await Promise.all([
      runCli(['status', '--prefix', `${prefix}/corrupt`], { addr: consul.addr }),
      runCli(['status', '--prefix', `${prefix}/limit`, '--limit', '3'], { addr: consul.addr }),
      runCli(['status', '--prefix', prefix, '--http-addr', '127.0.0.1:1']),
    ])
    const says = [
      /^rxsem: corrupt lock: /,
      /^rxsem: limit conflict: /,
      /cannot reach the Consul agent at http:\/\/127\.0\.0\.1:1/,
    ]
    results.forEach((result, i) => {
      assert.equal(result.code, 1, result.stderr)
      assert.equal(result.stdout, '')
      assert.equal(result.stderr.trimEnd().split('\n').length, 1, result.stderr)
      assert.match(result.stderr, says[i] ?? /never/)
    })
  })
})
