// What loading the package loads, in plain Node on the build (`npm test` builds dist/ first): no
// undici until a client is made, and then undici's Pool without its index (fetch, WebSocket,
// caches, mocks); the same Pool and request as undici's index exports. The bench's `import` step
// measures what this saves (bench/import-cost.ts).
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { before, describe, it } from 'node:test'
import { builtFile } from '../support/build.js'
import { Pool } from 'undici'
import { undiciPool } from '../../src/consul/undici-pool.cjs'

const root = fileURLToPath(new URL('../..', import.meta.url))
const run = promisify(execFile)

/** Prints which of undici's files the process has loaded, by their path under undici/. */
const LOADED_UNDICI = `console.log(JSON.stringify(Object.keys(require.cache)
  .filter((path) => /[\\\\/]node_modules[\\\\/]undici[\\\\/]/.test(path))
  .map((path) => path.replace(/^.*[\\\\/]node_modules[\\\\/]undici[\\\\/]/, '').replaceAll('\\\\', '/'))))`

/** Runs `code` in a fresh plain Node at the package root; returns the undici files it loaded. */
async function undiciLoadedBy(type: 'module' | 'commonjs', code: string): Promise<string[]> {
  // An ES module sees the CommonJS cache, where undici's files are, through createRequire.
  const prelude =
    type === 'module'
      ? "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);"
      : ''
  const { stdout } = await run(
    process.execPath,
    [`--input-type=${type}`, '-e', `${prelude}${code}\n${LOADED_UNDICI}`],
    { cwd: root, env: { PATH: process.env['PATH'] ?? '' } },
  )
  return JSON.parse(stdout) as string[]
}

const load = {
  module: "const m = await import('rx-consul-semaphore');",
  commonjs: "const m = require('rx-consul-semaphore');",
} as const

describe('loading the package', () => {
  before(() => {
    for (const file of ['dist/esm/index.js', 'dist/cjs/index.js']) builtFile(file)
  })

  for (const type of ['module', 'commonjs'] as const) {
    it(`loads none of undici until a client is made (${type})`, async () => {
      assert.deepEqual(await undiciLoadedBy(type, load[type]), [])
    })

    it(`loads undici's Pool, not its index, when a client is made (${type})`, async () => {
      const loaded = await undiciLoadedBy(
        type,
        `${load[type]} const client = m.createConsulClient({ address: '127.0.0.1:1' }); void client.close();`,
      )
      assert.ok(loaded.includes('lib/dispatcher/pool.js'), `loaded: ${loaded.join(', ')}`)
      assert.ok(loaded.includes('lib/api/api-request.js'), `loaded: ${loaded.join(', ')}`)
      assert.ok(!loaded.includes('index.js'), "undici's index.js was loaded")
      assert.ok(!loaded.some((path) => path.startsWith('lib/web/')), 'fetch or WebSocket loaded')
    })
  }

  it("takes undici's Pool and request from its files, the very ones its index exports", () => {
    const loaded = undiciPool()
    assert.equal(loaded.Pool, Pool)
    // eslint-disable-next-line @typescript-eslint/unbound-method -- compared, not called
    assert.equal(loaded.request, Pool.prototype.request)
  })
})
