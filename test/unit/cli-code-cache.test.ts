// The code cache of the rxsem bin (src/cli/code-cache.ts): where it lives, when a run uses it,
// saves it, or leaves it alone. runBundle runs in fresh Node processes (src/cli/code-cache.ts,
// bundled by esbuild as the bin bundles it), on a small bundle of its own, with the cache in a
// temporary folder.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { after, before, describe, it } from 'node:test'
import {
  CACHE_MAX_AGE_MS,
  cacheDir,
  cacheFile,
  type CacheContext,
} from '../../src/cli/code-cache.js'
import { buildSync } from 'esbuild'

const run = promisify(execFile)
const uid = process.getuid?.() ?? 0

describe('the code cache of the rxsem bin: where', () => {
  const context: CacheContext = { env: {}, argv: ['node', 'rxsem', 'run'], execArgv: [], uid: 1000 }
  const bundle = { size: 932_000, mtimeMs: 1_700_000_000_123.5 }

  it("is rxsem-<uid> in Node's compile cache folder, NODE_COMPILE_CACHE or the default", () => {
    assert.equal(cacheDir(context), join(tmpdir(), 'node-compile-cache', 'rxsem-1000'))
    assert.equal(
      cacheDir({ ...context, env: { NODE_COMPILE_CACHE: '/var/cache/n' } }),
      '/var/cache/n/rxsem-1000',
    )
  })

  it("is nowhere when Node's switch turns the compile cache off, or without a user id", () => {
    assert.equal(cacheDir({ ...context, env: { NODE_DISABLE_COMPILE_CACHE: '1' } }), undefined)
    assert.equal(cacheDir({ ...context, uid: undefined }), undefined)
    assert.equal(cacheFile({ ...context, uid: undefined }, 'b', bundle), undefined)
  })

  it('is a file per build, bundle file, command, --leader, --help and V8 flags; none for a flag or a path', () => {
    const file = cacheFile(context, 'b1', bundle)
    assert.match(
      file ?? '',
      /\/rxsem-1000\/b1-932000-1700000000123-run-[0-9a-f]{8}-v[\d.]+-\w+\.v8cache$/,
    )
    const others = [
      cacheFile(context, 'b2', bundle),
      cacheFile(context, 'b1', { ...bundle, size: 932_001 }),
      cacheFile(context, 'b1', { ...bundle, mtimeMs: 1_700_000_000_999 }),
      cacheFile({ ...context, argv: ['node', 'rxsem', 'status'] }, 'b1', bundle),
      cacheFile(
        { ...context, argv: ['node', 'rxsem', 'run', '--leader', '--', 'x'] },
        'b1',
        bundle,
      ),
      cacheFile({ ...context, execArgv: ['--cpu-prof'] }, 'b1', bundle),
      cacheFile({ ...context, env: { NODE_OPTIONS: '--max-old-space-size=100' } }, 'b1', bundle),
      cacheFile({ ...context, argv: ['node', 'rxsem', 'run', '--help'] }, 'b1', bundle),
    ]
    assert.equal(new Set([file, ...others]).size, 9, 'each differs from the first and the others')
    assert.equal(
      cacheFile({ ...context, argv: ['node', 'rxsem', 'run', '-h'] }, 'b1', bundle),
      cacheFile({ ...context, argv: ['node', 'rxsem', 'run', '--help'] }, 'b1', bundle),
    )
    for (const argv of [
      ['node', 'rxsem'],
      ['node', 'rxsem', '--help'],
      ['node', 'rxsem', '../x'],
    ]) {
      assert.equal(cacheFile({ ...context, argv }, 'b1', bundle), undefined, argv.join(' '))
    }
    // The command's own flags, after `--`, are not rxsem's.
    assert.equal(
      cacheFile(
        { ...context, argv: ['node', 'rxsem', 'run', '--', 'x', '--help', '--leader'] },
        'b1',
        bundle,
      ),
      file,
    )
  })
})

