// `rxsem watch` with a plain (non-terminal) stdout: a frame per change, no escape codes, and a
// clean exit on SIGINT.
import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { CLI_START_MS, killAllCli, runCli, startCli } from '../support/cli.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'
import { sharedAgent, uniquePrefix } from '../support/consul-agent.js'
import { deleteTree, eventually } from '../support/observe.js'

describe('rxsem watch', { timeout: SUITE_TIMEOUT_MS }, () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  before(async () => {
    consul = await sharedAgent()
  })
  after(async () => {
    killAllCli()
    await consul.close()
  })

  it('prints a frame when a holder appears, shows who holds since when, and exits 0 on SIGINT', async () => {
    const prefix = uniquePrefix('cli-watch')
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
      /^[0-9a-f]{8} {2}\d\d:\d\d:\d\d {2}\d+s +watched-holder +rxsem run 'sleep 300'/m,
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
    await deleteTree(consul.url, prefix)
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
