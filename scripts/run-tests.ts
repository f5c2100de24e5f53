// The test stage of `npm test` (lint, typecheck and build run before it, see package.json).
//
// Finds or fetches Consul, starts one shared dev agent, runs every unit test (test/unit), marble
// spec (marbles/) and integration test (test/integration) with Node's test runner, stops the
// agent, and checks that no `consul` process started during the run is still alive and that no
// test wrote inside the repository. Exits non-zero on any failure, on Ctrl-C, when a consul
// process was left behind, and when a file of the repository was written, added or removed.
//
//   tsx scripts/run-tests.ts                      every unit, marble and integration test
//   tsx scripts/run-tests.ts --unit               the unit tests and marble specs only
//   tsx scripts/run-tests.ts <file>... [--test-name-pattern=<regexp>]
//
// Consul is found and an agent started only when a file to run needs one: the unit tests and
// marble specs never do. Options beginning with `--` other than --unit go to Node's test runner.
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { join, relative, resolve, sep } from 'node:path'
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

/** The suites whose tests run without a Consul agent: their folder and their files' suffix. */
const AGENTLESS = [
  { dir: join(root, 'test/unit'), suffix: '.test.ts' },
  { dir: join(root, 'marbles'), suffix: '.spec.ts' },
]

const unitFiles = (): string[] => AGENTLESS.flatMap(({ dir, suffix }) => findFiles(dir, suffix))

/** The files to run and the options for Node's test runner, from the command line. */
function parseArgs(args: readonly string[]): { files: string[]; nodeOptions: string[] } {
  const named = args.filter((a) => !a.startsWith('--')).map((f) => resolve(f))
  const nodeOptions = args.filter((a) => a.startsWith('--') && a !== '--unit')
  if (args.includes('--unit')) return { files: [...unitFiles(), ...named], nodeOptions }
  if (named.length > 0) return { files: named, nodeOptions }
  return {
    files: [...unitFiles(), ...findFiles(join(root, 'test/integration'), '.test.ts')],
    nodeOptions,
  }
}

/** Folders the check leaves out: git's, the dependencies, and the runner's own pid files. */
const UNWATCHED = new Set(['.git', 'node_modules', '.test-run'])

/**
 * The files git tracks, which the check leaves to the developer: editing the sources while the
 * tests run is no test's doing, and a test that writes a tracked file shows in `git status` (CI
 * fails on it). Empty outside a git clone, where every file is watched.
 */
const tracked: ReadonlySet<string> = (() => {
  try {
    return new Set(
      execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' }).split('\0'),
    )
  } catch {
    return new Set<string>()
  }
})()

/**
 * Each file of the repository that git does not track (outside .git, node_modules and .test-run),
 * with its mtime and size: what a test could leave behind, such as a drawing in .cache/.
 */
function repositoryFiles(dir = root, found = new Map<string, string>()): Map<string, string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) {
      if (!(dir === root && UNWATCHED.has(entry.name))) repositoryFiles(path, found)
    } else if (entry.isFile() && !tracked.has(relative(root, path))) {
      const { mtimeMs, size } = statSync(path)
      found.set(relative(root, path), `${mtimeMs} ${size}`)
    }
  }
  return found
}

/** Where the nemesis runs write the reports asked for ($NEMESIS_OUT, $NEMESIS_HISTORY), if anywhere. */
const askedOutputs = ['NEMESIS_OUT', 'NEMESIS_HISTORY'].flatMap((name) => {
  const value = process.env[name]
  return value ? [resolve(value)] : []
})

/**
 * The files written, added or removed between two listings of `repositoryFiles`, but for the
 * reports the run was asked to write.
 */
function writtenFiles(before: Map<string, string>, after: Map<string, string>): string[] {
  const written = [...after].filter(([path, stamp]) => before.get(path) !== stamp)
  const removed = [...before.keys()].filter((path) => !after.has(path))
  const asked = (path: string): boolean =>
    askedOutputs.some((out) => {
      const at = resolve(root, path)
      return at === out || at.startsWith(out + sep)
    })
  return [...written.map(([path]) => path), ...removed.map((path) => `${path} (removed)`)]
    .filter((path) => !asked(path.replace(/ \(removed\)$/, '')))
    .sort()
}

async function main(): Promise<number> {
  const { files, nodeOptions } = parseArgs(process.argv.slice(2))
  if (files.length === 0) {
    console.error('run-tests: no test files found')
    return 1
  }
  const missing = files.filter((f) => !existsSync(f))
  if (missing.length > 0) {
    console.error(
      `run-tests: there is no test file ${missing.map((f) => relative(root, f)).join(', ')}. ` +
        'Name test files by their path from here; give an option of the test runner with its ' +
        'value after "=", e.g. --test-name-pattern=<regexp>.',
    )
    return 1
  }
  const needsAgent = files.some((f) => !AGENTLESS.some(({ dir }) => f.startsWith(dir + sep)))

  const bin = needsAgent ? consulBin() : undefined
  const runDir = join(root, '.test-run', String(process.pid))
  mkdirSync(runDir, { recursive: true })
  if (bin) process.env['CONSUL_BIN'] = bin
  process.env['RXSEM_TEST_RUN_DIR'] = runDir
  const filesBefore = repositoryFiles()

  let agent: ConsulAgent | undefined
  let interrupted: NodeJS.Signals | undefined
  let testCode = 1
  try {
    agent = needsAgent ? await startAgent() : undefined
    console.log(
      `run-tests: ${agent ? `Consul ${bin} serving on ${agent.addr}` : 'no Consul agent (none needed)'}; ` +
        `${files.length} test files`,
    )
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--test',
        '--test-reporter=spec',
        '--test-concurrency=3',
        `--test-timeout=${fileTimeoutMs()}`,
        ...nodeOptions,
        ...files.map((f) => relative(root, f)),
      ],
      {
        cwd: root,
        stdio: 'inherit',
        env: agent ? { ...process.env, RXSEM_TEST_CONSUL_ADDR: agent.addr } : process.env,
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
  const written = writtenFiles(filesBefore, repositoryFiles())
  if (written.length > 0) {
    console.error(
      `run-tests: FAILED: files of the repository were written during the run: ${written.join(', ')}. ` +
        'A test must write only under a folder of its own in os.tmpdir(), and remove it. ' +
        'If you made these files yourself while the tests ran, run them again.',
    )
    return 1
  }
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
