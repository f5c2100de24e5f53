// The package as a user gets it: `npm pack` (in a copy of the sources without dist/, so the pack
// must build by itself), installed with rxjs into a fresh project made by `npm init -y` (a
// CommonJS one), type-checked for a consumer by TypeScript 5.9 and 7 with and without @types/node,
// run from `import` and from `require` against the test run's Consul agent, and its `rxsem` bin
// run from node_modules/.bin. Its four entries (the root, /testing, /experimental and /consul)
// resolve for each, and their types also for a consumer still on `moduleResolution: node10`
// (through "typesVersions"). The README's quick start runs there with `node`, and its API tour
// with `npx tsx`, as the README tells a newcomer to run them (tour.test.ts checks that the README
// shows these files word for word). The package carries its LICENSE, CHANGELOG and docs, and every
// relative link in its markdown, and every docs/ path its code names, resolves inside it. It ships
// no sources and no source maps, and is as large as the README's Install section says.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { createRequire } from 'node:module'
import { dirname, join, relative, resolve } from 'node:path'
import { promisify } from 'node:util'
import { after, before, describe, it } from 'node:test'
import { sharedAgent } from '../support/consul-agent.js'
import {
  SEMAPHORE_FLAGS,
  deleteTree,
  holdersOf,
  listPrefix,
  readLock,
  sessionsNamed,
} from '../support/observe.js'
import { misstated } from '../support/stated-size.js'

const root = resolve(import.meta.dirname, '../..')
const run = promisify(execFile)

/**
 * What `npm pack` needs: the sources, the build's script and configs, and the texts the package
 * carries beside its code ("files" in package.json).
 */
const BUILD_INPUTS = [
  'package.json',
  'README.md',
  'LICENSE',
  'CHANGELOG.md',
  'src',
  'scripts/build.mjs',
  'tsconfig.json',
  'tsconfig.build.json',
  'tsconfig.build.cjs.json',
  'docs',
  'examples',
  'bench/results.md',
]

/** Where the README's examples do their work: fixed prefixes, as a newcomer runs them. */
const EXAMPLE_PREFIXES = ['service/jobs/lock', 'service/db', 'service/scheduler/leader']

const COMPILERS = {
  'TypeScript 5.9': join(root, 'node_modules/typescript/bin/tsc'),
  'TypeScript 7': join(root, 'node_modules/typescript-7/bin/tsc'),
}

/** `await using` on the package's handles, checked where the compiler knows the symbol. */
const AWAIT_USING = `import { semaphore } from 'rx-consul-semaphore'
export async function scoped(): Promise<void> {
  await using sem = semaphore({ prefix: 'service/db/lock', limit: 3 })
  await sem[Symbol.asyncDispose]()
}
`

/** Types of every entry, for a CommonJS consumer whose resolution ignores the "exports" map. */
const NODE10_TYPES = `import type { Semaphore } from 'rx-consul-semaphore'
import type { FakeSemaphore } from 'rx-consul-semaphore/testing'
import type { ContenderState } from 'rx-consul-semaphore/experimental'
import type { ConsulError } from 'rx-consul-semaphore/consul'
export type Entries = [Semaphore, FakeSemaphore, ContenderState, ConsulError]
`

/** What `npm pack --json` says of the package it wrote. */
interface PackResult {
  readonly filename: string
  /** Bytes of the tarball. */
  readonly size: number
  readonly unpackedSize: number
  readonly entryCount: number
  readonly files: readonly { readonly path: string; readonly size: number }[]
}

/** The environment without the npm_* variables of the `npm test` this runs under. */
function npmEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_')),
  )
}

function versionOf(name: string): string {
  const path = join(root, 'node_modules', name, 'package.json')
  return (JSON.parse(readFileSync(path, 'utf8')) as { version: string }).version
}

/** Every file under `dir`, as paths relative to it, outside node_modules. */
function filesUnder(dir: string, at = ''): string[] {
  return readdirSync(join(dir, at), { withFileTypes: true }).flatMap((entry) => {
    const path = join(at, entry.name)
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : filesUnder(dir, path)
    return [path]
  })
}

