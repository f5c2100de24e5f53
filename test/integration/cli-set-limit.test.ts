// `rxsem set-limit` tells the operator, before it writes, what the new limit does to the holders
// and waiters it sees: with a holder and a waiter started without --follow-limit, it says that
// the waiter will stop with a limit conflict, and the waiter does. `--dry-run` says it and writes
// nothing.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { CLI_START_MS, killAllCli, runCli, startCli } from '../support/cli.js'
import { testPrefix } from '../support/tracked.js'
import { sharedAgent } from '../support/consul-agent.js'
import { eventually, holdersOf, listPrefix, readLock } from '../support/observe.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'

describe('rxsem set-limit', { timeout: SUITE_TIMEOUT_MS }, () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  before(async () => {
    consul = await sharedAgent()
  })
  after(async () => {
    killAllCli()
    await consul.close()
  })

  it('says that a waiter not following the limit will stop, and it does; --dry-run writes nothing', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-set-limit')
    const run = (value: string) =>
      startCli(['run', '-n', '1', '--prefix', prefix, '--value', value, '--', 'sleep', '300'], {
        addr: consul.addr,
      })
    const holder = run('holder')
    const started = [holder]
    try {
      await eventually(
        'the holder',
        async () =>
          holdersOf((await readLock(consul.url, prefix))?.body).length === 1 ? true : undefined,
        CLI_START_MS,
      )
      const waiter = run('waiter')
      started.push(waiter)
      await eventually(
        'one holder and one waiter',
        async () => {
          const lock = await readLock(consul.url, prefix)
          const keys = (await listPrefix(consul.url, prefix)).filter(
            (e) => !e.Key.endsWith('/.lock') && e.Session,
          )
          return holdersOf(lock?.body).length === 1 && keys.length === 2 ? true : undefined
        },
        CLI_START_MS,
      )
      const before = await readLock(consul.url, prefix)

      const dry = await runCli(['set-limit', '--prefix', prefix, '-n', '2', '--dry-run'], {
        addr: consul.addr,
      })
      assert.equal(dry.code, 0, dry.stderr)
      const said = dry.stdout.replace(/\s+/g, ' ').trimEnd()
      assert.match(said, new RegExp(`^${prefix} now: 1 holder, 1 waiting contender, limit 1\\. `))
      assert.match(
        said,
        /Setting the limit to 2 would: - admit 1 of the 1 waiting at once, if it follows the limit/,
      )
      assert.match(
        said,
        /stop each waiting contender that does not follow the limit .* with a limit conflict, at once/,
      )
      assert.match(said, /Nothing was written \(--dry-run\)\.$/)
      const json = await runCli(
        ['set-limit', '--prefix', prefix, '-n', '2', '--dry-run', '--json'],
        {
          addr: consul.addr,
        },
      )
      assert.equal(json.code, 0, json.stderr)
      assert.deepEqual(JSON.parse(json.stdout), {
        prefix,
        previous: 1,
        limit: 2,
        holders: 1,
        waiting: 1,
        written: false,
      })
      assert.deepEqual(await readLock(consul.url, prefix), before, '--dry-run wrote nothing')

      const set = await runCli(['set-limit', '--prefix', prefix, '-n', '2'], { addr: consul.addr })
      assert.equal(set.code, 0, set.stderr)
      // The effect comes first, then what was written.
      const lines = set.stdout.trimEnd().split('\n')
      assert.equal(lines[0], `${prefix} now: 1 holder, 1 waiting contender, limit 1.`)
      assert.equal(lines[1], 'Setting the limit to 2:')
      assert.equal(lines.at(-1), `${prefix}: limit 1 -> 2 (1 holder).`)
      assert.match(
        set.stdout.replace(/\s+/g, ' '),
        /stop each waiting contender that does not follow the limit/,
      )

      // What it said happens: the waiter, started without --follow-limit, stops.
      assert.equal(await waiter.exited, 1)
      assert.match(
        waiter.stderr(),
        /limit conflict: .*says the limit is 2, but this contender was given limit 1/,
      )
      assert.equal(holder.child.exitCode, null, 'the holder keeps its slot')
    } finally {
      for (const run of started) run.child.kill('SIGTERM')
      await Promise.all(started.map((run) => run.exited))
    }
  })
})
