// The published package works from both module systems (built by `npm run build`, which
// `npm test` runs first). Importing by the package's own name goes through its "exports" map.
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { describe, it } from 'node:test'

// Held in a variable so the typechecker, which runs before the build, does not resolve it.
const packageName: string = 'rx-consul-semaphore'

describe('package exports', () => {
  it('can be imported as an ES module', async () => {
    const esm = (await import(packageName)) as typeof import('../../src/index.js')
    assert.equal(esm.SEMAPHORE_FLAGS, 16210313421097356768n)
    assert.equal(esm.LOCK_FLAGS, 3304740253564472344n)
  })

  it('can be required as a CommonJS module', () => {
    const require = createRequire(import.meta.url)
    const resolved = require.resolve(packageName)
    assert.match(resolved, /dist[/\\]cjs[/\\]index\.js$/)
    const cjs = require(packageName) as typeof import('../../src/index.js')
    assert.equal(cjs.SEMAPHORE_FLAGS, 16210313421097356768n)
  })

  it('ships type declarations for both module systems', async () => {
    const { existsSync } = await import('node:fs')
    const { fileURLToPath } = await import('node:url')
    for (const d of ['../../dist/esm/index.d.ts', '../../dist/cjs/index.d.ts']) {
      assert.ok(existsSync(fileURLToPath(new URL(d, import.meta.url))), `${d} is missing`)
    }
  })
})
