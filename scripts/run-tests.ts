// The test stage of `npm test` (lint, typecheck and build run before it, see package.json).
//
// Finds or fetches Consul, starts one shared dev agent, runs every unit test (test/unit), marble
// spec (marbles/) and integration test (test/integration) with Node's test runner, stops the
// agent, and checks that no `consul` process started during the run is still alive. Exits non-zero
// on any failure, on Ctrl-C, and when a consul process was left behind.
import { spawn } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import { consulBin, startAgent, type ConsulAgent } from '../test/support/consul-agent.js'

const root = resolve(import.meta.dirname, '..')

function findFiles(dir: string, suffix: string): string[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir)
    .flatMap((name) => {
      const path = join(dir, name)
      return statSync(path).isDirectory()
        ? findFiles(path, suffix)
        : path.endsWith(suffix)
          ? [path]
          : []
    })
    .sort()
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** Kills consul processes recorded in the run folder that are still alive; returns their pids. */
function sweepLeftovers(runDir: string): number[] {
  if (!existsSync(runDir)) return []
  const left: number[] = []
  for (const name of readdirSync(runDir)) {
    const pid = Number(readFileSync(join(runDir, name), 'utf8').trim())
    if (Number.isInteger(pid) && pid > 0 && alive(pid)) {
      left.push(pid)
      process.kill(pid, 'SIGKILL')
    }
  }
  return left
}

/**
 * How long one test file may run: $RXSEM_TEST_FILE_TIMEOUT_MS (for longer runs of the nemesis
 * suite, NEMESIS_SECONDS), else 300 s. The suites that run processes stop themselves earlier
 * (SUITE_TIMEOUT_MS), so that a hang is named; 300 s leaves room for the slowest files on a loaded
 * two-core machine (the package test's builds and type-checks, the soak beside the nemesis runs).
 */
function fileTimeoutMs(): number {
  const given = Number(process.env['RXSEM_TEST_FILE_TIMEOUT_MS'])
  return Number.isInteger(given) && given > 0 ? given : 300_000
}

async function main(): Promise<number> {
  const only = process.argv.slice(2)
  const files =
    only.length > 0
      ? only.map((f) => resolve(f))
      : [
          ...findFiles(join(root, 'test/unit'), '.test.ts'),
          ...findFiles(join(root, 'marbles'), '.spec.ts'),
          ...findFiles(join(root, 'test/integration'), '.test.ts'),
        ]
  if (files.length === 0) {
    console.error('run-tests: no test files found')
    return 1
  }

  const bin = consulBin()
  const runDir = join(root, '.test-run', String(process.pid))
  mkdirSync(runDir, { recursive: true })
  process.env['CONSUL_BIN'] = bin
  process.env['RXSEM_TEST_RUN_DIR'] = runDir

  let agent: ConsulAgent | undefined
  let interrupted: NodeJS.Signals | undefined
  let testCode = 1
  try {
    agent = await startAgent()
    console.log(`run-tests: Consul ${bin} serving on ${agent.addr}; ${files.length} test files`)
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--test',
        '--test-reporter=spec',
        '--test-concurrency=3',
        `--test-timeout=${fileTimeoutMs()}`,
        ...files.map((f) => relative(root, f)),
      ],
      {
        cwd: root,
        stdio: 'inherit',
        env: { ...process.env, RXSEM_TEST_CONSUL_ADDR: agent.addr },
      },
    )
    const forward = (signal: NodeJS.Signals): void => {
      interrupted = signal
      child.kill(signal)
    }
    process.on('SIGINT', forward)
    process.on('SIGTERM', forward)
    testCode = await new Promise<number>((done) => {
      child.once('exit', (code, signal) => done(code ?? (signal ? 1 : 0)))
    })
    process.off('SIGINT', forward)
    process.off('SIGTERM', forward)
  } finally {
    await agent?.stop()
  }

  const leftovers = sweepLeftovers(runDir)
  rmSync(runDir, { recursive: true, force: true })
  if (leftovers.length > 0) {
    console.error(
      `run-tests: FAILED teardown: ${leftovers.length} consul process(es) outlived their tests ` +
        `(pids ${leftovers.join(', ')}; now killed). A test did not stop the agent it started.`,
    )
    return 1
  }
  if (interrupted) return interrupted === 'SIGINT' ? 130 : 143
  return testCode
}

main().then(
  (code) => {
    process.exitCode = code
  },
  (error: unknown) => {
    console.error('run-tests:', error)
    process.exitCode = 1
  },
)