describe('the code cache of the rxsem bin: a run', () => {
  let dir = ''
  let runner = ''
  let cache = ''
  let cacheFolder = ''

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'rxsem-code-cache-'))
    const module = join(dir, 'code-cache.cjs')
    buildSync({
      entryPoints: [fileURLToPath(new URL('../../src/cli/code-cache.ts', import.meta.url))],
      outfile: module,
      bundle: true,
      platform: 'node',
      format: 'cjs',
      logLevel: 'warning',
    })
    cache = join(dir, 'cache')
    cacheFolder = join(cache, `rxsem-${uid}`)
    // A bundle that shows what it was given, calls a function (compiled lazily, so in the cache
    // only when made at exit), and exits with the status it is told.
    writeFileSync(
      join(dir, 'bundle.cjs'),
      [
        '"use strict";',
        'function lazy(n) { return n + 1 }',
        'const seen = { file: __filename, dir: __dirname, exports: module.exports === exports,',
        '  required: typeof require("node:path").join, lazy: lazy(1) }',
        'process.stdout.write(JSON.stringify(seen) + "\\n")',
        'process.exitCode = Number(process.env.BUNDLE_EXIT ?? 0)',
        '',
      ].join('\n'),
    )
    runner = join(dir, 'runner.cjs')
    writeFileSync(
      runner,
      [
        `const { runBundle } = require(${JSON.stringify(module)})`,
        `const how = runBundle(${JSON.stringify(join(dir, 'bundle.cjs'))}, 'b1', {`,
        '  env: process.env, argv: ["node", "rxsem", process.env.COMMAND ?? "run"],',
        '  execArgv: process.execArgv, uid: process.getuid() })',
        'process.stderr.write(how)',
        '',
      ].join('\n'),
    )
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  /** Runs the bundle through runBundle; how it ran (stderr), and checks what the bundle saw. */
  async function runOnce(env: Record<string, string> = {}): Promise<string> {
    const { stdout, stderr } = await run(process.execPath, [runner], {
      env: { PATH: process.env['PATH'] ?? '', NODE_COMPILE_CACHE: cache, ...env },
    }).catch((error: { code: number; stdout: string; stderr: string }) =>
      env['BUNDLE_EXIT'] !== undefined && error.code === Number(env['BUNDLE_EXIT'])
        ? error
        : assert.fail(`the runner failed: ${error.stderr}`),
    )
    assert.deepEqual(JSON.parse(stdout), {
      file: join(dir, 'bundle.cjs'),
      dir,
      exports: true,
      required: 'function',
      lazy: 2,
    })
    return stderr
  }

  const files = (): string[] => (existsSync(cacheFolder) ? readdirSync(cacheFolder) : [])
  const only = (): string => {
    const [file, ...more] = files()
    assert.ok(file !== undefined && more.length === 0, `one cache file, not ${files().join(', ')}`)
    return join(cacheFolder, file)
  }

  it('compiles the first time and saves the cache at exit, in a folder and a file of the user alone', async () => {
    assert.equal(await runOnce(), 'compiled')
    const file = only()
    assert.equal(statSync(cacheFolder).mode & 0o777, 0o700)
    assert.equal(statSync(file).mode & 0o777, 0o600)
    assert.ok(statSync(file).size > 100, `a cache of ${statSync(file).size} bytes`)
  })

  it('runs with the cache the next time, and leaves the file as it is', async () => {
    const file = only()
    const before = statSync(file)
    assert.equal(await runOnce(), 'cached')
    assert.equal(statSync(file).ino, before.ino)
    assert.equal(statSync(file).mtimeMs, before.mtimeMs)
  })

  it('runs without a cache V8 refuses, and saves a new one', async () => {
    const file = only()
    writeFileSync(file, 'not a code cache')
    assert.equal(await runOnce(), 'compiled')
    assert.notEqual(readFileSync(only(), 'utf8'), 'not a code cache')
    assert.equal(await runOnce(), 'cached')
  })

  it('removes the files of its folder older than 30 days when it saves a cache', async () => {
    const file = only()
    const stale = join(cacheFolder, 'an-old-build-run-00000000-v1.0.0-x64.v8cache')
    const recent = join(cacheFolder, 'another-build-run-00000000-v1.0.0-x64.v8cache')
    const other = join(cacheFolder, 'not-a-cache.txt')
    for (const path of [stale, recent, other]) writeFileSync(path, 'x')
    const longAgo = (Date.now() - CACHE_MAX_AGE_MS - 60_000) / 1000
    utimesSync(stale, longAgo, longAgo)
    utimesSync(other, longAgo, longAgo)
    rmSync(file)
    assert.equal(await runOnce(), 'compiled')
    assert.ok(existsSync(file), 'the new cache')
    assert.ok(!existsSync(stale), 'the cache older than 30 days is gone')
    assert.ok(existsSync(recent), 'a recent cache of another build stays')
    assert.ok(existsSync(other), 'a file that is no cache stays')
    rmSync(recent)
    rmSync(other)
  })

  it('neither reads nor writes a folder others can write', async () => {
    const file = only()
    const saved = readFileSync(file)
    chmodSync(cacheFolder, 0o777)
    try {
      assert.equal(await runOnce(), 'compiled')
      writeFileSync(file, 'left alone')
      assert.equal(await runOnce(), 'compiled')
      assert.equal(readFileSync(file, 'utf8'), 'left alone')
    } finally {
      chmodSync(cacheFolder, 0o700)
      writeFileSync(file, saved)
    }
  })

  it('saves nothing for a run that exits with another status than 0', async () => {
    assert.equal(await runOnce({ COMMAND: 'status', BUNDLE_EXIT: '3' }), 'compiled')
    assert.equal(files().length, 1, files().join(', '))
  })

  it("is not used when Node's compile cache is turned off", async () => {
    const before = files()
    assert.equal(await runOnce({ NODE_DISABLE_COMPILE_CACHE: '1', COMMAND: 'watch' }), 'required')
    assert.deepEqual(files(), before)
  })
})
