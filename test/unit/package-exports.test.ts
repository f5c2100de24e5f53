// The published package works from both module systems, in plain Node (no tsx loader, which would
// paper over resolution problems such as fp-ts's directory imports). `npm test` builds dist/ first.
// Importing by the package's own name goes through its "exports" map.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import {
  accessSync,
  constants,
  copyFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { before, describe, it } from 'node:test'
import { builtFile } from '../support/build.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const run = promisify(execFile)

/** Runs a snippet in a fresh plain Node process at the package root and returns its stdout. */
async function plainNode(type: 'module' | 'commonjs', code: string): Promise<string> {
  const { stdout } = await run(process.execPath, [`--input-type=${type}`, '-e', code], {
    cwd: root,
    env: { PATH: process.env['PATH'] ?? '' },
  })
  return stdout.trim()
}

const probe = (m: string): string =>
  `[typeof ${m}.semaphore, typeof ${m}.leaderElection, typeof ${m}.createConsulClient, ` +
  `typeof ${m}.withSlot, String(${m}.SEMAPHORE_FLAGS), String(${m}.LOCK_FLAGS)].join(' ')`
const expected = 'function function function function 16210313421097356768 3304740253564472344'

/** The fakes load, follow their stream, and close (also by Symbol.asyncDispose) in that build. */
const testingProbe = (t: string, rx: string): string =>
  `(() => { const sem = ${t}.fakeSemaphore({ holding: ${rx}.of(true) }); const seen = [];
     sem.holding$.subscribe((h) => seen.push(h)); void sem[Symbol.asyncDispose]();
     const election = ${t}.fakeLeaderElection({ holding: ${rx}.of(true) }); void election.close();
     return [typeof ${t}.fakeSemaphore, typeof ${t}.fakeLeaderElection, seen.join(),
       sem.closeCount, election.closeCount].join(' ') })()`
const testingExpected = 'function function false,true,false 1 1'

/**
 * The pure core's pieces run in that build: a contender's machine started, a decision, and a
 * `.lock` body written and read back; the interpreter is there.
 */
const experimentalProbe = (x: string): string =>
  `(() => { const life = ${x}.lifeStep(${x}.unstarted, { type: 'start', answers: 0 }, 0,
       { startupTimeoutMs: Infinity, tryOnce: false, shelf: false });
     const d = ${x}.decide({ index: 1n, entries: [] }, { prefix: 'p', session: 's', limit: 2 });
     const body = ${x}.encodeLockBody({ limit: 2, holders: ['a'], shape: 'guide-list' });
     const read = ${x}.decodeLockBody(body, 'p/.lock');
     return [typeof ${x}.contenderStates, life.commands.map((c) => c.type).join(), d.type,
       new TextDecoder().decode(body), read._tag, read.right.holders.join()].join(' ') })()`
const experimentalExpected =
  'function create-session NotContending {"Limit":2,"Holders":["a"]} Right a'

/**
 * The low-level client's pieces run in that build: `watchPrefix` on a client made by hand, dropped
 * at its first snapshot, and `isTransient` on two failures.
 */
const consulProbe = (c: string): string =>
  `const client = { kv: { list: () => async () => ({ _tag: 'Right', right: { index: 7n, entries: [] } }) } };
   const sub = ${c}.watchPrefix(client, 'p').subscribe((e) => { sub.unsubscribe();
     console.log([e.type, String(e.snapshot.index), ${c}.isTransient({ _tag: 'Timeout' }),
       ${c}.isTransient({ _tag: 'BadRequest' })].join(' ')) });`
const consulExpected = 'snapshot 7 true false'

/** The declarations of each entry, in both builds, as a user's compiler starts from them. */
const ENTRY_DECLARATIONS = ['esm', 'cjs'].flatMap((build) =>
  ['index.d.ts', 'testing/index.d.ts', 'experimental.d.ts', 'consul/index.d.ts'].map(
    (entry) => `dist/${build}/${entry}`,
  ),
)

/** Every .d.ts a compiler reads from `entry` on: the entry and the files it imports, transitively. */
function declarationGraph(entry: string): string[] {
  const files = new Set<string>()
  const pending = [join(root, entry)]
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (files.has(file)) continue
    files.add(file)
    const text = readFileSync(file, 'utf8')
    for (const [, path = ''] of text.matchAll(/(?:from |import\()['"](\.{1,2}\/[^'"]+)['"]/g)) {
      pending.push(join(dirname(file), path.replace(/\.js$/, '.d.ts')))
    }
  }
  return [...files]
}

