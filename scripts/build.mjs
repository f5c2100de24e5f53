// Builds the package twice, as ES modules (dist/esm) and as CommonJS (dist/cjs), so that both
// `import` and `require` of 'rx-consul-semaphore' work (see the "exports" map in package.json);
// then bundles the `rxsem` CLI into one file, dist/rxsem-cli.cjs, which the bin, dist/rxsem.cjs,
// runs with its code cache.
//
// No source maps: the package ships no src/ for them to point to (maps and sources would be a
// third of its files and of its size), and its declarations carry the TSDoc a reader needs.
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, relative } from 'node:path'
import { build } from 'esbuild'

const require = createRequire(import.meta.url)
const tsc = require.resolve('typescript/bin/tsc')
rmSync('dist', { recursive: true, force: true })
// tsc writes both builds' declarations; their code is bundled below.
for (const { project, dir, type } of [
  { project: 'tsconfig.build.json', dir: 'dist/esm', type: 'module' },
  { project: 'tsconfig.build.cjs.json', dir: 'dist/cjs', type: 'commonjs' },
]) {
  execFileSync(process.execPath, [tsc, '-p', project, '--emitDeclarationOnly'], {
    stdio: 'inherit',
  })
  mkdirSync(dir, { recursive: true })
  // Each output folder says which module system its .js files use, whatever the root says.
  writeFileSync(`${dir}/package.json`, JSON.stringify({ type }) + '\n')
}

const packageDir = (name) => dirname(require.resolve(`${name}/package.json`))
// fp-ts and io-ts as the bundles below take them: their ES module builds (fp-ts 2 has no
// "exports" map; its ES modules are in es6/, io-ts's are its "module"), of which esbuild keeps only
// the functions used.
const fpTsAndIoTs = {
  mainFields: ['module', 'main'],
  alias: { 'fp-ts/lib': join(packageDir('fp-ts'), 'es6') },
}

// What both builds of the library share. fp-ts and io-ts are bundled, only the functions used
// (plain functions and data: nothing a user's copy must be identical to; the declarations still
// take them from the dependencies). rxjs stays the user's rxjs, never bundled: a user's
// Observables and ours must be of one rxjs. @opentelemetry/api is required, when first needed, by
// a CommonJS module of the sources (src/telemetry/otel-api.cts).
const libraryBuild = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  external: ['rxjs', 'rxjs/*', '@opentelemetry/api'],
  ...fpTsAndIoTs,
  sourcemap: false,
  logLevel: 'warning',
}

// The ES module build: the package's four entries (the root, /testing, /experimental, /consul)
// and chunks for what they share, so that an error class or a registry is one whichever entry it
// comes through. Node pays for every module an ES module graph loads before it runs any of it (100
// empty ES modules: 9 MB of RSS), and more for each CommonJS package an ES module imports: tsc's
// output, some 100 modules importing fp-ts, io-ts and rxjs, cost an import 24 MB of RSS over a
// bare node and 4 times its CPU; this bundle, what bench/results.md's import rows say. The .cts
// modules' `require` is the one the banner gives each file.
await build({
  ...libraryBuild,
  entryPoints: {
    index: 'src/index.ts',
    'testing/index': 'src/testing/index.ts',
    experimental: 'src/experimental.ts',
    'consul/index': 'src/consul/index.ts',
  },
  outdir: 'dist/esm',
  chunkNames: 'chunks/[name]-[hash]',
  splitting: true,
  format: 'esm',
  tsconfig: 'tsconfig.build.json',
  plugins: [
    {
      // Node's modules through `require`, not `import`: an ES module import of a Node module
      // makes its ES module face, which reads every export, lazy ones included. node:fs's
      // `promises` alone then loads fs/promises and readline with it: 1.8 MB of an import's RSS
      // and a millisecond of its CPU, for nothing the library uses. Each such import becomes a
      // CommonJS module of one `require`, whose exports the bundle reads when it uses them.
      name: 'node-modules-required',
      setup(esbuild) {
        esbuild.onResolve({ filter: /^node:/ }, (args) =>
          args.kind === 'import-statement'
            ? { path: args.path, namespace: 'node-module-required' }
            : undefined,
        )
        esbuild.onLoad({ filter: /.*/, namespace: 'node-module-required' }, (args) => ({
          contents: `module.exports = require(${JSON.stringify(args.path)})`,
          loader: 'js',
        }))
      },
    },
  ],
  banner: {
    js: "import { createRequire as createRequireOfThisFile } from 'node:module';\nconst require = createRequireOfThisFile(import.meta.url);",
  },
})

