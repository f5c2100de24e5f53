// docs/observability.md's example is examples/observability.ts, word for word, and it does what
// the page says: with the real Prometheus exporter on a loopback port, a scrape of /metrics while
// it holds a slot shows the library's metrics with their values; Ctrl-C releases, prints the
// spans and exits, leaving no session behind.
import assert from 'node:assert/strict'
import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { freePort, sharedAgent } from '../support/consul-agent.js'
import { deleteTree, holdersOf, readLock, sessionsNamed } from '../support/observe.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'

const root = resolve(import.meta.dirname, '../..')
const PREFIX = 'service/reports/lock'

/** The value of the sample `name{labels}` in a Prometheus text scrape whose labels include these. */
function sample(scrape: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of scrape.split('\n')) {
    const match = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})? (\S+)$/.exec(line)
    if (match?.[1] !== name) continue
    const has = Object.entries(labels).every(([label, value]) =>
      (match[2] ?? '').includes(`${label}="${value}"`),
    )
    if (has) return Number(match[3])
  }
  return undefined
}

describe(
  'the observability example (examples/observability.ts)',
  { timeout: SUITE_TIMEOUT_MS },
  () => {
    let consul: Awaited<ReturnType<typeof sharedAgent>>
    let child: ChildProcess | undefined
    before(async () => {
      consul = await sharedAgent()
    })
    after(async () => {
      if (child !== undefined && child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL')
        await once(child, 'exit')
      }
      await deleteTree(consul.url, PREFIX)
      await consul.close()
    })

    it('is the code docs/observability.md shows', () => {
      const page = readFileSync(resolve(root, 'docs/observability.md'), 'utf8')
      const example = readFileSync(resolve(root, 'examples/observability.ts'), 'utf8')
      const shown = /\(\.\.\/examples\/observability\.ts\)[\s\S]*?\n```ts\n([\s\S]*?)```\n/.exec(
        page,
      )?.[1]
      assert.ok(shown, 'the page has no ```ts block after its link to examples/observability.ts')
      assert.equal(shown, example)
    })

    it('serves the metrics to a Prometheus scrape while it holds, and releases and exits on Ctrl-C', async () => {
      const port = await freePort()
      child = spawn(process.execPath, ['--import', 'tsx', 'examples/observability.ts'], {
        cwd: root,
        env: { ...process.env, CONSUL_HTTP_ADDR: consul.addr, METRICS_PORT: String(port) },
        stdio: ['ignore', 'pipe', 'pipe'],
      })
      let stdout = ''
      let stderr = ''
      child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
      child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
      const exited = once(child, 'exit')
      const ready = new Promise<void>((done, fail) => {
        child?.stdout?.on('data', () => stdout.includes('holding a slot') && done())
        void exited.then(() => fail(new Error(`the example exited early:\n${stdout}\n${stderr}`)))
      })
      await ready
      assert.match(stdout, new RegExp(`metrics on http://127\\.0\\.0\\.1:${port}/metrics`))

      const response = await fetch(`http://127.0.0.1:${port}/metrics`)
      assert.equal(response.status, 200)
      assert.match(response.headers.get('content-type') ?? '', /^text\/plain/)
      const scrape = await response.text()
      const own = { rxsem_prefix: PREFIX, rxsem_limit: '3', rxsem_protocol: 'semaphore' }
      assert.equal(sample(scrape, 'rxsem_acquisitions_total', own), 1, scrape)
      assert.equal(sample(scrape, 'rxsem_wait_duration_count', own), 1, scrape)
      assert.ok((sample(scrape, 'rxsem_wait_duration_sum', own) ?? -1) >= 0, scrape)
      assert.equal(
        sample(scrape, 'rxsem_contenders', { ...own, rxsem_phase: 'holding' }),
        1,
        scrape,
      )
      for (const endpoint of ['session.create', 'txn']) {
        const requests = sample(scrape, 'rxsem_consul_requests_total', {
          rxsem_consul_endpoint: endpoint,
        })
        assert.ok((requests ?? 0) >= 1, `no ${endpoint} request in:\n${scrape}`)
      }
      assert.match(scrape, /^# TYPE rxsem_wait_duration histogram$/m)
      assert.match(scrape, /^# TYPE rxsem_contenders gauge$/m)

      child.kill('SIGINT')
      const [code, signal] = (await exited) as [number | null, NodeJS.Signals | null]
      assert.equal(code, 0, `exited ${code ?? signal}:\n${stderr}`)
      // The spans the batch processor still held, printed by the console exporter at shutdown.
      assert.match(stdout, /name: 'rxsem\.wait'/)
      assert.match(stdout, /name: 'rxsem\.tenure'/)
      assert.match(stdout, /'rxsem\.reason': 'released'/)
      assert.deepEqual(holdersOf((await readLock(consul.url, PREFIX))?.body), [])
      const left = (await sessionsNamed(consul.url, '')).filter((s) => s.Name.endsWith(PREFIX))
      assert.deepEqual(left, [], 'sessions left')
    })
  },
)
