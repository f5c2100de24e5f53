// The package as a user gets it: `npm pack` (in a copy of the sources without dist/, so the pack
// must build by itself), installed with rxjs into a fresh folder, type-checked for a consumer by
// TypeScript 5.9 and 7 with and without @types/node, run from `import` and from `require` against
// the test run's Consul agent, and its `rxsem` bin run from node_modules/.bin. Its three entries
// (the root, /testing and /experimental) resolve for each, and their types also for a consumer
// still on `moduleResolution: node10` (through "typesVersions").
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
import { dirname, join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { after, before, describe, it } from 'node:test'
import { sharedAgent } from '../support/consul-agent.js'
import { holdersOf, listPrefix, readLock, sessionsNamed } from '../support/observe.js'

const root = resolve(import.meta.dirname, '../..')
const run = promisify(execFile)

/** What `npm pack` needs to build the package: the sources and the build's script and configs. */
const BUILD_INPUTS = [
  'package.json',
  'README.md',
  'src',
  'scripts/build.mjs',
  'tsconfig.json',
  'tsconfig.build.json',
  'tsconfig.build.cjs.json',
]

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
export type Entries = [Semaphore, FakeSemaphore, ContenderState]
`

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

/** Every file under `dir`, as paths relative to it. */
function filesUnder(dir: string, at = ''): string[] {
  return readdirSync(join(dir, at), { withFileTypes: true }).flatMap((entry) => {
    const path = join(at, entry.name)
    return entry.isDirectory() ? filesUnder(dir, path) : [path]
  })
}

// A build, an install and four type-checks: about 40 s on a quiet machine, over 3 minutes on a
// loaded one; still below the 300 s scripts/run-tests.ts gives the file, so a hang is named.
describe('the packed package', { timeout: 280_000 }, () => {
  let work: string
  let consumer: string
  let installed: string
  let packedFiles: string[]
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
    const [pack] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[]
    assert.ok(pack, `npm pack answered no package:\n${packed.stdout}`)
    packedFiles = pack.files.map((f) => f.path)

    consumer = join(work, 'consumer')
    mkdirSync(consumer)
    writeFileSync(join(consumer, 'package.json'), '{ "private": true }\n')
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
      'dist/rxsem.cjs',
      'dist/rxsem-watchdog.sh',
    ]) {
      assert.ok(packedFiles.includes(file), `${file} is not in the package`)
    }
  })

  it('ships every source file its maps point to, or carries it in the map (inlined fp-ts, io-ts)', () => {
    const maps = filesUnder(installed).filter((f) => f.endsWith('.map'))
    assert.ok(maps.length > 100, `only ${maps.length} maps in the package`)
    const missing: string[] = []
    const carried: string[] = []
    for (const map of maps) {
      const { sources, sourcesContent } = JSON.parse(
        readFileSync(join(installed, map), 'utf8'),
      ) as { sources: string[]; sourcesContent?: (string | null)[] }
      sources.forEach((source, i) => {
        const path = join(dirname(map), source)
        if (typeof sourcesContent?.[i] === 'string') carried.push(path)
        else if (!existsSync(join(installed, path))) missing.push(`${map} → ${path}`)
      })
    }
    assert.deepEqual(missing, [])
    // Only the dependencies' code the ES module build inlines, never a source of the package's.
    const foreign = carried.filter((path) => !/^(\.\.\/)+(fp-ts|io-ts)\//.test(path))
    assert.deepEqual(foreign, [])
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
    for (const [program, loads, loadsCore] of [
      [
        'out/consumer.mjs',
        /^import .* from 'rx-consul-semaphore';$/m,
        /^import .* from 'rx-consul-semaphore\/experimental';$/m,
      ],
      [
        'out/consumer.cjs',
        /= require\("rx-consul-semaphore"\);$/m,
        /= require\("rx-consul-semaphore\/experimental"\);$/m,
      ],
    ] as const) {
      assert.match(readFileSync(join(consumer, program), 'utf8'), loads)
      assert.match(readFileSync(join(consumer, program), 'utf8'), loadsCore)
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
})
