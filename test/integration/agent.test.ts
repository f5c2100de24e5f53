// `npm run agent`: a throwaway Consul agent for experiments, started in one line, pointed at by
// the line it prints, and gone after Ctrl-C.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { delimiter, join, resolve } from 'node:path'
import { describe, it } from 'node:test'
import { freePort, processGone } from '../support/consul-agent.js'
import { eventually } from '../support/observe.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'

const root = resolve(import.meta.dirname, '../..')

/** This process's PATH without the folders that hold a `consul`. */
function pathWithoutConsul(): string {
  return (process.env['PATH'] ?? '')
    .split(delimiter)
    .filter((dir) => dir !== '' && !existsSync(join(dir, 'consul')))
    .join(delimiter)
}

describe('npm run agent', { timeout: SUITE_TIMEOUT_MS }, () => {
  it('starts a dev agent, prints the export line of its address, and stops on Ctrl-C', async () => {
    const port = await freePort()
    // Its own process group, so that the test's Ctrl-C reaches the group as a terminal's does.
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'scripts/agent.ts', '--port', `${port}`],
      {
        cwd: root,
        // PATH without its consul, as on a machine where scripts/consul.sh fetched one.
        env: { ...process.env, PATH: pathWithoutConsul() },
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    let output = ''
    child.stdout.on('data', (d: Buffer) => (output += d.toString()))
    child.stderr.on('data', (d: Buffer) => (output += d.toString()))
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
    try {
      // The script gives an agent 20 s to be ready, and starts another (up to three) when one of its
      // ports was taken meanwhile: wait for the line, or until the script exits without it.
      const addr = await eventually(
        'the export line',
        () => {
          const line = /^ {2}export CONSUL_HTTP_ADDR=(\S+)$/m.exec(output)?.[1]
          if (line === undefined && child.exitCode !== null)
            throw new Error(`npm run agent exited with ${child.exitCode} first`)
          return line
        },
        60_000,
      ).catch((error: unknown) => {
        throw new Error(`${error instanceof Error ? error.message : String(error)}:\n${output}`)
      })
      assert.equal(addr, `127.0.0.1:${port}`)
      const leader = await fetch(`http://${addr}/v1/status/leader`)
      assert.match(await leader.text(), /^"127\.0\.0\.1:\d+"/)

      // The consul binary it runs is named, with how to run its CLI when PATH has no such consul.
      const bin = /^Consul dev agent (\S+) \(pid/m.exec(output)?.[1]
      assert.ok(bin !== undefined, output)
      assert.match(
        output,
        new RegExp(`^ {2}alias consul=${bin.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'),
      )

      const pid = Number(/\(pid (\d+)\)/.exec(output)?.[1])
      assert.ok(pid > 0, `no agent pid in:\n${output}`)
      process.kill(-(child.pid ?? 0), 'SIGINT')
      const [code] = await exited
      assert.equal(code, 0, output)
      assert.match(output, new RegExp(`Consul agent pid ${pid} stopped`))
      assert.ok(await processGone(pid), `consul ${pid} still runs after Ctrl-C`)
    } finally {
      if (child.exitCode === null && child.signalCode === null)
        process.kill(-(child.pid ?? 0), 'SIGKILL')
    }
  })
})
