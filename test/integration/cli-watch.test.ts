// `rxsem watch` with a plain (non-terminal) stdout: a frame per change, the first from the first
// answer, no escape codes, times it did not see marked as bounds, and a clean exit on SIGINT.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import {
  CLI_START_MS,
  killAllCli,
  runCli,
  startCli,
  startConsulLock,
  stopAllConsulLocks,
  type CliRun,
} from '../support/cli.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'
import { sharedAgent } from '../support/consul-agent.js'
import { onEnd, testPrefix } from '../support/tracked.js'
import { eventually, holdersOf, readLock } from '../support/observe.js'

/** The frames printed so far, each starting with its title line. */
const framesOf = (stdout: string): string[] => stdout.split(/^(?=rxsem watch )/m).filter(Boolean)

describe('rxsem watch', { timeout: SUITE_TIMEOUT_MS }, () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  before(async () => {
    consul = await sharedAgent()
  })
  after(async () => {
    killAllCli()
    await stopAllConsulLocks()
    await consul.close()
  })

  it('prints a frame when a holder appears, shows who holds since when, and exits 0 on SIGINT', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-watch')
    const watch = startCli(['watch', '--prefix', prefix], { addr: consul.addr })
    await eventually(
      'the first frame',
      () =>
        watch.stdout().includes(`rxsem watch ${prefix}`) && watch.stdout().includes('(none)')
          ? true
          : undefined,
      CLI_START_MS,
    )
    assert.match(watch.stdout(), /connected \(index \d+\)/)
    const holder = startCli(
      [
        'run',
        '--prefix',
        prefix,
        '--limit',
        '2',
        '--value',
        'watched-holder',
        '--',
        'sleep',
        '300',
      ],
      { addr: consul.addr },
    )
    const frame = await eventually(
      'a frame with the holder and its session name',
      () =>
        // Each frame starts with its title line. The session's name is looked up after the
        // holder is first seen, so a busy machine may draw a frame without it first ("-").
        watch
          .stdout()
          .split(/^(?=rxsem watch )/m)
          .find((f) => /HOLDER[^]*watched-holder +rxsem run[^]*WAITING/.test(f)),
      CLI_START_MS,
    )
    assert.match(frame, /limit 2, shape go-map: 1 of 2 held, 0 waiting/)
    assert.match(
      frame,
      // Seen taking its slot: its time as it is, no bound.
      /^[0-9a-f]{8} {3}\d\d:\d\d:\d\d \d+s +watched-holder +rxsem run 'sleep 300'/m,
    )
    assert.ok(
      frame.split('\n').every((line) => line.length <= 80),
      'fits 80 columns',
    )
    assert.ok(!watch.stdout().includes('\u001b['), 'no escape codes when stdout is not a terminal')

    watch.child.kill('SIGINT')
    assert.equal(await watch.exited, 0)
    assert.equal(watch.stderr(), '')
    holder.child.kill('SIGTERM')
    assert.equal(await holder.exited, 143)
  })

  it('draws its first frame from the first answer, and marks a holder it found holding as held at least so long', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-watch-early')
    const holder = startCli(
      ['run', '-n', '2', '--prefix', prefix, '--value', 'early-holder', '--', 'sleep', '300'],
      { addr: consul.addr },
    )
    try {
      await eventually(
        'the holder listed in .lock',
        async () =>
          holdersOf((await readLock(consul.url, prefix))?.body).length === 1 ? true : undefined,
        CLI_START_MS,
      )
      const watch = startCli(['watch', '--prefix', prefix], { addr: consul.addr })
      const first = await eventually(
        'the first frame',
        () => framesOf(watch.stdout())[0],
        CLI_START_MS,
      )
      assert.match(first, /connected \(index \d+\)/)
      assert.doesNotMatch(first, /waiting for the first answer|nothing read yet/)
      assert.match(first, /limit 2, shape go-map: 1 of 2 held, 0 waiting/)
      // It held before the watch began: taken at that time or before, held at least so long.
      assert.match(first, /^[0-9a-f]{8} {2}≤\d\d:\d\d:\d\d ≥\d+s +early-holder/m)
      assert.match(first.replace(/\s+/g, ' '), /≤ and ≥: held already when the watch first saw it/)
      watch.child.kill('SIGINT')
      assert.equal(await watch.exited, 0)
    } finally {
      holder.child.kill('SIGTERM')
      await holder.exited
    }
  })

  it('piped: one frame per change, each index once, complete with the session names, and no key hint', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-watch-piped')
    const holders = ['piped-a', 'piped-b'].map((value) =>
      startCli(['run', '-n', '2', '--prefix', prefix, '--value', value, '--', 'sleep', '300'], {
        addr: consul.addr,
      }),
    )
    onEnd(t, async () => {
      for (const holder of holders) holder.child.kill('SIGTERM')
      await Promise.all(holders.map((holder) => holder.exited))
    })
    const [a] = holders as [CliRun]
    await eventually(
      'the first holder listed in .lock',
      async () =>
        holdersOf((await readLock(consul.url, prefix))?.body).length >= 1 ? true : undefined,
      CLI_START_MS,
    )
    const watch = startCli(['watch', '--prefix', prefix], { addr: consul.addr })
    onEnd(t, async () => {
      watch.child.kill('SIGINT')
      await watch.exited
    })
    // The last change: a holder gives its slot back. Its frame comes after every earlier one.
    await eventually(
      'a frame with both holders',
      () => framesOf(watch.stdout()).find((f) => /piped-a[^]*piped-b|piped-b[^]*piped-a/.test(f)),
      CLI_START_MS,
    )
    a.child.kill('SIGTERM')
    assert.equal(await a.exited, 143)
    await eventually(
      'a frame with only the second holder',
      () =>
        framesOf(watch.stdout()).find(
          (f) => /1 of 2 held/.test(f) && /piped-b/.test(f) && !/piped-a/.test(f),
        ),
      CLI_START_MS,
    )
    const frames = framesOf(watch.stdout())
    const indexes = frames.map((f) => /connected \(index (\d+)\)/.exec(f)?.[1])
    assert.ok(
      indexes.every((i) => i !== undefined),
      'every frame is of an answer',
    )
    assert.equal(new Set(indexes).size, indexes.length, `each index once: ${indexes.join(', ')}`)
    for (const frame of frames) {
      assert.doesNotMatch(frame, /quit/, 'no key hint in a piped frame')
      // Each holder row comes with its session's name, looked up before the frame is printed.
      for (const row of frame.split('\n').filter((line) => /^[0-9a-f]{8} /.test(line))) {
        assert.match(row, /rxsem run 'sleep 300'/, row)
      }
    }
  })

  it('shows the waiters of a consul lock leader lock as not visible, never as 0', async (t) => {
    const prefix = testPrefix(t, consul.url, 'cli-watch-leader')
    const locks = [startConsulLock(consul.addr, [prefix, 'sleep 300'])]
    try {
      await eventually(
        'the leader',
        async () => ((await readLock(consul.url, prefix))?.entry.Session ? true : undefined),
        CLI_START_MS,
      )
      locks.push(startConsulLock(consul.addr, [prefix, 'sleep 300']))
      const watch = startCli(['watch', '--prefix', prefix], { addr: consul.addr })
      const frame = await eventually('a frame', () => framesOf(watch.stdout())[0], CLI_START_MS)
      assert.match(frame, /leader lock \(consul lock\): 1 of 1 held, waiters not visible/)
      assert.doesNotMatch(frame, /\d+ waiting/)
      assert.match(
        frame.replace(/\s+/g, ' '),
        /\(not visible: contenders waiting for a leader lock/,
      )
      watch.child.kill('SIGINT')
      assert.equal(await watch.exited, 0)
    } finally {
      await stopAllConsulLocks(locks)
    }
  })

  it('shows the connection as DISCONNECTED while Consul cannot be reached, and exits 0 on SIGTERM', async () => {
    const watch = startCli([
      'watch',
      '--prefix',
      'rxsem-test/unreachable',
      '--http-addr',
      '127.0.0.1:1',
    ])
    await eventually(
      'a disconnected frame',
      () =>
        /Consul http:\/\/127\.0\.0\.1:1: DISCONNECTED, attempt 1/.test(watch.stdout())
          ? true
          : undefined,
      CLI_START_MS,
    )
    watch.child.kill('SIGTERM')
    assert.equal(await watch.exited, 0)
  })

  it('rejects a stray argument with a usage error, exit 1', async () => {
    const result = await runCli(['watch', '--prefix', 'p', 'extra'])
    assert.equal(result.code, 1)
    assert.match(
      result.stderr,
      /^rxsem: unexpected argument "extra"\. See `rxsem watch --help`\.\n$/,
    )
  })
})
