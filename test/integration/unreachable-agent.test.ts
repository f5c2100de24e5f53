// A newcomer's first contact with the library when there is no agent at the address: closing a
// contender that never reached Consul ends it quietly, and a contender that cannot reach any
// agent says so within its start-up timeout instead of waiting silently for ever.
import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { Observable } from 'rxjs'
import {
  createConsulClient,
  leaderElection,
  semaphore,
  SemaphoreError,
  tryAcquire,
  withSlot,
  type ConsulClient,
} from '../../src/index.js'
import { freePort, sharedAgent, uniquePrefix } from '../support/consul-agent.js'
import { eventually } from '../support/observe.js'
import { killTree, SUITE_TIMEOUT_MS } from '../support/processes.js'

const fixture = resolve(import.meta.dirname, 'fixtures/close-unreachable.ts')

/** Everything a bare subscriber of `source` would have been told. */
function record<T>(source: Observable<T>) {
  const seen = { values: [] as T[], error: undefined as unknown, completed: false }
  source.subscribe({
    next: (value) => seen.values.push(value),
    error: (error: unknown) => (seen.error = error),
    complete: () => (seen.completed = true),
  })
  return seen
}

describe('a contender whose agent cannot be reached', { timeout: SUITE_TIMEOUT_MS }, () => {
  let nobody: ConsulClient
  let address: string
  before(async () => {
    // A port nothing listens on: every connection is refused at once.
    address = `127.0.0.1:${await freePort()}`
    nobody = createConsulClient({ address })
  })
  after(async () => {
    await nobody.close()
  })

  for (const kind of ['semaphore', 'leader election'] as const) {
    it(`completes holding$ and state$ of a closed ${kind}, with no error to a subscriber`, async () => {
      const prefix = uniquePrefix('close-unreachable')
      const contender =
        kind === 'semaphore'
          ? semaphore({ prefix, limit: 1, consul: nobody })
          : leaderElection({ prefix, consul: nobody })
      const holding = record(contender.holding$)
      const states = record<{ lastError?: unknown }>(contender.state$)
      await eventually('a failed attempt', () =>
        states.values.some((s) => s.lastError !== undefined) ? true : undefined,
      )
      await contender.close()
      await eventually(
        'holding$ and state$ complete',
        () => (holding.completed && states.completed) || holding.error || states.error || undefined,
      )
      assert.equal(holding.error, undefined, 'holding$ errored after close()')
      assert.equal(states.error, undefined, 'state$ errored after close()')
      assert.deepEqual(holding.values, [false])
    })

    it(`lets a process with a bare subscriber to a closed ${kind} exit with status 0`, async () => {
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', fixture, kind === 'semaphore' ? 'semaphore' : 'leader'],
        {
          env: { PATH: process.env['PATH'], CONSUL_HTTP_ADDR: address },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      )
      let out = ''
      let err = ''
      child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
      child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()))
      const code = await new Promise<number | null>((done) => {
        const killer = setTimeout(() => child.pid && killTree(child.pid, 'SIGKILL'), 60_000)
        child.once('close', (status) => {
          clearTimeout(killer)
          done(status)
        })
      })
      assert.equal(code, 0, `exit status ${code}; stderr: ${err}`)
      assert.equal(out, 'closed\n')
      assert.equal(err, '')
    })
  }
})