// The CommonJS build: one bundle of the four entries (dist/cjs/bundle.js), each entry's file a
// line that hands out its part, so that an error class or a registry is one whichever entry it
// comes through (esbuild splits only ES modules). One file rather than a module per source file,
// for the same reason as above: Node pays for each module it loads.
const cjsEntries = {
  root: ['index.js', 'src/index.ts'],
  testing: ['testing/index.js', 'src/testing/index.ts'],
  experimental: ['experimental.js', 'src/experimental.ts'],
  consul: ['consul/index.js', 'src/consul/index.ts'],
}
await build({
  ...libraryBuild,
  stdin: {
    contents: Object.entries(cjsEntries)
      .map(([name, [, source]]) => `export * as ${name} from './${source}'`)
      .join('\n'),
    resolveDir: process.cwd(),
    loader: 'ts',
  },
  outfile: 'dist/cjs/bundle.js',
  format: 'cjs',
  tsconfig: 'tsconfig.build.cjs.json',
})
for (const [name, [file]] of Object.entries(cjsEntries)) {
  const bundle = relative(dirname(join('dist/cjs', file)), 'dist/cjs/bundle.js')
  writeFileSync(
    join('dist/cjs', file),
    // Marked as tsc marks a module it compiled, for the interop helpers of a user's compiler.
    `'use strict'\nconst { ${name} } = require('${bundle.startsWith('.') ? bundle : `./${bundle}`}')\n` +
      `Object.defineProperty(${name}, '__esModule', { value: true })\nmodule.exports = ${name}\n`,
  )
}

// The CLI: the CLI and everything it imports (rxjs, fp-ts, io-ts) in one
// CommonJS file. Node then reads and compiles one file instead of some 450 (the bench measures the
// bin's start-up against a bare `node -e 0`). The ES module builds of rxjs and
// fp-ts are picked so that only the parts the CLI uses are bundled: their CommonJS builds load
// every operator and module (Node's "node" condition would otherwise choose rxjs's CommonJS).
// The bin itself is a small entry bundled after it (below), which runs it with its code cache.
const cli = 'dist/rxsem-cli.cjs'
const bin = 'dist/rxsem.cjs'

await build({
  entryPoints: ['src/cli/main.ts'],
  tsconfig: 'tsconfig.build.json',
  outfile: cli,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  // An optional peer (src/telemetry/otel-api.cts): required at run time where it is installed,
  // never bundled.
  external: ['@opentelemetry/api'],
  mainFields: fpTsAndIoTs.mainFields,
  alias: { ...fpTsAndIoTs.alias, rxjs: join(packageDir('rxjs'), 'dist/esm') },
  logLevel: 'warning',
})
// esbuild names each bundled module (in a comment, and in the key of its wrapper) by its path
// from here, through wherever node_modules really is: a symlinked node_modules gives
// `../../<elsewhere>/node_modules/…`. Named from node_modules/ on, the CLI is the same file
// wherever it is built.
const realModules = relative(process.cwd(), realpathSync('node_modules'))
if (realModules !== 'node_modules') {
  writeFileSync(cli, readFileSync(cli, 'utf8').replaceAll(`${realModules}/`, 'node_modules/'))
}
// Node reads the CLI as one string: a single character above U+00FF anywhere in it (esbuild
// escapes them in strings, not in regular expressions or comments) makes that a two-byte string,
// slower to decode and to compile, and twice the memory.
const wide = /[\u0100-\uffff]/.exec(readFileSync(cli, 'utf8'))
if (wide !== null) {
  throw new Error(
    `${cli} holds the character U+${wide[0].codePointAt(0).toString(16).toUpperCase().padStart(4, '0')} at offset ${wide.index}: write it as an escape in the source`,
  )
}
// The bin: sets the CLI's V8 flags and runs the CLI with its code cache (src/cli/bin.ts), which
// it keys by this hash of the CLI, so that a cache is never taken for another build's code.
await build({
  entryPoints: ['src/cli/bin.ts'],
  tsconfig: 'tsconfig.build.json',
  outfile: bin,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  define: {
    RXSEM_BUNDLE_ID: JSON.stringify(
      createHash('sha256').update(readFileSync(cli)).digest('hex').slice(0, 16),
    ),
  },
  logLevel: 'warning',
})
if (!readFileSync(bin, 'utf8').startsWith('#!/usr/bin/env node\n')) {
  throw new Error(`${bin} does not start with the #!/usr/bin/env node of src/cli/bin.ts`)
}
if (readFileSync(cli, 'utf8').startsWith('#!')) {
  throw new Error(
    `${cli} starts with a #! line, which the bin cannot compile: remove it from src/cli/main.ts`,
  )
}
chmodSync(bin, 0o755)

// The watchdog of `rxsem run` is a bash script the CLI finds beside the bundled CLI
// (src/cli/run/watchdog.ts): beside the bin.
copyFileSync('src/cli/rxsem-watchdog.sh', join('dist', 'rxsem-watchdog.sh'))
