// Builds the package twice, as ES modules (dist/esm) and as CommonJS (dist/cjs), so that both
// `import` and `require` of 'rx-consul-semaphore' work (see the "exports" map in package.json);
// then bundles the `rxsem` bin into one file, dist/rxsem.cjs.
import { execFileSync } from 'node:child_process'
import { chmodSync, copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { build } from 'esbuild'

const require = createRequire(import.meta.url)
const tsc = require.resolve('typescript/bin/tsc')
rmSync('dist', { recursive: true, force: true })
for (const [project, dir, type] of [
  ['tsconfig.build.json', 'dist/esm', 'module'],
  ['tsconfig.build.cjs.json', 'dist/cjs', 'commonjs'],
]) {
  execFileSync(process.execPath, [tsc, '-p', project], { stdio: 'inherit' })
  mkdirSync(dir, { recursive: true })
  // Each output folder says which module system its .js files use, whatever the root says.
  writeFileSync(`${dir}/package.json`, JSON.stringify({ type }) + '\n')
}

// The bin: the CLI of dist/esm and everything it imports (rxjs, fp-ts, io-ts, undici) in one
// CommonJS file. Node then reads and compiles one file instead of some 450 (rxsem --help took
// 3.4 times a bare `node -e 0` from dist/cjs; see docs/cli.md). The ES module builds of rxjs and
// fp-ts are picked so that only the parts the CLI uses are bundled: their CommonJS builds load
// every operator and module (Node's "node" condition would otherwise choose rxjs's CommonJS).
const bin = 'dist/rxsem.cjs'
const packageDir = (name) => dirname(require.resolve(`${name}/package.json`))

// Of undici the library loads only Pool and its request API, by path, when it makes its first
// transport (src/consul/undici-pool.cts): undici's index loads all of undici besides (fetch,
// WebSocket, cookies, caches, mocks), which was two thirds of the bundled bin's start-up and 20 MB
// of an import. Check that those paths are still what the index exports, so a new undici fails
// the build rather than falls back to its index (in the library) or breaks (in the bin, below).
const undici = packageDir('undici')
const undiciCheck = `
const undici = require('undici')
if (undici.Pool !== require('undici/lib/dispatcher/pool.js') ||
    undici.Pool.prototype.request !== require('undici/lib/api/api-request.js')) {
  console.error("undici's index no longer exports the Pool and request of its lib/: update src/consul/undici-pool.cts and scripts/build.mjs")
  process.exit(1)
}
`
execFileSync(process.execPath, ['-e', undiciCheck], { stdio: 'inherit' })

await build({
  entryPoints: ['dist/esm/cli/main.js'],
  outfile: bin,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  mainFields: ['module', 'main'],
  // An optional peer (src/telemetry/otel-api.cts): required at run time where it is installed,
  // never bundled.
  external: ['@opentelemetry/api'],
  alias: {
    rxjs: join(packageDir('rxjs'), 'dist/esm'),
    'fp-ts/lib': join(packageDir('fp-ts'), 'es6'),
  },
  plugins: [
    {
      // undici's index is only undici-pool.cts's fallback, never taken here (checked above):
      // left out of the bin.
      name: 'no-undici-index',
      setup(esbuild) {
        esbuild.onResolve({ filter: /^undici$/ }, () => ({ path: 'index', namespace: 'undici' }))
        esbuild.onLoad({ filter: /.*/, namespace: 'undici' }, () => ({
          contents: "throw new Error('the rxsem bin bundles no undici index')",
          loader: 'js',
          resolveDir: undici,
        }))
      },
    },
  ],
  logLevel: 'warning',
})
if (!readFileSync(bin, 'utf8').startsWith('#!/usr/bin/env node\n')) {
  throw new Error(`${bin} does not start with the #!/usr/bin/env node of src/cli/main.ts`)
}
chmodSync(bin, 0o755)

// The watchdog of `rxsem run` is a bash script the CLI finds beside the bundled bin or beside the
// CLI's entry (src/cli/run/watchdog.ts): beside the bin, and beside main.js of each build.
for (const dir of ['dist', 'dist/esm/cli', 'dist/cjs/cli']) {
  copyFileSync('src/cli/rxsem-watchdog.sh', join(dir, 'rxsem-watchdog.sh'))
}
