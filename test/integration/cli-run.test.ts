// `rxsem run` end to end: a real process against the real agent, its exit statuses, its child's
// process group and environment, and what it leaves in Consul.
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it, type TestContext } from 'node:test'
import {
  CLI_START_MS,
  killAllCli,
  runCli,
  startCli,
  startConsulLock,
  stopAllConsulLocks,
} from '../support/cli.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'
import { freePort, processGone, sharedAgent } from '../support/consul-agent.js'
import { testPrefix } from '../support/tracked.js'
import {
  LOCK_FLAGS,
  SEMAPHORE_FLAGS,
  createRawSession,
  destroyRawSession,
  eventually,
  holdersOf,
  listPrefix,
  putRaw,
  readLock,
  sessionsNamed,
} from '../support/observe.js'
import { SafetyRecorder } from '../support/safety-recorder.js'

describe('rxsem run', { concurrency: 4, timeout: SUITE_TIMEOUT_MS }, () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  let dir: string
  const grandchildren: number[] = []
  before(async () => {
    consul = await sharedAgent()
    dir = mkdtempSync(join(tmpdir(), 'rxsem-cli-run-'))
  })
  after(async () => {
    killAllCli()
    await stopAllConsulLocks()
    for (const pid of grandchildren) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // gone, as it should be
      }
    }
    rmSync(dir, { recursive: true, force: true })
    await consul.close()
  })

  const file = (name: string): string => join(dir, `${name}-${Math.random().toString(36).slice(2)}`)
  const cli = (args: string[]) => runCli(args, { addr: consul.addr })
  const start = (args: string[]) => startCli(args, { addr: consul.addr })

  /** The holders `.lock` lists now, read with plain HTTP. */
  const holders = async (prefix: string): Promise<string[]> =>
    holdersOf((await readLock(consul.url, prefix))?.body)

  /** Waits until a pid file exists with a pid in it, and remembers the pid for `after`. */
  const pidFrom = async (path: string): Promise<number> => {
    const pid = await eventually(
      `a pid in ${path}`,
      () => {
        const text = existsSync(path) ? readFileSync(path, 'utf8').trim() : ''
        return /^\d+$/.test(text) ? Number(text) : undefined
      },
      CLI_START_MS,
    )
    grandchildren.push(pid)
    return pid
  }

  /**
   * Starts rxsem holding the only slot of `prefix` over a shell that starts a grandchild, and
   * resolves once the grandchild runs, with its pid (to check the signals reach the whole group).
   */
  const holdWithGrandchild = async (prefix: string, name: string, grace: string) => {
    const pidFile = file('grandchild')
    const run = start([
      'run',
      '--prefix',
      prefix,
      '--limit',
      '1',
      '--name',
      name,
      '--grace',
      grace,
      '--shell',
      '--',
      `sleep 300 & echo $! > ${pidFile}; wait`,
    ])
    return { run, grandchild: await pidFrom(pidFile) }
  }

  /** After the run: no contender key under the prefix and no session of that name. */
  const assertCleanConsul = async (prefix: string, name: string): Promise<void> => {
    const keys = (await listPrefix(consul.url, prefix)).map((e) => e.Key)
    assert.deepEqual(
      keys.filter((k) => !k.endsWith('/.lock')),
      [],
      'no contender key is left',
    )
    assert.deepEqual(await holders(prefix), [], '.lock lists nobody')
    assert.deepEqual(await sessionsNamed(consul.url, name), [], 'no session is left')
  }

  it("runs the command with CONSUL_LOCK_HELD, RXSEM_SESSION and RXSEM_FENCING_TOKEN, exits with its status, and stdout is only the child's", async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-env')
    const name = `cli-env ${prefix}`
    const result = await cli([
      'run',
      '--prefix',
      prefix,
      '--limit',
      '2',
      '--name',
      name,
      '--verbose',
      '--shell',
      '--',
      'echo "held=$CONSUL_LOCK_HELD session=$RXSEM_SESSION token=$RXSEM_FENCING_TOKEN"; exit 7',
    ])
    assert.equal(result.code, 7, result.stderr)
    assert.match(
      result.stdout,
      /^held=true session=[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12} token=[1-9]\d*\n$/,
    )
    assert.match(
      result.stderr,
      /rxsem: holding slot \(acquired, session [0-9a-f]{8}, fencing token \d+\)/,
    )
    await assertCleanConsul(prefix, name)
  })

  it('says it holds the slot before the command it hands the slot to can print', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-order')
    const go = file('go')
    const holder = start([
      'run',
      '--prefix',
      prefix,
      '--limit',
      '1',
      '--shell',
      '--',
      `while [ ! -e ${go} ]; do sleep 0.05; done`,
    ])
    await eventually(
      'the first holds',
      async () => ((await holders(prefix)).length === 1 ? true : undefined),
      CLI_START_MS,
    )
    // A waiter, handed the slot: its command starts in the turn rxsem learns it holds.
    const waiter = start([
      'run',
      '--prefix',
      prefix,
      '--limit',
      '1',
      '--shell',
      '--',
      'echo command-output >&2',
    ])
    await eventually(
      'the second waits',
      () => (waiter.stderr().includes('waiting for a slot') ? true : undefined),
      CLI_START_MS,
    )
    writeFileSync(go, '')
    assert.equal(await holder.exited, 0, holder.stderr())
    assert.equal(await waiter.exited, 0, waiter.stderr())
    const said = waiter.stderr()
    const told = said.indexOf('rxsem: holding slot')
    assert.ok(told >= 0 && said.indexOf('command-output') > told, said)
  })

  it('exits 0 after a successful command, 128+n after one killed by signal n, 127 for a missing one', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-codes')
    const name = `cli-codes ${prefix}`
    const ok = await cli([
      'run',
      '--prefix',
      prefix,
      '--limit',
      '1',
      '--name',
      name,
      '--quiet',
      '--',
      'true',
    ])
    assert.deepEqual([ok.code, ok.stderr, ok.stdout], [0, '', ''], '--quiet says nothing')
    const killed = await cli([
      'run',
      '--prefix',
      prefix,
      '--limit',
      '1',
      '--name',
      name,
      '--shell',
      '--',
      'kill -9 $$',
    ])
    assert.equal(killed.code, 137, killed.stderr)
    const missing = await cli([
      'run',
      '--prefix',
      prefix,
      '--limit',
      '1',
      '--name',
      name,
      '--',
      'no-such-command-rxsem',
    ])
    assert.equal(missing.code, 127)
    assert.match(missing.stderr, /cannot start "no-such-command-rxsem"/)
    await assertCleanConsul(prefix, name)
  })

  it('exits 75 and stops the whole process group when an operator removes its session from .lock', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-lost-cas')
    const name = `cli-lost-cas ${prefix}`
    const { run, grandchild } = await holdWithGrandchild(prefix, name, '1s')
    const lock = await readLock(consul.url, prefix)
    assert.ok(lock && holdersOf(lock.body).length === 1, 'it holds')
    assert.ok(
      await putRaw(
        consul.url,
        `${prefix}/.lock`,
        JSON.stringify({ Limit: 1, Holders: {} }),
        `cas=${lock.entry.ModifyIndex}&flags=${SEMAPHORE_FLAGS}`,
      ),
    )
    assert.equal(await run.exited, 75, run.stderr())
    assert.match(run.stderr(), /lost slot \(removed\); stopping the command/)
    assert.ok(await processGone(grandchild, 1000), 'the grandchild got the signal too')
    await assertCleanConsul(prefix, name)
  })

  it('exits 75 when an operator destroys its session', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-lost-destroy')
    const name = `cli-lost-destroy ${prefix}`
    const { run, grandchild } = await holdWithGrandchild(prefix, name, '1s')
    const [session] = await holders(prefix)
    assert.ok(session)
    await destroyRawSession(consul.url, session)
    assert.equal(await run.exited, 75, run.stderr())
    assert.ok(await processGone(grandchild, 1000), 'the grandchild is gone')
    await assertCleanConsul(prefix, name)
  })

  it('passes SIGTERM to the command group, then releases and exits 143', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-sigterm')
    const name = `cli-sigterm ${prefix}`
    const { run, grandchild } = await holdWithGrandchild(prefix, name, '20s')
    const sentAt = Date.now()
    run.child.kill('SIGTERM')
    assert.equal(await run.exited, 143, run.stderr())
    assert.ok(
      Date.now() - sentAt < 15_000,
      'the group ended on SIGTERM, not by SIGKILL after the 20 s grace',
    )
    assert.ok(await processGone(grandchild, 1000), 'the grandchild got SIGTERM')
    await assertCleanConsul(prefix, name)
  })

  /** `rxsem run` of a shell loop that ignores SIGINT, with `grace`; resolves once it runs. */
  const startIgnoringSigint = async (t: TestContext, label: string, grace: string) => {
    const prefix = testPrefix(t, consul.url, label)
    const name = `${label} ${prefix}`
    const pidFile = file('child')
    const run = start([
      'run',
      '--prefix',
      prefix,
      '--limit',
      '1',
      '--name',
      name,
      '--grace',
      grace,
      '--shell',
      '--',
      `trap '' INT; echo $$ > ${pidFile}; while true; do sleep 0.1; done`,
    ])
    return { prefix, name, run, child: await pidFrom(pidFile) }
  }

  it('SIGKILLs a command that ignores SIGINT after --grace, then exits 130', async (t) => {
    const { prefix, name, run, child } = await startIgnoringSigint(t, 'cli-sigint-grace', '500ms')
    const sentAt = Date.now()
    run.child.kill('SIGINT')
    assert.equal(await run.exited, 130, run.stderr())
    const took = Date.now() - sentAt
    // It would loop for ever: ending at all shows the SIGKILL; not before the grace shows the wait.
    assert.ok(took >= 450 && took < 10_000, `stopped after the grace: ${took} ms`)
    assert.ok(await processGone(child, 1000))
    await assertCleanConsul(prefix, name)
  })

  it('cuts the grace short on a second SIGINT: SIGKILL at once, release, exit 130', async (t) => {
    const { prefix, name, run, child } = await startIgnoringSigint(t, 'cli-sigint-twice', '60s')
    run.child.kill('SIGINT')
    await eventually(
      'the grace to begin',
      () => (/SIGINT received/.test(run.stderr()) ? true : undefined),
      CLI_START_MS,
    )
    const secondAt = Date.now()
    run.child.kill('SIGINT')
    assert.equal(await run.exited, 130, run.stderr())
    const took = Date.now() - secondAt
    assert.ok(took < 10_000, `stopped ${took} ms after the second SIGINT, not after the 60 s grace`)
    assert.ok(await processGone(child, 1000))
    assert.match(run.stderr(), /second SIGINT/)
    await assertCleanConsul(prefix, name)
  })

  it('waits while the slots are held, exits 124 after --timeout or at once with --timeout 0, and 130 on SIGINT, starting nothing', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-wait')
    const holderName = `cli-wait-holder ${prefix}`
    const holder = start([
      'run',
      '--prefix',
      prefix,
      '--limit',
      '1',
      '--name',
      holderName,
      '--',
      'sleep',
      '300',
    ])
    await eventually(
      'the holder holds',
      async () => ((await holders(prefix)).length === 1 ? true : undefined),
      CLI_START_MS,
    )
    const marker = file('started')
    const command = ['--shell', '--', `touch ${marker}`]

    const timedAt = Date.now()
    const timed = await cli([
      'run',
      '--prefix',
      prefix,
      '--limit',
      '1',
      '--timeout',
      '700ms',
      ...command,
    ])
    assert.equal(timed.code, 124, timed.stderr)
    assert.ok(Date.now() - timedAt >= 700, 'it waited for the timeout')
    assert.match(timed.stderr, /no slot of .* within 700 ms/)

    const once = await cli([
      'run',
      '--prefix',
      prefix,
      '--limit',
      '1',
      '--timeout',
      '0',
      ...command,
    ])
    assert.equal(once.code, 124, once.stderr)
    assert.match(once.stderr, /no free slot .* \(1 of 1 held, --timeout 0\)/)

    const waiterName = `cli-wait-waiter ${prefix}`
    const waiter = start([
      'run',
      '--prefix',
      prefix,
      '--limit',
      '1',
      '--name',
      waiterName,
      ...command,
    ])
    await eventually(
      'the waiter queues',
      async () => ((await listPrefix(consul.url, prefix)).length === 3 ? true : undefined),
      CLI_START_MS,
    )
    waiter.child.kill('SIGINT')
    assert.equal(await waiter.exited, 130, waiter.stderr())
    assert.match(waiter.stderr(), /SIGINT before a slot was held; started nothing/)
    assert.equal(existsSync(marker), false, 'no command was started')
    assert.deepEqual(await sessionsNamed(consul.url, waiterName), [])

    holder.child.kill('SIGTERM')
    assert.equal(await holder.exited, 143)
    const free = await cli([
      'run',
      '--prefix',
      prefix,
      '--limit',
      '1',
      '--timeout',
      '0',
      ...command,
    ])
    assert.equal(free.code, 0, `--timeout 0 runs when a slot is free: ${free.stderr}`)
    assert.equal(existsSync(marker), true)
    await assertCleanConsul(prefix, 'cli-wait')
  })

  it('tries once as tryAcquire and tryLead do: a free slot behind a waiter is taken, and a lock-delay answers 124 at once', async (t) => {
    // A waiter ahead in line that never takes its turn (its process is gone, its key kept until
    // its session ends): a try-once contender does not wait, so it keeps no place behind it.
    const prefix = testPrefix(t, consul.url, 'cli-once-queue')
    const ahead = await createRawSession(consul.url, { Name: `cli-once ${prefix}`, TTL: '30s' })
    assert.equal(
      await putRaw(
        consul.url,
        `${prefix}/${ahead}`,
        'ahead',
        `acquire=${ahead}&flags=${SEMAPHORE_FLAGS}`,
      ),
      true,
    )
    const marker = file('started')
    const name = `cli-once-run ${prefix}`
    const free = await cli([
      'run',
      '--prefix',
      prefix,
      '--limit',
      '1',
      '--name',
      name,
      '--timeout',
      '0',
      '--shell',
      '--',
      `touch ${marker}`,
    ])
    assert.equal(free.code, 0, `the free slot was taken: ${free.stderr}`)
    assert.equal(existsSync(marker), true)
    assert.deepEqual(
      (await listPrefix(consul.url, prefix)).map((e) => e.Key).filter((k) => !k.endsWith('/.lock')),
      [`${prefix}/${ahead}`],
      'only the waiter ahead is left',
    )
    assert.deepEqual(await holders(prefix), [], '.lock lists nobody')
    assert.deepEqual(await sessionsNamed(consul.url, name), [], 'no session is left')
    await destroyRawSession(consul.url, ahead)

    // A leader's session invalidated: Consul refuses the free key for its lock-delay.
    const leaderPrefix = testPrefix(t, consul.url, 'cli-once-delay')
    const leader = await createRawSession(consul.url, {
      Name: `cli-once ${leaderPrefix}`,
      LockDelay: '60s',
    })
    assert.equal(
      await putRaw(
        consul.url,
        `${leaderPrefix}/.lock`,
        'leader',
        `acquire=${leader}&flags=${LOCK_FLAGS}`,
      ),
      true,
    )
    await destroyRawSession(consul.url, leader)
    const delayedMarker = file('started')
    const delayedName = `cli-once-leader ${leaderPrefix}`
    const delayed = await cli([
      'run',
      '--leader',
      '--prefix',
      leaderPrefix,
      '--name',
      delayedName,
      '--timeout',
      '0',
      '--shell',
      '--',
      `touch ${delayedMarker}`,
    ])
    assert.equal(delayed.code, 124, delayed.stderr)
    // Not the 10 s backstop's "no decision": the refusal itself is the answer.
    assert.match(delayed.stderr, /refused for the lock-delay/)
    assert.equal(existsSync(delayedMarker), false, 'no command was started')
    assert.deepEqual(await sessionsNamed(consul.url, delayedName), [], 'no session is left')
  })

  it('exits 1 with one line and starts nothing on bad options, unreachable Consul, conflict, limit conflict and corrupt .lock', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-errors')
    const marker = file('started')
    const command = ['--shell', '--', `touch ${marker}`]
    const closedPort = await freePort()
    const cases: { what: string; args: string[]; setup?: () => Promise<unknown>; says: RegExp }[] =
      [
        {
          what: 'a limit of 0',
          args: ['--prefix', prefix, '--limit', '0'],
          says: /--limit must be a whole number of at least 1, such as 3; got 0\./,
        },
        {
          what: 'a TTL under 10s',
          args: ['--prefix', prefix, '--limit', '1', '--ttl', '1s'],
          says: /bad options: --ttl/,
        },
        { what: 'no prefix', args: ['--limit', '1'], says: /--prefix is required/ },
        {
          what: 'an unknown flag',
          args: ['--prefix', prefix, '--limit', '1', '--frobnicate'],
          says: /unknown flag --frobnicate/,
        },
        {
          what: 'a raw token',
          args: ['--prefix', prefix, '--limit', '1', '--token', 'secret-token-value'],
          says: /--token is not accepted/,
        },
        {
          what: 'a bad duration',
          args: ['--prefix', prefix, '--limit', '1', '--timeout', '5'],
          says: /--timeout must be a positive duration such as 30s or 5m, or 0 to try once; got 5\./,
        },
        {
          what: 'a negative TTL',
          args: ['--prefix', prefix, '--limit', '1', '--ttl', '-5s'],
          says: /^rxsem: --ttl must be a positive duration such as 15s or 1m \(10s to 24h\); got -5s\. See `rxsem run --help`\.$/m,
        },
        {
          what: 'a mistyped flag',
          args: ['--prefix', prefix, '--limt', '1'],
          says: /^rxsem: unknown flag --limt\. Did you mean --limit\? See `rxsem run --help`\.$/m,
        },
        {
          what: 'a flag with one dash, as Go writes it',
          args: ['-prefix', prefix, '-n', '1'],
          says: /^rxsem: unknown flag -prefix: rxsem's flags take two dashes, --prefix\./m,
        },
        {
          what: 'an unreachable agent',
          args: ['--prefix', prefix, '--limit', '1', '--http-addr', `127.0.0.1:${closedPort}`],
          says: new RegExp(`Consul is unreachable.*127\\.0\\.0\\.1:${closedPort}`),
        },
        {
          what: 'a consul lock (LOCK_FLAGS) on .lock',
          args: ['--prefix', `${prefix}/conflict`, '--limit', '1'],
          setup: () => putRaw(consul.url, `${prefix}/conflict/.lock`, '', `flags=${LOCK_FLAGS}`),
          says: /^rxsem: conflict: .*\.lock has flags 3304740253564472344/,
        },
        {
          what: 'another limit in .lock',
          args: ['--prefix', `${prefix}/limit`, '--limit', '2'],
          setup: () =>
            putRaw(
              consul.url,
              `${prefix}/limit/.lock`,
              '{"Limit":3,"Holders":{}}',
              `flags=${SEMAPHORE_FLAGS}`,
            ),
          says: /^rxsem: limit conflict: .*limit is 3, but this contender was given limit 2/,
        },
        {
          what: 'a corrupt .lock',
          args: ['--prefix', `${prefix}/corrupt`, '--limit', '1'],
          setup: () =>
            putRaw(consul.url, `${prefix}/corrupt/.lock`, 'not json', `flags=${SEMAPHORE_FLAGS}`),
          says: /^rxsem: corrupt lock: .*cannot be read: body is not JSON/,
        },
      ]
    await Promise.all(
      cases.map(async ({ what, args, setup, says }) => {
        await setup?.()
        const result = await cli(['run', '--name', `cli-errors ${prefix}`, ...args, ...command])
        assert.equal(result.code, 1, `${what}: ${result.stderr}`)
        assert.equal(result.stdout, '', `${what}: nothing on stdout`)
        assert.equal(
          result.stderr.trimEnd().split('\n').length,
          1,
          `${what}: one line: ${result.stderr}`,
        )
        assert.match(result.stderr, says, what)
        assert.doesNotMatch(
          result.stderr,
          /secret-token-value/,
          `${what}: the token is never printed`,
        )
      }),
    )
    assert.equal(existsSync(marker), false, 'no command was started')
    assert.deepEqual(await sessionsNamed(consul.url, `cli-errors ${prefix}`), [])
    const left = (await listPrefix(consul.url, prefix)).map((e) => e.Key).sort()
    assert.deepEqual(left, [
      `${prefix}/conflict/.lock`,
      `${prefix}/corrupt/.lock`,
      `${prefix}/limit/.lock`,
    ])
  })

  it('exits 1 with one line, runs nothing and leaves .lock as it was when a holder map value is not a boolean', async (t) => {
    // consul lock -n 2 refuses this body too ("lock decoding failed"): Go reads Holders as
    // map[string]bool.
    const prefix = testPrefix(t, consul.url, 'cli-map-value')
    const marker = file('started')
    const holder = randomUUID()
    const name = `cli-map-value ${prefix}`
    await putRaw(
      consul.url,
      `${prefix}/.lock`,
      `{"Limit":2,"Holders":{"${holder}":1}}`,
      `flags=${SEMAPHORE_FLAGS}`,
    )
    const before = await listPrefix(consul.url, prefix)
    const result = await cli([
      'run',
      ...['--prefix', prefix, '--limit', '2', '--name', name],
      ...['--shell', '--', `touch ${marker}`],
    ])
    assert.equal(result.code, 1, result.stderr)
    assert.equal(result.stdout, '')
    assert.equal(result.stderr.trimEnd().split('\n').length, 1, `one line: ${result.stderr}`)
    assert.match(
      result.stderr,
      new RegExp(
        `^rxsem: corrupt lock: ${prefix}/\\.lock cannot be read: Holders: holder "${holder}" has a number value \\(1\\)`,
      ),
    )
    assert.match(result.stderr, /map\[string\]bool/)
    assert.match(result.stderr, /or delete it \(consul kv delete /)
    assert.equal(existsSync(marker), false, 'the command was not run')
    assert.deepEqual(await listPrefix(consul.url, prefix), before, '.lock left byte for byte')
    assert.deepEqual(await sessionsNamed(consul.url, name), [])
  })

  it('never lets rxsem run and consul lock -n 2 hold more than 2 slots together', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-mixed')
    const log = file('intervals')
    // Each holds 0.3 s and until two have started, so that both slots are used at once however
    // slowly a loaded machine starts the six processes (a limit of 2 lets the second one in).
    const job = (who: string) =>
      `echo start ${who} $(date +%s%3N) >> ${log}; sleep 0.3; ` +
      `while [ "$(grep -c '^start' ${log})" -lt 2 ]; do sleep 0.05; done; ` +
      `echo end ${who} $(date +%s%3N) >> ${log}`
    const runs = [0, 1, 2].flatMap((i) => [
      start(['run', '--prefix', prefix, '--limit', '2', '--shell', '--', job(`rxsem${i}`)]).exited,
      startConsulLock(consul.addr, ['-n', '2', prefix, job(`consul${i}`)]).exited,
    ])
    const codes = await Promise.all(runs)
    assert.deepEqual(codes, [0, 0, 0, 0, 0, 0])
    const recorder = new SafetyRecorder(2)
    const starts = new Map<string, number>()
    for (const line of readFileSync(log, 'utf8').trim().split('\n')) {
      const [kind, who = '', at = ''] = line.split(' ')
      if (kind === 'start') starts.set(who, Number(at))
      else recorder.addInterval({ who, from: starts.get(who) ?? Number.NaN, to: Number(at) })
    }
    assert.equal(recorder.intervals().length, 6, 'all six ran once')
    assert.ok(
      recorder.maxConcurrent() <= 2,
      `at most 2 held at once, saw ${recorder.maxConcurrent()}`,
    )
    assert.equal(recorder.maxConcurrent(), 2, 'both slots were used at once')
  })

  it('takes -n 2 as consul lock -n 2 does, and holds beside it', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-run-n')
    const go = startConsulLock(consul.addr, ['-n', '2', prefix, 'sleep 300'])
    const run = start(['run', '-n', '2', '--prefix', prefix, '--', 'sleep', '300'])
    try {
      await eventually(
        'both holding, under one limit',
        async () => ((await holders(prefix)).length === 2 ? true : undefined),
        CLI_START_MS,
      )
      const lock = await readLock(consul.url, prefix)
      assert.equal((lock?.body as { Limit?: number } | undefined)?.Limit, 2)
      assert.doesNotMatch(run.stderr(), /unknown flag|conflict/)
    } finally {
      run.child.kill('SIGTERM')
      assert.equal(await run.exited, 143, run.stderr())
      await stopAllConsulLocks([go])
    }
  })

  it('--leader holds the single-key lock that consul lock uses', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-leader')
    const name = `cli-leader ${prefix}`
    const leader = start([
      'run',
      '--leader',
      '--prefix',
      prefix,
      '--name',
      name,
      '--shell',
      '--',
      'echo leading=$CONSUL_LOCK_HELD; sleep 300',
    ])
    await eventually(
      'rxsem leads',
      () => (leader.stdout().includes('leading=true') ? true : undefined),
      CLI_START_MS,
    )
    const entry = (await listPrefix(consul.url, prefix)).find((e) => e.Key === `${prefix}/.lock`)
    assert.equal(entry?.Flags, LOCK_FLAGS, 'the lock key has consul lock flags')
    const blocked = startConsulLock(consul.addr, ['-timeout=500ms', prefix, 'echo consul-ran'])
    assert.notEqual(await blocked.exited, 0, 'consul lock could not take the lock')
    assert.equal(blocked.stdout().includes('consul-ran'), false)
    leader.child.kill('SIGTERM')
    assert.equal(await leader.exited, 143, leader.stderr())
    assert.deepEqual(await sessionsNamed(consul.url, name), [])
    const after = startConsulLock(consul.addr, ['-timeout=5s', prefix, 'echo consul-ran'])
    assert.equal(await after.exited, 0)
    assert.match(after.stdout(), /consul-ran/)
  })

  it('reports to an OpenTelemetry SDK a NODE_OPTIONS --require registered, and loads no @opentelemetry/api without one', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-otel')
    const repoRequire = createRequire(join(import.meta.dirname, '../../package.json'))
    // A preload in plain CommonJS, as a user's would be: with OTEL_SDK=1 it registers a global
    // tracer provider that keeps the spans; in every case it writes at exit the span names and
    // whether any file of @opentelemetry/api was loaded.
    const preload = file('otel-preload') + '.cjs'
    writeFileSync(
      preload,
      `const out = process.env.OTEL_OUT
let exporter
if (process.env.OTEL_SDK === '1') {
  const api = require(${JSON.stringify(repoRequire.resolve('@opentelemetry/api'))})
  const sdk = require(${JSON.stringify(repoRequire.resolve('@opentelemetry/sdk-trace-base'))})
  exporter = new sdk.InMemorySpanExporter()
  api.trace.setGlobalTracerProvider(new sdk.BasicTracerProvider({ spanProcessors: [new sdk.SimpleSpanProcessor(exporter)] }))
}
process.on('exit', () => {
  const api = Object.keys(require.cache).some((path) => /[\\/]@opentelemetry[\\/]api[\\/]/.test(path))
  require('node:fs').writeFileSync(out, JSON.stringify({ api, spans: exporter ? exporter.getFinishedSpans().map((span) => span.name) : [] }))
})
`,
    )
    const runWith = async (sdk: boolean): Promise<{ api: boolean; spans: string[] }> => {
      const out = file('otel-out')
      const run = await runCli(['run', '--prefix', prefix, '--limit', '1', '--', 'true'], {
        addr: consul.addr,
        env: { NODE_OPTIONS: `--require ${preload}`, OTEL_SDK: sdk ? '1' : '0', OTEL_OUT: out },
      })
      assert.equal(run.code, 0, run.stderr)
      return JSON.parse(readFileSync(out, 'utf8')) as { api: boolean; spans: string[] }
    }
    assert.deepEqual(await runWith(false), { api: false, spans: [] })
    const reported = await runWith(true)
    assert.deepEqual([...reported.spans].sort(), ['rxsem.tenure', 'rxsem.wait'])
  })
})

