// `rxsem run` at the edges: the command never outlives its guard. rxsem SIGKILLed or SIGSTOPped,
// its watchdog killed, SIGHUP, no bash; and what the command learns from its environment. Real
// processes against the real agent.
import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { constants, tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { after, before, describe, it } from 'node:test'
import { CLI_START_MS, killAllCli, runCli, startCli, type CliRun } from '../support/cli.js'
import { processGone, sharedAgent } from '../support/consul-agent.js'
import { testPrefix } from '../support/tracked.js'
import {
  deleteTree,
  destroyRawSession,
  eventually,
  holdersOf,
  listPrefix,
  readLock,
  sessionsNamed,
} from '../support/observe.js'
import { SUITE_TIMEOUT_MS, descendants, groupMembers, startTime } from '../support/processes.js'

/** The living (not zombie) members of process group `pgid`. */
async function liveMembers(pgid: number): Promise<number[]> {
  const members = groupMembers(pgid)
  const gone = await Promise.all(members.map((pid) => processGone(pid, 0)))
  return members.filter((_, i) => gone[i] !== true)
}

/** Polls every 10 ms until process group `pgid` has no living member; the ms it took, or undefined. */
async function groupGoneWithin(pgid: number, since: number, boundMs: number) {
  for (;;) {
    if ((await liveMembers(pgid)).length === 0) return Date.now() - since
    if (Date.now() - since > boundMs) return undefined
    await sleep(10)
  }
}

/**
 * rxsem's exit status (128+n after signal n) once it has exited, without waiting (as
 * `CliRun.exited` does) for every holder of its output pipes: a command left running holds them.
 */
function exitStatus(run: CliRun): Promise<number> {
  const signals = constants.signals as Partial<Record<string, number>>
  return eventually(
    `rxsem ${run.pid} exits`,
    () =>
      run.child.exitCode ??
      (run.child.signalCode === null ? undefined : 128 + (signals[run.child.signalCode] ?? 0)),
    CLI_START_MS,
  )
}

/** The pid of the watchdog `rxsem run` (pid `rxsem`) started, found through /proc. */
function watchdogOf(rxsem: number): number | undefined {
  return descendants(rxsem).find((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('rxsem-watchdog.sh')
    } catch {
      return false
    }
  })
}

