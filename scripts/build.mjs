// Builds the package twice, as ES modules (dist/esm) and as CommonJS (dist/cjs), so that both
// `import` and `require` of 'rx-consul-semaphore' work (see the "exports" map in package.json).
import { execFileSync } from 'node:child_process'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'

const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc')
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