describe('rxsem usage', { concurrency: true }, () => {
  for (const command of [[], ['run'], ['status'], ['watch']]) {
    it(`rxsem ${[...command, '--help'].join(' ')} prints the usage on stdout and exits 0`, async () => {
      const result = await runCli([...command, '--help'])
      assert.equal(result.code, 0)
      assert.match(result.stdout, new RegExp(`^Usage: rxsem ${command[0] ?? '<command>'}`))
      assert.equal(result.stderr, '')
    })
  }

  it('an unknown command is a usage error on stderr, exit 1', async () => {
    const result = await runCli(['frobnicate'])
    assert.equal(result.code, 1)
    assert.equal(result.stdout, '')
    assert.match(result.stderr, /^rxsem: unknown command "frobnicate".*rxsem --help/)
  })

  it('the built bin of package.json runs --help', async () => {
    // `npm test` builds before the tests run; the bin is the entry npm links as `rxsem`.
    const pkg = JSON.parse(
      readFileSync(join(import.meta.dirname, '../../package.json'), 'utf8'),
    ) as { bin: { rxsem: string } }
    const result = await runCli(['--help'], { entry: pkg.bin.rxsem })
    assert.equal(result.code, 0, result.stderr)
    assert.match(result.stdout, /^Usage: rxsem <command>/)
  })
})