describe('package exports', () => {
  before(() => {
    for (const file of ['dist/esm/index.js', 'dist/cjs/index.js']) builtFile(file)
  })

  it('can be imported as an ES module by plain Node', async () => {
    const out = await plainNode(
      'module',
      `const m = await import('rx-consul-semaphore'); console.log(${probe('m')})`,
    )
    assert.equal(out, expected)
  })

  it('can be required as a CommonJS module by plain Node', async () => {
    const out = await plainNode(
      'commonjs',
      `const m = require('rx-consul-semaphore');
       if (!/dist[\\\\/]cjs[\\\\/]index\\.js$/.test(require.resolve('rx-consul-semaphore'))) throw new Error('not the cjs build')
       console.log(${probe('m')})`,
    )
    assert.equal(out, expected)
  })

  it('can import the test doubles of rx-consul-semaphore/testing as an ES module', async () => {
    const out = await plainNode(
      'module',
      `const t = await import('rx-consul-semaphore/testing'); const rx = await import('rxjs');
       console.log(${testingProbe('t', 'rx')})`,
    )
    assert.equal(out, testingExpected)
  })

  it('can require the test doubles of rx-consul-semaphore/testing as a CommonJS module', async () => {
    const out = await plainNode(
      'commonjs',
      `const t = require('rx-consul-semaphore/testing'); const rx = require('rxjs');
       if (!/dist[\\\\/]cjs[\\\\/]testing[\\\\/]index\\.js$/.test(require.resolve('rx-consul-semaphore/testing'))) throw new Error('not the cjs build')
       console.log(${testingProbe('t', 'rx')})`,
    )
    assert.equal(out, testingExpected)
  })

  it('can import the pure core of rx-consul-semaphore/experimental as an ES module', async () => {
    const out = await plainNode(
      'module',
      `const x = await import('rx-consul-semaphore/experimental'); console.log(${experimentalProbe('x')})`,
    )
    assert.equal(out, experimentalExpected)
  })

  it('can require the pure core of rx-consul-semaphore/experimental as a CommonJS module', async () => {
    const out = await plainNode(
      'commonjs',
      `const x = require('rx-consul-semaphore/experimental');
       if (!/dist[\\\\/]cjs[\\\\/]experimental\\.js$/.test(require.resolve('rx-consul-semaphore/experimental'))) throw new Error('not the cjs build')
       console.log(${experimentalProbe('x')})`,
    )
    assert.equal(out, experimentalExpected)
  })

  it('can import the low-level client of rx-consul-semaphore/consul as an ES module', async () => {
    const out = await plainNode(
      'module',
      `const c = await import('rx-consul-semaphore/consul'); ${consulProbe('c')}`,
    )
    assert.equal(out, consulExpected)
  })

  it('can require the low-level client of rx-consul-semaphore/consul as a CommonJS module', async () => {
    const out = await plainNode(
      'commonjs',
      `const c = require('rx-consul-semaphore/consul');
       if (!/dist[\\\\/]cjs[\\\\/]consul[\\\\/]index\\.js$/.test(require.resolve('rx-consul-semaphore/consul'))) throw new Error('not the cjs build')
       ${consulProbe('c')}`,
    )
    assert.equal(out, consulExpected)
  })

  it('keeps the pure core and the low-level client out of the root entry in both builds', async () => {
    const core = ['decide', 'lifeStep', 'contenderStates', 'releaseFromLockBody', 'encodeLockBody']
    const names = [...core, 'watchPrefix', 'isTransient']
    const probe = (m: string): string =>
      `console.log(${JSON.stringify(names)}.filter((n) => n in ${m}).join() || 'none')`
    const esm = await plainNode(
      'module',
      `const m = await import('rx-consul-semaphore'); ${probe('m')}`,
    )
    const cjs = await plainNode(
      'commonjs',
      `const m = require('rx-consul-semaphore'); ${probe('m')}`,
    )
    assert.deepEqual([esm, cjs], ['none', 'none'])
  })

  it('ships type declarations for both module systems', () => {
    for (const d of ENTRY_DECLARATIONS) {
      assert.ok(existsSync(`${root}/${d}`), `${d} is missing`)
    }
  })

  it('declares no internal helper nor parameter in the declarations of any entry', () => {
    const graph = [...new Set(ENTRY_DECLARATIONS.flatMap(declarationGraph))]
    for (const d of ['dist/esm/recipes/semaphore.d.ts', 'dist/cjs/recipes/leader-election.d.ts']) {
      assert.ok(graph.includes(join(root, d)), `${d} is not reached from the entries`)
    }
    // The @internal setup of the contenders (tryAcquire's try-once, withSlot's extra option
    // check), its type and the functions that take it; and any other declaration marked so.
    const internal = /@internal\b|\bContenderInternals\b|\bcontendFor(Slot|Lead)\b/
    const leaks = graph.filter((file) => internal.test(readFileSync(file, 'utf8')))
    assert.deepEqual(
      leaks.map((file) => file.slice(root.length)),
      [],
      'declarations that a user compiler reads name something internal',
    )
    const semaphore = readFileSync(join(root, 'dist/esm/recipes/semaphore.d.ts'), 'utf8')
    assert.match(
      semaphore,
      /^export declare function semaphore\(options: SemaphoreOptions\): Semaphore;$/m,
    )
  })

  describe('the rxsem bin', () => {
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
      bin: { rxsem: string }
      files: string[]
    }
    const bin = join(root, pkg.bin.rxsem)
    const bundle = join(root, 'dist/rxsem-cli.cjs')

    it('is a small entry in dist/, shipped, executable, with a node shebang, beside its bundle', () => {
      assert.equal(pkg.bin.rxsem, './dist/rxsem.cjs')
      assert.ok(pkg.files.includes('dist'), 'dist/ is in "files"')
      assert.ok(existsSync(bin), `${pkg.bin.rxsem} is missing (npm run build)`)
      assert.ok(readFileSync(bin, 'utf8').startsWith('#!/usr/bin/env node\n'))
      accessSync(bin, constants.X_OK)
      // The entry only sets V8's flags and runs the bundle (src/cli/bin.ts): the CLI is the bundle.
      assert.ok(statSync(bin).size < 20_000, `${pkg.bin.rxsem} is ${statSync(bin).size} bytes`)
      assert.ok(statSync(bundle).size > 500_000, `${bundle} is ${statSync(bundle).size} bytes`)
    })

    it('runs by itself (through its shebang) and prints the usage for --help', async () => {
      const { stdout, stderr } = await run(bin, ['--help'], {
        cwd: root,
        env: { PATH: process.env['PATH'] ?? '' },
      })
      assert.match(stdout, /^Usage: rxsem <command>/)
      assert.match(stdout, /^Commands:\n {2}run {2}/m)
      assert.equal(stderr, '')
    })

    it('needs nothing from node_modules: a copy of its two files alone in a folder runs every command', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'rxsem-bin-'))
      try {
        const copy = join(dir, 'rxsem.cjs')
        copyFileSync(bin, copy)
        copyFileSync(bundle, join(dir, 'rxsem-cli.cjs'))
        // Its code cache, should it make one, in the folder too (src/cli/code-cache.ts).
        const opts = {
          cwd: dir,
          env: { PATH: process.env['PATH'] ?? '', NODE_COMPILE_CACHE: join(dir, 'cache') },
        }
        for (const command of ['run', 'status', 'watch']) {
          const { stdout } = await run(process.execPath, [copy, command, '--help'], opts)
          assert.match(stdout, new RegExp(`^Usage: rxsem ${command} `))
        }
        // A real request (the HTTP wire, fp-ts, io-ts, rxjs all at work), to an address nobody serves.
        const failed = await run(
          process.execPath,
          [copy, 'status', '--prefix', 'p', '--http-addr', '127.0.0.1:1'],
          opts,
        ).then(
          () => assert.fail('status against a closed port succeeded'),
          (error: { code: number; stderr: string }) => error,
        )
        assert.equal(failed.code, 1)
        assert.match(
          failed.stderr,
          /^rxsem: .*cannot reach the Consul agent at http:\/\/127\.0\.0\.1:1/,
        )
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    })
  })
})
