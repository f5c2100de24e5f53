// What loading the package loads, in plain Node on the build (`npm test` builds dist/ first): no
// undici until a client is made, and then undici's Pool without its index (fetch, WebSocket,
// caches, mocks) nor its HTTP/2 client, which stays whole for any other user of undici; the same
// Pool and request as undici's index exports. The bench's `import` step
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

/** Runs `code` in a fresh plain Node at the package root, with `require` in an ES module too. */
function runIn(type: 'module' | 'commonjs', code: string): Promise<{ stdout: string }> {
  // An ES module sees the CommonJS cache, where undici's files are, through createRequire.
  const prelude =
    type === 'module'
      ? "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);"
      : ''
  return run(process.execPath, [`--input-type=${type}`, '-e', `${prelude}${code}`], {
    cwd: root,
    env: { PATH: process.env['PATH'] ?? '' },
  })
}

/** Runs `code` as `runIn` does; returns the undici files it loaded. */
async function undiciLoadedBy(type: 'module' | 'commonjs', code: string): Promise<string[]> {
  const { stdout } = await runIn(type, `${code}\n${LOADED_UNDICI}`)
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
      // Answers are read through the Pool's dispatch, without undici's request API and its streams.
      assert.ok(!loaded.some((path) => path.startsWith('lib/api/')), `loaded: ${loaded.join(', ')}`)
      assert.ok(!loaded.includes('index.js'), "undici's index.js was loaded")
      assert.ok(!loaded.some((path) => path.startsWith('lib/web/')), 'fetch or WebSocket loaded')
    })
  }

  for (const type of ['module', 'commonjs'] as const) {
    it(`loads neither undici's HTTP/2 client nor node:http2 when a client is made (${type})`, async () => {
      const { stdout } = await runIn(
        type,
        `${load[type]} const client = m.createConsulClient({ address: '127.0.0.1:1' }); void client.close();
console.log(JSON.stringify({
  h2Client: Object.keys(require.cache).some((path) => path.endsWith('client-h2.js')),
  http2: process.moduleLoadList.includes('NativeModule http2'),
}))`,
      )
      assert.deepEqual(JSON.parse(stdout), { h2Client: false, http2: false })
    })
  }

  it("imports Node's modules without their ES module faces (no fs/promises, no readline)", async () => {
    // An ES module import of node:fs reads every export of fs, `promises` among them, which loads
    // fs/promises and readline; the build requires Node's modules instead.
    const { stdout } = await runIn(
      'module',
      `${load.module}
console.log(JSON.stringify(process.moduleLoadList.filter((m) => /fs\\/promises|readline/.test(m))))`,
    )
    assert.deepEqual(JSON.parse(stdout), [])
  })

  it("leaves undici's HTTP/2 client whole for anyone else who uses undici in the process", async () => {
    // A user's own undici Client that speaks HTTP/2 (h2c, on loopback), made after the library's
    // first client: it gets the real HTTP/2 client, loaded when its connection needs it.
    const { stdout } = await runIn(
      'module',
      `${load.module}
const http2 = await import('node:http2')
const server = http2.createServer((request, response) => response.end('over ' + request.httpVersion))
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
const ours = m.createConsulClient({ address: '127.0.0.1:1' })
const before = Object.keys(require.cache).some((path) => path.endsWith('client-h2.js'))
const { Client } = require('undici')
const theirs = new Client('http://127.0.0.1:' + server.address().port, { useH2c: true })
const answer = await theirs.request({ path: '/', method: 'GET' })
const body = await answer.body.text()
await theirs.close(); await ours.close(); server.close()
const after = Object.keys(require.cache).some((path) => path.endsWith('client-h2.js'))
console.log(JSON.stringify({ before, body, after }))`,
    )
    assert.deepEqual(JSON.parse(stdout), { before: false, body: 'over 2.0', after: true })
  })

  it("takes undici's Pool from its file, the very one its index exports", () => {
    assert.equal(undiciPool(), Pool)
  })
})