/** Markdown without its fenced code blocks and code spans, where a link is only text. */
function proseOf(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, '').replace(/`[^`\n]*`/g, '')
}

/** The targets of a markdown text's links and images, inline, by reference and in HTML. */
function linkTargets(markdown: string): string[] {
  const prose = proseOf(markdown)
  return [
    ...prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g),
    ...prose.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm),
    ...prose.matchAll(/<(?:a|img)\s[^>]*?(?:href|src)="([^"]+)"/g),
  ].map((m) => m[1] ?? '')
}

/** The anchors of a markdown file's headings, as GitHub makes them. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>()
  for (const [, text = ''] of headingsOf(markdown)) {
    const base = text
      .replace(/<[^>]+>/g, '')
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-')
    let anchor = base
    for (let n = 1; anchors.has(anchor); n++) anchor = `${base}-${n}`
    anchors.add(anchor)
  }
  return anchors
}

/** The headings of a markdown text outside its fenced code blocks. */
function headingsOf(markdown: string): RegExpMatchArray[] {
  const outsideFences = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, '')
  return [...outsideFences.matchAll(/^ {0,3}#{1,6}[ \t]+(.*?)[ \t#]*$/gm)]
}

// A build, an install, four type-checks and the README's two examples (about 12 s together): 2 to
// 3 minutes on a loaded two-core machine (load average 12); still below the 300 s
// scripts/run-tests.ts gives the file, so a hang is named.
describe('the packed package', { timeout: 280_000 }, () => {
  let work: string
  let consumer: string
  let installed: string
  let packedFiles: string[]
  let pack: PackResult
  let consul: Awaited<ReturnType<typeof sharedAgent>>

  before(async () => {
    consul = await sharedAgent()
    work = mkdtempSync(join(tmpdir(), 'rxsem-package-'))
    const sources = join(work, 'sources')
    for (const input of BUILD_INPUTS)
      cpSync(join(root, input), join(sources, input), { recursive: true })
    symlinkSync(join(root, 'node_modules'), join(sources, 'node_modules'))
    const packed = await run('npm', ['pack', '--json', '--pack-destination', work], {
      cwd: sources,
      env: npmEnv(),
      maxBuffer: 64 * 1024 * 1024,
    })
    const [result] = JSON.parse(packed.stdout) as PackResult[]
    assert.ok(result, `npm pack answered no package:\n${packed.stdout}`)
    pack = result
    packedFiles = pack.files.map((f) => f.path)

    // A newcomer's project: `npm init -y` (npm 11 writes "type": "commonjs"; older npm, no type).
    consumer = join(work, 'consumer')
    mkdirSync(consumer)
    await run('npm', ['init', '-y'], { cwd: consumer, env: npmEnv() })
    await run(
      'npm',
      [
        'install',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        join(work, pack.filename),
        `rxjs@${versionOf('rxjs')}`,
        `@types/node@${versionOf('@types/node')}`,
        `tsx@${versionOf('tsx')}`,
      ],
      { cwd: consumer, env: npmEnv() },
    )
    installed = join(consumer, 'node_modules/rx-consul-semaphore')

    const program = readFileSync(join(import.meta.dirname, 'fixtures/package-consumer.ts'), 'utf8')
    writeFileSync(join(consumer, 'consumer.mts'), program)
    writeFileSync(join(consumer, 'consumer.cts'), program)
    writeFileSync(join(consumer, 'await-using.mts'), AWAIT_USING)
    writeFileSync(join(consumer, 'node10.ts'), NODE10_TYPES)
    const tsconfig = (types: string[], files: string[]): string =>
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module: 'nodenext',
          target: 'es2022',
          types,
          outDir: 'out',
        },
        files,
      })
    writeFileSync(
      join(consumer, 'tsconfig.node.json'),
      tsconfig(['node'], ['consumer.mts', 'consumer.cts', 'await-using.mts']),
    )
    writeFileSync(
      join(consumer, 'tsconfig.plain.json'),
      tsconfig([], ['consumer.mts', 'consumer.cts']),
    )
    writeFileSync(
      join(consumer, 'tsconfig.node10.json'),
      JSON.stringify({
        compilerOptions: {
          strict: true,
          module: 'commonjs',
          moduleResolution: 'node10',
          ignoreDeprecations: '5.0',
          target: 'es2022',
          types: [],
          noEmit: true,
        },
        files: ['node10.ts'],
      }),
    )
  })

  after(async () => {
    if (work) rmSync(work, { recursive: true, force: true })
    if (consul) for (const prefix of EXAMPLE_PREFIXES) await deleteTree(consul.url, prefix)
    await consul?.close()
  })

  it('is built by npm pack itself and ships both builds, their declarations and the bin', () => {
    for (const file of [
      'dist/esm/index.js',
      'dist/esm/index.d.ts',
      'dist/cjs/index.js',
      'dist/cjs/index.d.ts',
      'dist/esm/testing/index.js',
      'dist/cjs/testing/index.d.ts',
      'dist/esm/experimental.js',
      'dist/esm/experimental.d.ts',
      'dist/cjs/experimental.js',
      'dist/cjs/experimental.d.ts',
      'dist/esm/consul/index.js',
      'dist/esm/consul/index.d.ts',
      'dist/cjs/consul/index.js',
      'dist/cjs/consul/index.d.ts',
      'dist/rxsem.cjs',
      'dist/rxsem-cli.cjs',
      'dist/rxsem-watchdog.sh',
    ]) {
      assert.ok(packedFiles.includes(file), `${file} is not in the package`)
    }
  })

  it('ships what a user runs and reads: builds, declarations, docs, examples; no sources, no maps', () => {
    const shipped = (path: string): boolean =>
      /^(dist|docs|examples)\//.test(path) ||
      ['package.json', 'README.md', 'LICENSE', 'CHANGELOG.md', 'bench/results.md'].includes(path)
    assert.deepEqual(
      packedFiles.filter((path) => !shipped(path)),
      [],
      'files outside the builds, docs and texts',
    )
    // A map would point at sources the package does not ship.
    assert.deepEqual(
      packedFiles.filter((path) => path.endsWith('.map')),
      [],
    )
    const code = filesUnder(installed).filter((f) => /\.(js|cjs)$/.test(f))
    for (const bundle of ['dist/esm/index.js', 'dist/cjs/bundle.js', 'dist/rxsem-cli.cjs']) {
      assert.ok(code.includes(bundle), `${bundle} not among the code installed: ${code.join(', ')}`)
    }
    const mapped = code.filter((f) =>
      /^\/\/# sourceMappingURL=/m.test(readFileSync(join(installed, f), 'utf8')),
    )
    assert.deepEqual(mapped, [], 'code that names a source map')
  })

  it("is as large as the README's Install section says: files, unpacked and packed size", () => {
    const readme = readFileSync(join(installed, 'README.md'), 'utf8')
    const install = readme.slice(readme.indexOf('\n## Install\n'), readme.indexOf('\n## API tour'))
    const stated =
      /about ([\d,]+) files, ([\d.]+) (MB|kB) unpacked \(([\d.]+) (MB|kB) packed\)/.exec(install)
    assert.ok(stated, `the Install section states no "about N files, X MB unpacked (Y kB packed)"`)
    const [, files = '', unpacked = '', unpackedUnit = '', packed = '', packedUnit = ''] = stated
    const wrong = [
      misstated(files, 'files', pack.entryCount),
      misstated(unpacked, unpackedUnit, pack.unpackedSize),
      misstated(packed, packedUnit, pack.size),
    ].filter((m) => m !== null)
    assert.deepEqual(wrong, [])
  })

  it("is the bin's bundle of the size docs/cli.md states", () => {
    const cli = readFileSync(join(installed, 'docs/cli.md'), 'utf8')
    const stated = /one file of about ([\d.,]+) (kB|MB)/.exec(cli)
    assert.ok(stated, 'docs/cli.md states no "one file of about N kB"')
    const bundle = pack.files.find((f) => f.path === 'dist/rxsem-cli.cjs')
    assert.ok(bundle, 'dist/rxsem-cli.cjs is not in the package')
    assert.equal(misstated(stated[1] ?? '', stated[2] ?? '', bundle.size), null)
  })

  for (const [compiler, tsc] of Object.entries(COMPILERS)) {
    for (const types of ['node', 'plain'] as const) {
      it(`type-checks for a strict nodenext consumer with ${compiler}, ${types === 'node' ? 'with "types": ["node"]' : 'without @types/node'}`, async () => {
        const { stdout } = await run(
          process.execPath,
          [tsc, '-p', `tsconfig.${types}.json`, '--listFiles', '--noEmit'],
          { cwd: consumer },
        ).catch((error: { stdout: string }) => {
          assert.fail(`${compiler} found errors:\n${error.stdout}`)
        })
        const nodeTypes = stdout.split('\n').some((file) => file.includes('/@types/node/'))
        assert.equal(nodeTypes, types === 'node', 'the program has @types/node exactly when asked')
      })
    }
  }

  it('resolves the types of every entry for a node10 consumer with TypeScript 5.9', async () => {
    await run(process.execPath, [COMPILERS['TypeScript 5.9'], '-p', 'tsconfig.node10.json'], {
      cwd: consumer,
    }).catch((error: { stdout: string }) => {
      assert.fail(`TypeScript 5.9 found errors:\n${error.stdout}`)
    })
  })

  it('runs from `import` and from `require` against Consul, and leaves nothing there', async () => {
    // @opentelemetry/api is an optional peer that the consumer does not have: the package loads
    // and runs without it (src/telemetry/otel-api.cts), in both builds.
    assert.throws(
      () => createRequire(join(installed, 'package.json')).resolve('@opentelemetry/api'),
      /Cannot find module '@opentelemetry\/api'/,
    )
    await run(process.execPath, [COMPILERS['TypeScript 7'], '-p', 'tsconfig.plain.json'], {
      cwd: consumer,
    })
    for (const [program, loads] of [
      ['out/consumer.mjs', (entry: string) => new RegExp(`^import .* from '${entry}';$`, 'm')],
      ['out/consumer.cjs', (entry: string) => new RegExp(`= require\\("${entry}"\\);$`, 'm')],
    ] as const) {
      // Each entry the program uses is loaded by the module system the program was compiled to.
      for (const entry of [
        'rx-consul-semaphore',
        'rx-consul-semaphore/testing',
        'rx-consul-semaphore/experimental',
        'rx-consul-semaphore/consul',
      ]) {
        assert.match(readFileSync(join(consumer, program), 'utf8'), loads(entry), entry)
      }
      const { stdout } = await run(process.execPath, [program], {
        cwd: consumer,
        env: { PATH: process.env['PATH'] ?? '', CONSUL_HTTP_ADDR: consul.addr },
        timeout: 30_000,
      })
      const seen = JSON.parse(stdout) as Record<string, unknown> & { base: string }
      assert.deepEqual(
        { ...seen, base: undefined, fencingToken: undefined },
        {
          base: undefined,
          fencingToken: undefined,
          committed: true,
          coreDecided: 'Held',
          otherGotTheSlot: false,
          leader: 'consumer',
          fakeHeld: true,
        },
        program,
      )
      assert.match(String(seen.fencingToken), /^\d+$/)
      assert.deepEqual(
        {
          keys: (await listPrefix(consul.url, seen.base)).map((e) => e.Key).sort(),
          holders: holdersOf((await readLock(consul.url, `${seen.base}/sem`))?.body),
          sessions: (await sessionsNamed(consul.url, '')).filter((s) => s.Name.includes(seen.base)),
        },
        {
          keys: [`${seen.base}/leader/.lock`, `${seen.base}/sem/.lock`],
          holders: [],
          sessions: [],
        },
        `what ${program} left in Consul`,
      )
    }
  })

  it('declares @opentelemetry/api an optional peer, which npm did not install', () => {
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
      peerDependencies?: Record<string, string>
      peerDependenciesMeta?: Record<string, { optional?: boolean }>
    }
    assert.ok(manifest.peerDependencies?.['@opentelemetry/api'])
    assert.equal(manifest.peerDependenciesMeta?.['@opentelemetry/api']?.optional, true)
    assert.ok(!existsSync(join(consumer, 'node_modules/@opentelemetry/api')))
  })

  it('installs the rxsem bin, which prints its usage', async () => {
    const { stdout } = await run(join(consumer, 'node_modules/.bin/rxsem'), ['--help'], {
      cwd: consumer,
      env: { PATH: process.env['PATH'] ?? '' },
    })
    assert.match(stdout, /^Usage: rxsem <command>/)
  })

  it('is installed in a CommonJS project, as `npm init -y` makes one', () => {
    const manifest = JSON.parse(readFileSync(join(consumer, 'package.json'), 'utf8')) as {
      type?: string
    }
    assert.ok(manifest.type === undefined || manifest.type === 'commonjs', manifest.type)
  })

  it('carries its LICENSE, CHANGELOG, README, docs and examples', () => {
    const docs = readdirSync(join(root, 'docs')).filter((f) => /\.(md|svg)$/.test(f))
    assert.ok(docs.length >= 10, `only ${docs.length} docs in the sources`)
    for (const file of [
      'LICENSE',
      'CHANGELOG.md',
      'README.md',
      'examples/quickstart.mjs',
      'examples/tour.mts',
      ...docs.map((f) => `docs/${f}`),
    ]) {
      assert.ok(packedFiles.includes(file), `${file} is not in the package`)
    }
    assert.ok(!packedFiles.some((f) => f.startsWith('docs/api/')), 'the generated API reference')
    const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
      license: string
    }
    assert.equal(manifest.license, 'MIT')
    assert.match(readFileSync(join(installed, 'LICENSE'), 'utf8'), /^MIT License\n\nCopyright /)
  })

  it('resolves every relative link of its markdown inside the package, anchors too', () => {
    const markdown = filesUnder(installed).filter((f) => f.endsWith('.md'))
    assert.ok(markdown.includes('README.md') && markdown.length > 10, markdown.join())
    const broken: string[] = []
    let checked = 0
    for (const file of markdown) {
      for (const target of linkTargets(readFileSync(join(installed, file), 'utf8'))) {
        if (/^([a-z][a-z\d+.-]*:|\/\/)/i.test(target)) continue // a URL, not a path
        checked++
        const [path = '', anchor] = target.split('#', 2)
        const resolved =
          path === ''
            ? join(installed, file)
            : join(installed, dirname(file), decodeURIComponent(path))
        const inside = !relative(installed, resolved).startsWith('..')
        if (!inside || !existsSync(resolved)) {
          broken.push(`${file} → ${target}${inside ? '' : ' (outside the package)'}`)
        } else if (anchor && resolved.endsWith('.md')) {
          if (!anchorsOf(readFileSync(resolved, 'utf8')).has(anchor)) {
            broken.push(`${file} → ${target} (no such heading)`)
          }
        }
      }
    }
    assert.ok(checked > 30, `only ${checked} relative links found`)
    assert.deepEqual(broken, [])
  })

  it('ships every docs/ file that its code, declarations and messages name', () => {
    const code = filesUnder(installed).filter((f) => /\.(js|cjs|mjs|ts|cts|mts|sh)$/.test(f))
    const named = code.flatMap((file) =>
      [...readFileSync(join(installed, file), 'utf8').matchAll(/\bdocs\/[\w.-]+\.(md|svg)\b/g)].map(
        ([path]) => ({ file, path }),
      ),
    )
    // The build's messages and declarations are read, not only the sources.
    const inBuild = (path: string, ending: string): boolean =>
      named.some((n) => n.path === path && n.file.startsWith('dist/') && n.file.endsWith(ending))
    assert.ok(inBuild('docs/operations.md', '.js'), 'the ACL remedy of PermissionDenied')
    assert.ok(inBuild('docs/safety.md', '.d.ts'), 'the TSDoc of the declarations')
    const missing = named.filter(({ path }) => !existsSync(join(installed, path)))
    assert.deepEqual(
      missing.map(({ file, path }) => `${file} names ${path}`),
      [],
    )
  })

  it('runs the README quick start with node, which works, exits by itself and leaves no holder', async () => {
    const quickstart = join(consumer, 'quickstart.mjs')
    cpSync(join(installed, 'examples/quickstart.mjs'), quickstart)
    const { stdout } = await example(['node', 'quickstart.mjs'])
    assert.deepEqual(
      stdout.trim().split('\n'),
      [0, 1, 2, 3, 4].map((n) => `holding a slot, working: step ${n}`),
    )
    await leftInConsul(['service/jobs/lock'], ['service/jobs/lock/.lock'])
  })

  it('runs the README tour with npx tsx, which exits by itself and leaves no holder', async () => {
    cpSync(join(installed, 'examples/tour.mts'), join(consumer, 'tour.mts'))
    const { stdout } = await example(['npx', 'tsx', 'tour.mts'])
    for (const line of ['worker: step 2', 'migrated', 'leader: node-a', 'scheduler: tick 2']) {
      assert.ok(stdout.split('\n').includes(line), `no "${line}" in:\n${stdout}`)
    }
    assert.match(stdout, /^wrote batch 2 with fencing token \d+$/m)
    // What stays is what `consul lock` leaves too: each prefix's `.lock`, with no holder.
    await leftInConsul(
      ['service/db', 'service/scheduler'],
      ['service/db/lock/.lock', 'service/scheduler/leader/.lock'],
    )
  })

  it('type-checks the README TypeScript quick start with the README tsconfig, strict, with TypeScript 5.9 and 7, and runs it with npx tsx', async () => {
    // A folder of the `npm init -y` project with the README's tsconfig.json and quickstart.mts
    // only: the packages resolve from the project's node_modules, @types/node as the tsconfig asks.
    const dir = join(consumer, 'typescript-quickstart')
    mkdirSync(dir)
    const readme = readFileSync(join(installed, 'README.md'), 'utf8')
    const link = readme.indexOf('](examples/quickstart.mts)')
    const tsconfig = /\n```json\n([\s\S]*?)```\n/.exec(readme.slice(Math.max(link, 0)))?.[1]
    assert.ok(
      link >= 0 && tsconfig,
      'the README shows no tsconfig.json after examples/quickstart.mts',
    )
    assert.equal(
      (JSON.parse(tsconfig) as { compilerOptions: { strict?: boolean } }).compilerOptions.strict,
      true,
    )
    writeFileSync(join(dir, 'tsconfig.json'), tsconfig)
    cpSync(join(installed, 'examples/quickstart.mts'), join(dir, 'quickstart.mts'))
    for (const [compiler, tsc] of Object.entries(COMPILERS)) {
      const { stdout } = await run(process.execPath, [tsc, '--listFiles'], { cwd: dir }).catch(
        (error: { stdout: string }) =>
          assert.fail(`${compiler} found errors in the TypeScript quick start:\n${error.stdout}`),
      )
      const program = stdout.split('\n')
      assert.ok(program.includes(join(dir, 'quickstart.mts')), `${compiler} did not check it`)
      assert.ok(
        program.some((f) => f.includes('/@types/node/')),
        `${compiler}: no @types/node`,
      )
    }
    const { stdout } = await example(['npx', 'tsx', 'typescript-quickstart/quickstart.mts'])
    assert.deepEqual(
      stdout.trim().split('\n'),
      [0, 1, 2, 3, 4].map((n) => `holding a slot, working: step ${n}`),
    )
    await leftInConsul(['service/jobs/lock'], ['service/jobs/lock/.lock'])
  })

  /** Runs a README example in the consumer's folder against the run's agent, as a newcomer does. */
  async function example([command = '', ...args]: string[]): Promise<{ stdout: string }> {
    const started = Date.now()
    const timeout = 60_000
    const ran = await run(command, args, {
      cwd: consumer,
      env: { ...npmEnv(), CONSUL_HTTP_ADDR: consul.addr },
      timeout,
    }).catch((error: { code?: number; signal?: string; stdout?: string; stderr?: string }) =>
      assert.fail(
        `${command} ${args.join(' ')} exited ${error.code ?? error.signal} after ` +
          `${Date.now() - started} ms:\n${error.stdout}\n${error.stderr}`,
      ),
    )
    assert.ok(Date.now() - started < timeout)
    return ran
  }

  /** Asserts that under `prefixes` Consul keeps only `keys`, with no holder and no session. */
  async function leftInConsul(prefixes: string[], keys: string[]): Promise<void> {
    const entries = (await Promise.all(prefixes.map((p) => listPrefix(consul.url, p)))).flat()
    assert.deepEqual(entries.map((e) => e.Key).sort(), keys)
    for (const entry of entries) {
      assert.equal(entry.Session, undefined, `${entry.Key} is held`)
      if (entry.Flags === SEMAPHORE_FLAGS) {
        const lock = await readLock(consul.url, entry.Key.replace(/\/\.lock$/, ''))
        assert.deepEqual(holdersOf(lock?.body), [], `${entry.Key} lists holders`)
      }
    }
    const sessions = await sessionsNamed(consul.url, '')
    assert.deepEqual(
      sessions.filter((s) => prefixes.some((p) => s.Name.includes(` ${p}`))),
      [],
      'sessions left',
    )
  }
})
