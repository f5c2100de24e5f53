// The README's API tour is examples/tour.ts, word for word, and it runs: against Consul it does
// its work, closes everything and exits by itself, leaving no session and no contender behind.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { promisify } from 'node:util'
import { after, before, describe, it } from 'node:test'
import { sharedAgent } from '../support/consul-agent.js'
import { deleteTree, holdersOf, listPrefix, readLock, sessionsNamed } from '../support/observe.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'

const root = resolve(import.meta.dirname, '../..')
const run = promisify(execFile)
const TOUR_TIMEOUT_MS = 30_000

describe('the API tour (examples/tour.ts)', { timeout: SUITE_TIMEOUT_MS }, () => {
  let consul: Awaited<ReturnType<typeof sharedAgent>>
  before(async () => {
    consul = await sharedAgent()
  })
  after(async () => {
    await deleteTree(consul.url, 'service/db/lock')
    await deleteTree(consul.url, 'service/scheduler/leader')
    await consul.close()
  })

  it('is the code the README shows', () => {
    const readme = readFileSync(resolve(root, 'README.md'), 'utf8')
    const tour = readFileSync(resolve(root, 'examples/tour.ts'), 'utf8')
    const shown = /\(examples\/tour\.ts\)[\s\S]*?\n```ts\n([\s\S]*?)```\n/.exec(readme)?.[1]
    assert.ok(shown, 'the README has no ```ts block after its link to examples/tour.ts')
    assert.equal(shown, tour)
  })

  it('runs against Consul, exits by itself in time and leaves no session or contender', async () => {
    const started = Date.now()
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'examples/tour.ts'], {
      cwd: root,
      env: { ...process.env, CONSUL_HTTP_ADDR: consul.addr },
      timeout: TOUR_TIMEOUT_MS,
    }).catch((error: { code?: number; signal?: string; stdout?: string; stderr?: string }) =>
      assert.fail(
        `the tour exited ${error.code ?? error.signal} after ${Date.now() - started} ms:\n` +
          `${error.stdout}\n${error.stderr}`,
      ),
    )
    assert.ok(Date.now() - started < TOUR_TIMEOUT_MS)
    for (const line of ['worker: step 0', 'migrated', 'leader: node-a', 'scheduler: tick 2']) {
      assert.ok(stdout.split('\n').includes(line), `no "${line}" in:\n${stdout}`)
    }
    assert.match(stdout, /^wrote batch 2 with fencing token \d+$/m)
    assert.match(stdout, /^metrics: .*\brxsem\.acquisitions\b.*\brxsem\.hold\.duration\b/m)

    // What stays is what `consul lock` leaves too: each prefix's `.lock`, with no holder.
    const entries = [
      ...(await listPrefix(consul.url, 'service/db')),
      ...(await listPrefix(consul.url, 'service/scheduler')),
    ]
    assert.deepEqual(entries.map((e) => e.Key).sort(), [
      'service/db/lock/.lock',
      'service/scheduler/leader/.lock',
    ])
    assert.deepEqual(holdersOf((await readLock(consul.url, 'service/db/lock'))?.body), [])
    assert.equal(entries.find((e) => e.Key.startsWith('service/scheduler'))?.Session, undefined)
    const sessions = await sessionsNamed(consul.url, '')
    assert.deepEqual(
      sessions.filter((s) => / service\/(db|scheduler)\//.test(s.Name)),
      [],
      'sessions left',
    )
  })
})