describe(
  'rxsem run: the command never outlives its guard',
  {
    concurrency: true,
    timeout: SUITE_TIMEOUT_MS,
  },
  () => {
    let consul: Awaited<ReturnType<typeof sharedAgent>>
    let dir: string
    /**
     * Process groups of commands, and watchdogs, with when their leader started: they outlive a
     * killed rxsem by design, until the watchdog has done its work.
     */
    const groups = new Map<number, string | undefined>()
    const loose = new Map<number, string | undefined>()
    const stopped: CliRun[] = []
    before(async () => {
      consul = await sharedAgent()
      dir = mkdtempSync(join(tmpdir(), 'rxsem-cli-guard-'))
    })
    after(async () => {
      for (const run of stopped) run.child.kill('SIGCONT')
      killAllCli()
      // A group id is not reused while the group has members: if its leader is gone or is still
      // the one recorded, the members are the test's.
      for (const [pgid, started] of groups) {
        const leader = startTime(pgid)
        if (groupMembers(pgid).length === 0 || (leader !== undefined && leader !== started))
          continue
        try {
          process.kill(-pgid, 'SIGKILL')
        } catch {
          // gone meanwhile
        }
      }
      for (const [pid, started] of loose) {
        if (startTime(pid) !== started) continue
        try {
          process.kill(pid, 'SIGKILL')
        } catch {
          // gone meanwhile
        }
      }
      rmSync(dir, { recursive: true, force: true })
      await consul.close()
    })

    const file = (name: string): string =>
      join(dir, `${name}-${Math.random().toString(36).slice(2)}`)
    const start = (args: string[], env?: Record<string, string>) =>
      startCli(args, { addr: consul.addr, ...(env !== undefined ? { env } : {}) })

    /** Waits until `path` holds a number on its first line (a pid), and remembers it as a group. */
    const groupFrom = async (path: string): Promise<number> => {
      const pgid = await eventually(
        `a pid in ${path}`,
        () => {
          const text = existsSync(path) ? (readFileSync(path, 'utf8').split('\n')[0] ?? '') : ''
          return /^\d+$/.test(text.trim()) ? Number(text.trim()) : undefined
        },
        CLI_START_MS,
      )
      groups.set(pgid, startTime(pgid))
      return pgid
    }

    /** The watchdog of a running rxsem, if it has one, remembered for `after`. */
    const watchdogPid = (run: CliRun): number | undefined => {
      const pid = watchdogOf(run.pid)
      if (pid !== undefined) loose.set(pid, startTime(pid))
      return pid
    }

    /** The watchdog ended by itself once it had nothing left to guard. */
    const assertWatchdogEnded = async (watchdog: number | undefined): Promise<void> => {
      assert.ok(watchdog !== undefined, 'rxsem ran a watchdog')
      assert.ok(await processGone(watchdog, 10_000), `the watchdog ${watchdog} ended`)
    }

    /** Nothing of the prefix left in Consul but an empty .lock, and no session of that name. */
    const assertCleanConsul = async (prefix: string, name: string): Promise<void> => {
      const keys = (await listPrefix(consul.url, prefix)).map((e) => e.Key)
      assert.deepEqual(
        keys.filter((k) => !k.endsWith('/.lock')),
        [],
        'no contender key is left',
      )
      assert.deepEqual(holdersOf((await readLock(consul.url, prefix))?.body), [], '.lock is empty')
      assert.deepEqual(await sessionsNamed(consul.url, name), [], 'no session is left')
    }

    /** What a SIGKILLed rxsem could not release: its session goes, and with it its key. */
    const cleanUpAfterKill = async (prefix: string, name: string): Promise<void> => {
      for (const session of await sessionsNamed(consul.url, name)) {
        await destroyRawSession(consul.url, session.ID)
      }
      await deleteTree(consul.url, prefix)
      assert.deepEqual(await sessionsNamed(consul.url, name), [])
      assert.deepEqual(await listPrefix(consul.url, prefix), [])
    }

    it('stops the command group soon after rxsem is SIGKILLed (0.5 s grace, then SIGKILL for what ignores SIGTERM; 3 trials)', async (t) => {
      const took: number[] = []
      for (let trial = 1; trial <= 3; trial++) {
        const prefix = testPrefix(t, consul.url, 'cli-guard-kill')
        const name = `cli-guard-kill ${prefix}`
        const pidFile = file('group')
        const run = start([
          ...['run', '--prefix', prefix, '--limit', '1', '--ttl', '10s', '--name', name],
          ...['--grace', '20s', '--shell', '--'],
          // A group that ignores SIGTERM, with a grandchild: only the watchdog's SIGKILL ends it.
          `trap '' TERM; echo $$ > ${pidFile}; sleep 300 & while :; do sleep 0.1; done`,
        ])
        const pgid = await groupFrom(pidFile)
        const watchdog = watchdogPid(run)
        // The shell writes its pid before it starts the grandchild: wait for both.
        await eventually(
          'the command and its grandchild run',
          async () => ((await liveMembers(pgid)).length >= 2 ? true : undefined),
          CLI_START_MS,
        )
        const killedAt = Date.now()
        run.child.kill('SIGKILL')
        const ms = await groupGoneWithin(pgid, killedAt, 10_000)
        assert.ok(ms !== undefined, `trial ${trial}: the group still runs 10 s after the SIGKILL`)
        took.push(ms)
        await assertWatchdogEnded(watchdog)
        await run.exited
        assert.match(run.stderr(), /watchdog: rxsem \(pid \d+\) ended while its command ran/)
        await cleanUpAfterKill(prefix, name)
      }
      process.stderr.write(`# SIGKILL of rxsem to its command group gone: ${took.join(', ')} ms\n`)
      // By design the group is gone about 0.55 s after rxsem (EOF at once, the 0.5 s grace, a
      // 50 ms check); docs/cli.md has the measured times. What the test holds it to is what
      // safety needs: gone well before the session's 10 s TTL can lapse and a waiter take over.
      // (A loaded machine schedules the watchdog's bash late: 1.0 s and 2.2 s were seen.)
      for (const ms of took)
        assert.ok(ms < 5000, `group gone ${ms} ms after the SIGKILL: ${took.join(', ')}`)
    })

    it('stops the command of a SIGSTOPped rxsem before a waiter takes over its slot (3 trials)', async (t) => {
      await Promise.all(
        [1, 2, 3].map(async (trial) => {
          const prefix = testPrefix(t, consul.url, 'cli-guard-stop')
          const nameA = `cli-guard-stop-a ${prefix}`
          const nameB = `cli-guard-stop-b ${prefix}`
          const logA = file('ticks-a')
          const logB = file('start-b')
          const pidFile = file('group-a')
          const a = start([
            ...['run', '--prefix', prefix, '--limit', '1', '--ttl', '10s', '--name', nameA],
            ...['--shell', '--'],
            `echo $$ > ${pidFile}; while :; do date +%s%3N >> ${logA}; sleep 0.1; done`,
          ])
          const pgid = await groupFrom(pidFile)
          watchdogPid(a)
          await eventually('A ticks', () => (existsSync(logA) ? true : undefined), CLI_START_MS)
          const b = start([
            ...['run', '--prefix', prefix, '--limit', '1', '--ttl', '10s', '--name', nameB],
            ...['--shell', '--', `date +%s%3N > ${logB}`],
          ])
          await eventually(
            'B waits in line',
            async () => ((await listPrefix(consul.url, prefix)).length === 3 ? true : undefined),
            CLI_START_MS,
          )
          stopped.push(a)
          a.child.kill('SIGSTOP')
          const stoppedAt = Date.now()
          // Consul invalidates A's session 2 × TTL after its last renewal at the latest: B runs then.
          assert.equal(await b.exited, 0, b.stderr())
          const bStarted = Number(readFileSync(logB, 'utf8').trim())
          const ticks = readFileSync(logA, 'utf8').trim().split('\n').map(Number)
          const lastTick = ticks[ticks.length - 1] ?? Number.NaN
          assert.ok(
            (await liveMembers(pgid)).length === 0,
            `trial ${trial}: A's command group is gone`,
          )
          process.stderr.write(
            `# trial ${trial}: A stopped at ${stoppedAt}, A's command's last tick ${lastTick - stoppedAt} ms after, ` +
              `B's command started ${bStarted - stoppedAt} ms after (${bStarted - lastTick} ms after A's last tick)\n`,
          )
          assert.ok(
            lastTick < bStarted,
            `trial ${trial}: A's command ticked at ${lastTick}, after B's started at ${bStarted}`,
          )
          assert.match(
            a.stderr(),
            /watchdog: the lease deadline is 500 ms away and rxsem \(pid \d+\) has not renewed the lease/,
          )

          // A runs again: it finds its command stopped and its slot gone, and cleans up.
          a.child.kill('SIGCONT')
          assert.equal(await a.exited, 75, a.stderr())
          await assertCleanConsul(prefix, nameA)
          await assertCleanConsul(prefix, nameB)
        }),
      )
    })

    it('lets a command run past its first lease deadline while rxsem renews the lease', async (t) => {
      const prefix = testPrefix(t, consul.url, 'cli-guard-renew')
      const name = `cli-guard-renew ${prefix}`
      // The command outlives the deadline it was started with by 1.5 s, polling the clock.
      const result = await runCli(
        [
          ...['run', '--prefix', prefix, '--limit', '1', '--ttl', '10s', '--name', name],
          ...['--shell', '--'],
          'end=$((RXSEM_LEASE_DEADLINE_MS + 1500)); while [ "$(date +%s%3N)" -lt "$end" ]; do sleep 0.2; done; echo survived',
        ],
        { addr: consul.addr },
      )
      assert.equal(result.code, 0, result.stderr)
      assert.equal(result.stdout, 'survived\n')
      assert.doesNotMatch(result.stderr, /watchdog|lost slot/, 'the watchdog never fired')
      await assertCleanConsul(prefix, name)
    })

    it('on SIGHUP stops the command group with SIGTERM, releases the slot and exits 129', async (t) => {
      const prefix = testPrefix(t, consul.url, 'cli-guard-hup')
      const name = `cli-guard-hup ${prefix}`
      const pidFile = file('group')
      const termFile = file('term')
      const run = start([
        ...['run', '--prefix', prefix, '--limit', '1', '--name', name, '--grace', '20s'],
        ...['--shell', '--'],
        `trap 'echo TERM > ${termFile}; exit 0' TERM; echo $$ > ${pidFile}; sleep 300 & while :; do sleep 0.1; done`,
      ])
      const pgid = await groupFrom(pidFile)
      const watchdog = watchdogPid(run)
      run.child.kill('SIGHUP')
      assert.equal(await exitStatus(run), 129, run.stderr())
      assert.ok((await groupGoneWithin(pgid, Date.now(), 5000)) !== undefined, 'group gone')
      await run.exited
      assert.equal(readFileSync(termFile, 'utf8').trim(), 'TERM', 'the command got SIGTERM')
      assert.match(run.stderr(), /SIGHUP received: SIGTERM to the command's process group/)
      await assertWatchdogEnded(watchdog)
      assert.doesNotMatch(run.stderr(), /watchdog:/, 'the watchdog had nothing to do')
      await assertCleanConsul(prefix, name)
    })

    it('stops what the command left running in its group before it releases the slot', async (t) => {
      const prefix = testPrefix(t, consul.url, 'cli-guard-leftover')
      const name = `cli-guard-leftover ${prefix}`
      const pidFile = file('leftover')
      const run = start([
        ...['run', '--prefix', prefix, '--limit', '1', '--name', name, '--shell', '--'],
        // The leader exits at once; its grandchild, in the same group, would run on for 300 s.
        `echo $$ > ${pidFile}; sleep 300 > /dev/null 2>&1 < /dev/null & exit 0`,
      ])
      const pgid = await groupFrom(pidFile)
      assert.equal(await exitStatus(run), 0, `rxsem's status is the command's: ${run.stderr()}`)
      assert.deepEqual(await liveMembers(pgid), [], 'nothing of the group runs once rxsem exited')
      await assertCleanConsul(prefix, name)
    })

    it('gives the command RXSEM_PREFIX, RXSEM_SESSION, RXSEM_FENCING_TOKEN and RXSEM_LEASE_DEADLINE_MS', async (t) => {
      const prefix = testPrefix(t, consul.url, 'cli-guard-env')
      const name = `cli-guard-env ${prefix}`
      const startedAt = Date.now()
      const result = await runCli(
        [
          ...['run', '--prefix', prefix, '--limit', '2', '--ttl', '10s', '--name', name],
          ...['--shell', '--'],
          'echo "$RXSEM_PREFIX $RXSEM_SESSION $RXSEM_FENCING_TOKEN $RXSEM_LEASE_DEADLINE_MS $(date +%s%3N)"',
        ],
        { addr: consul.addr },
      )
      assert.equal(result.code, 0, result.stderr)
      const [seenPrefix, session, token, deadline, ranAt] = result.stdout.trim().split(' ')
      assert.equal(seenPrefix, prefix)
      assert.match(session ?? '', /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
      assert.match(token ?? '', /^[1-9]\d*$/)
      // The deadline is when the session's create (or renewal) was sent, plus TTL minus 10 %.
      const sentAt = Number(deadline) - 9000
      assert.ok(
        sentAt >= startedAt && sentAt <= Number(ranAt),
        `RXSEM_LEASE_DEADLINE_MS ${deadline} is 9 s after a time between the start (${startedAt}) and the command (${ranAt})`,
      )
      await assertCleanConsul(prefix, name)
    })

    it('stops the command, releases and exits 71 when its watchdog is killed', async (t) => {
      const prefix = testPrefix(t, consul.url, 'cli-guard-watchdog')
      const name = `cli-guard-watchdog ${prefix}`
      const pidFile = file('group')
      const run = start([
        ...['run', '--prefix', prefix, '--limit', '1', '--name', name, '--shell', '--'],
        `echo $$ > ${pidFile}; sleep 300 & while :; do sleep 0.1; done`,
      ])
      const pgid = await groupFrom(pidFile)
      const watchdog = watchdogPid(run)
      assert.ok(watchdog !== undefined, 'rxsem runs a watchdog')
      process.kill(watchdog, 'SIGKILL')
      assert.equal(await run.exited, 71, run.stderr())
      assert.match(
        run.stderr(),
        /the watchdog \(pid \d+\) that guards the command ended unexpectedly/,
      )
      assert.ok((await groupGoneWithin(pgid, Date.now(), 5000)) !== undefined, 'group gone')
      await assertCleanConsul(prefix, name)
    })

    it('starts nothing and exits 1 with one line when there is no bash in PATH', async (t) => {
      const prefix = testPrefix(t, consul.url, 'cli-guard-nobash')
      const name = `cli-guard-nobash ${prefix}`
      const marker = file('started')
      const result = await runCli(
        [
          ...['run', '--prefix', prefix, '--limit', '1', '--name', name],
          ...['--', '/usr/bin/touch', marker],
        ],
        { addr: consul.addr, env: { PATH: join(dir, 'no-such-dir') } },
      )
      assert.equal(result.code, 1, result.stderr)
      assert.equal(result.stderr.trimEnd().split('\n').length, 1, `one line: ${result.stderr}`)
      assert.match(result.stderr, /^rxsem: rxsem run needs bash \(version 5 or later\) in PATH/)
      assert.equal(existsSync(marker), false, 'nothing was started')
      await assertCleanConsul(prefix, name)
    })
  },
)
