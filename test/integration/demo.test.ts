// `npm run demo` end to end: the demo starts its own Consul, runs its story, writes its picture
// and stops the agent, by itself and in time. The log is checked for real transitions, the SVG
// against the log, and the agent's pid for being gone. The picture goes to a temporary folder
// (RXSEM_DEMO_SVG), never over the one a developer's own `npm run demo` drew; the default place
// is checked to be one git ignores.
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { describe, it } from 'node:test'
import { DEFAULT_SVG } from '../../scripts/demo/svg.js'
import { processGone } from '../support/consul-agent.js'
import { SUITE_TIMEOUT_MS } from '../support/processes.js'

const root = resolve(import.meta.dirname, '../..')
const DEMO_TIMEOUT_MS = 45_000

interface DemoRun {
  readonly code: number | null
  readonly output: string
  readonly ms: number
}

/** Runs the demo as a user would (no terminal), killing it if it outlives `timeoutMs`. */
function runDemo(timeoutMs: number, svg: string): Promise<DemoRun> {
  const started = Date.now()
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/demo.ts'], {
    cwd: root,
    env: { ...process.env, RXSEM_DEMO_SVG: svg },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout.on('data', (d: Buffer) => (output += d.toString()))
  child.stderr.on('data', (d: Buffer) => (output += d.toString()))
  return new Promise<DemoRun>((done, fail) => {
    // SIGINT lets the demo stop its agent; the test then fails on the exit code and the time.
    const timer = setTimeout(() => child.kill('SIGINT'), timeoutMs)
    child.once('error', fail)
    child.once('exit', (code) => {
      clearTimeout(timer)
      done({ code, output, ms: Date.now() - started })
    })
  })
}

describe('npm run demo', { timeout: SUITE_TIMEOUT_MS }, () => {
  it('draws its picture by default to a file that git ignores', () => {
    // git check-ignore exits 1 for a path git would list as untracked, whether it exists or not.
    execFileSync('git', ['check-ignore', '--quiet', '--no-index', DEFAULT_SVG], { cwd: root })
  })

  it(
    'runs the story on its own Consul, writes the timeline SVG where it is told and leaves no process behind',
    {
      timeout: DEMO_TIMEOUT_MS + 15_000,
    },
    async (t) => {
      const dir = mkdtempSync(join(tmpdir(), 'rxsem-demo-'))
      t.after(() => rmSync(dir, { recursive: true, force: true }))
      const svg = join(dir, 'demo-timeline.svg')
      const run = await runDemo(DEMO_TIMEOUT_MS, svg)
      const log = run.output
      assert.equal(run.code, 0, `demo exited ${run.code} after ${run.ms} ms:\n${log}`)
      assert.ok(run.ms < DEMO_TIMEOUT_MS, `took ${run.ms} ms`)
      assert.ok(!log.includes('\x1b['), 'no escape codes when stdout is not a terminal')

      const agent = /consul agent pid (\d+) on 127\.0\.0\.1:\d+/.exec(log)
      assert.ok(agent?.[1], `no agent pid in the log:\n${log}`)
      const pid = Number(agent[1])
      assert.match(log, new RegExp(`consul agent pid ${pid} stopped`))
      assert.ok(await processGone(pid), `consul agent ${pid} still runs after the demo`)

      const acquired = [...log.matchAll(/^t=\S+ +(\w+) acquired a slot \(fencing token (\d+)\)/gm)]
      const tokens = acquired.map((m) => BigInt(m[2] ?? '0'))
      assert.ok(acquired.length >= 6, `only ${acquired.length} acquisitions:\n${log}`)
      assert.ok(
        tokens.every((token, i) => i === 0 || token > (tokens[i - 1] ?? 0n)),
        `fencing tokens not increasing: ${tokens.join(', ')}`,
      )
      assert.match(log, /^t=\S+ +\w+ released its slot after/m)

      // The operator's victim loses its slot, and a waiter gets it afterwards.
      const operator = /^t=\S+ +operator destroys (\w+)'s session/m.exec(log)
      assert.ok(operator?.[1], `no operator line:\n${log}`)
      const afterCut = log.slice(operator.index)
      const lost = new RegExp(
        `^t=\\S+ +${operator[1]} lost its slot \\((removed|session-invalidated)\\) after \\S+: \\S`,
        'm',
      ).exec(afterCut)
      assert.ok(lost, `${operator[1]} never lost its slot:\n${log}`)
      assert.match(afterCut.slice(lost.index), /acquired a slot/)
      // The reader is told what the reason and the fencing tokens mean.
      assert.match(log, /a fencing token is Consul's index of the \.lock write that granted/)

      const most = /max concurrent holders: (\d+) \(limit 2\)/.exec(log)
      assert.ok(most?.[1] && Number(most[1]) <= 2, `limit not checked or exceeded:\n${log}`)
      assert.match(log, /Consul after the run: .*\(clean\)/)

      assert.ok(log.split('\n').includes(`timeline picture: ${svg}`), `no picture line:\n${log}`)
      assert.ok(existsSync(svg), `no SVG at ${svg}`)
      const picture = readFileSync(svg, 'utf8')
      assert.match(picture, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/)
      const bars = [...picture.matchAll(/class="hold" data-name="(\w+)" data-token="(\d+)"/g)]
      assert.deepEqual(
        bars.map((b) => `${b[1]} ${b[2]}`),
        acquired.map((a) => `${a[1]} ${a[2]}`),
        'one bar per holding interval of the log, with its fencing token',
      )
      assert.match(picture, new RegExp(`operator destroys ${operator[1]}'s session`))
      assert.ok(!/(href|src)=/.test(picture), 'no external resources')
    },
  )
})
