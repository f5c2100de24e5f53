// `npm run demo`: the library doing its job against a real Consul, in about 20 seconds.
//
// Starts a local Consul dev agent (scripts/consul.sh finds or fetches the binary), runs six
// contenders for two slots, lets an operator destroy a holder's session, shows a live timeline,
// checks that never more than `limit` held at once, writes an SVG of the run, and stops the agent
// on every way out (done, error, Ctrl-C). Every line it prints comes from a real state$ emission.
//
// Options: RXSEM_DEMO_SVG=<path> or `--svg <path>`; by default the picture goes to
// .cache/demo-timeline.svg, which git ignores. `npm run demo:docs` updates docs/demo-timeline.svg.
// RXSEM_DEMO_RECORD=<path> or `--record <path>` also writes the run's timeline as JSON, which
// `Timeline.replay` turns back into the same picture (the layout's tests use one such run).
import { randomUUID } from 'node:crypto'
import { accessSync, constants, mkdirSync, writeFileSync } from 'node:fs'
import { dirname, relative, resolve } from 'node:path'
import { performance } from 'node:perf_hooks'
import { createConsulClient } from '../src/index.js'
import { consulBin, startAgent, type ConsulAgent } from '../test/support/consul-agent.js'
import { consulLeftovers, describeLeftovers } from './demo/leftovers.js'
import { describeEvent } from './demo/event-log.js'
import { LIMIT, NAMES, runStory } from './demo/story.js'
import { DEFAULT_SVG, timelineSvg } from './demo/svg.js'
import { createView } from './demo/terminal.js'
import { Timeline } from './demo/timeline.js'

const root = resolve(import.meta.dirname, '..')
const view = createView(process.stdout)
const say = (line: string): void => view.log(line)
const stop = new AbortController()
let interrupted: NodeJS.Signals | undefined

/** The value of `--<flag> <value>`, else of the environment variable `variable`. */
function option(flag: string, variable: string): string | undefined {
  const at = process.argv.indexOf(`--${flag}`)
  return (at >= 0 ? process.argv[at + 1] : undefined) || process.env[variable] || undefined
}

function svgPath(): string {
  return resolve(option('svg', 'RXSEM_DEMO_SVG') ?? resolve(root, DEFAULT_SVG))
}

function onSignal(signal: NodeJS.Signals): void {
  if (interrupted) {
    // A second Ctrl-C: leave now; consul-agent's exit hook still kills the agent.
    process.exit(130)
  }
  interrupted = signal
  say(`${signal}: giving the slots back and stopping Consul (Ctrl-C again to quit at once)`)
  stop.abort()
}

/** The Consul binary, found or fetched by scripts/consul.sh, checked before anything starts. */
function provisionConsul(): string {
  let bin: string
  try {
    bin = consulBin()
  } catch (error) {
    throw new Error(`could not provision Consul: scripts/consul.sh failed (its message is above)`, {
      cause: error,
    })
  }
  try {
    accessSync(bin, constants.X_OK)
  } catch {
    // The harness would spawn it anyway and crash on the spawn error: say what is wrong instead.
    throw new Error(`${bin} is not an executable Consul binary; fix or unset CONSUL_BIN`)
  }
  return bin
}

async function consulVersion(url: string): Promise<string> {
  const res = await fetch(`${url}/v1/agent/self`)
  const self = (await res.json()) as { Config?: { Version?: string } }
  return self.Config?.Version ?? 'unknown version'
}

async function main(): Promise<number> {
  const output = svgPath()
  const recordPath = option('record', 'RXSEM_DEMO_RECORD')
  let agent: ConsulAgent | undefined
  try {
    say('starting a local Consul dev agent (scripts/consul.sh finds or fetches the binary) ...')
    const bin = provisionConsul()
    try {
      agent = await startAgent({ node: `rxsem-demo-${randomUUID().slice(0, 8)}` })
    } catch (error) {
      throw new Error(`could not start Consul (${bin}): ${String(error)}`, { cause: error })
    }
    const version = await consulVersion(agent.url)
    say(`consul agent pid ${agent.pid} on ${agent.addr} (Consul ${version}, dev mode, in memory)`)
    if (interrupted) return 130

    const prefix = `rxsem-demo/${randomUUID().slice(0, 8)}`
    const client = createConsulClient({ address: agent.addr })
    const start = performance.now()
    const timeline = new Timeline(
      NAMES,
      LIMIT,
      () => (performance.now() - start) / 1000,
      (event) => say(describeEvent(event)),
    )
    const runAt = new Date()
    say(`${NAMES.length} contenders, limit ${LIMIT}, prefix ${prefix}`)
    say(
      "a fencing token is Consul's index of the .lock write that granted the slot: it only " +
        "grows, but with every write to Consul, so it starts where the agent's own writes left " +
        'it and skips numbers between tenures',
    )
    view.follow(timeline, `rx-consul-semaphore demo · limit ${LIMIT} · Consul on ${agent.addr}`)
    try {
      await runStory({ client, consulUrl: agent.url, prefix, timeline, stop, say })
    } finally {
      timeline.finish()
      view.stop()
      await client.close()
    }
    if (interrupted) return 130

    const leftovers = await consulLeftovers(agent.url, prefix)
    say(`max concurrent holders: ${timeline.maxConcurrent} (limit ${LIMIT})`)
    say(
      `${timeline.holds.length} tenures, fencing tokens in order of acquisition: ` +
        timeline.holds.map((h) => h.fencingToken).join(' < '),
    )
    say(`Consul after the run: ${describeLeftovers(leftovers)}`)
    mkdirSync(dirname(output), { recursive: true })
    writeFileSync(output, timelineSvg(timeline, { runAt, consulVersion: version }))
    const shown = relative(process.cwd(), output)
    say(`timeline picture: ${shown.startsWith('..') ? output : shown}`)
    if (recordPath) {
      mkdirSync(dirname(resolve(recordPath)), { recursive: true })
      writeFileSync(resolve(recordPath), `${JSON.stringify(timeline.record(), null, 1)}\n`)
      say(`timeline record: ${recordPath}`)
    }

    const problems = [
      ...(timeline.overLimitAt.length > 0
        ? [
            `more than ${LIMIT} held at once (at t=${timeline.overLimitAt.map((t) => t.toFixed(1)).join(', ')}s)`,
          ]
        : []),
      ...(leftovers.clean ? [] : ['the contenders left sessions or keys in Consul']),
      ...(timeline.cuts.length === 0 ? ['the operator never found a holder'] : []),
    ]
    for (const problem of problems) console.error(`demo: FAILED: ${problem}`)
    return problems.length > 0 ? 1 : 0
  } finally {
    view.stop()
    if (agent) {
      await agent.stop()
      say(`consul agent pid ${agent.pid} stopped`)
    }
  }
}

process.on('SIGINT', onSignal)
process.on('SIGTERM', onSignal)
void main()
  .catch((error: unknown) => {
    if (interrupted) return 130
    console.error(`demo: FAILED: ${error instanceof Error ? error.message : String(error)}`)
    return 1
  })
  .then((code) => {
    process.exitCode = code
    process.off('SIGINT', onSignal)
    process.off('SIGTERM', onSignal)
    // Everything was torn down; should something still hold the event loop, do not hang on it.
    setTimeout(() => {
      console.error('demo: something kept running after the teardown; exiting anyway')
      process.exit(code === 0 ? 1 : code)
    }, 3000).unref()
  })
