// What loading the package loads, in plain Node on the build (`npm test` builds dist/ first): none
// of Node's HTTP client ever (the library speaks HTTP/1.1 on its own sockets), `node:net` once a
// client connects, and `node:tls` with it for an agent spoken to over TLS; nor perf_hooks. The
// rxsem bin loads Node's HTTP modules only for its health endpoint. The bench's `import` step
// measures what an import costs (bench/import-cost.ts).
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { before, describe, it } from 'node:test'
import { builtFile } from '../support/build.js'

const root = fileURLToPath(new URL('../..', import.meta.url))
const run = promisify(execFile)

/** Prints which of Node's HTTP and socket modules the process has loaded. */
const LOADED_HTTP = `console.log(JSON.stringify(process.moduleLoadList
  .filter((m) => /^NativeModule (_?http\\w*|https|http2|net|tls)$/.test(m))
  .map((m) => m.slice('NativeModule '.length)).sort()))`

/** Runs `code` in a fresh plain Node at the package root. */
function runIn(type: 'module' | 'commonjs', code: string): Promise<{ stdout: string }> {
  return run(process.execPath, [`--input-type=${type}`, '-e', code], {
    cwd: root,
    env: { PATH: process.env['PATH'] ?? '' },
  })
}

/** Runs `code` as `runIn` does; returns Node's HTTP modules it loaded. */
async function httpLoadedBy(type: 'module' | 'commonjs', code: string): Promise<string[]> {
  const { stdout } = await runIn(type, `${code}\n${LOADED_HTTP}`)
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
    it(`loads none of Node's HTTP client until a client is made (${type})`, async () => {
      assert.deepEqual(await httpLoadedBy(type, load[type]), [])
    })

    it(`loads nothing of them when a client of an http address is made (${type})`, async () => {
      const loaded = await httpLoadedBy(
        type,
        `${load[type]} const client = m.createConsulClient({ address: '127.0.0.1:1' }); void client.close();`,
      )
      assert.deepEqual(loaded, [])
    })

    it(`loads node:net alone once a client of an http address connects (${type})`, async () => {
      // Port 1 on loopback refuses: the read fails, once its connection was tried.
      const { stdout } = await runIn(
        type,
        `${load[type]} (async () => {
          const client = m.createConsulClient({ address: '127.0.0.1:1' });
          const answer = await client.kv.get('x')();
          if (answer._tag !== 'Left') throw new Error('port 1 answered');
          await client.close();
          ${LOADED_HTTP}
        })()`,
      )
      assert.deepEqual(JSON.parse(stdout), ['net'])
    })

    it(`loads node:net and tls, and nothing of HTTP, for an https address (${type})`, async () => {
      const loaded = await httpLoadedBy(
        type,
        `${load[type]} const client = m.createConsulClient({ address: 'https://127.0.0.1:1' }); void client.close();`,
      )
      assert.deepEqual(loaded, ['net', 'tls'])
    })
  }

  /** An agent of one answer: an empty listing, to whatever is asked. */
  const ONE_ANSWER =
    "'HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\nX-Consul-Index: 7\\r\\nContent-Length: 2\\r\\n\\r\\n[]'"

  for (const type of ['module', 'commonjs'] as const) {
    it(`loads neither HTTP nor timing modules for a whole exchange (${type})`, async () => {
      // A server on loopback in the same process answers once; the client's connection carries
      // the whole exchange, then idles (stamped on the monotonic clock, not by perf_hooks).
      const { stdout } = await runIn(
        type,
        `${load[type]} (async () => {
          const net = await import('node:net');
          const server = net.createServer((socket) => socket.once('data', () => socket.write(${ONE_ANSWER})));
          await new Promise((listening) => server.listen(0, '127.0.0.1', listening));
          const client = m.createConsulClient({ address: '127.0.0.1:' + server.address().port });
          const answer = await client.kv.list('x')();
          if (answer._tag !== 'Right') throw new Error('no answer: ' + JSON.stringify(answer));
          await client.close();
          server.close();
          console.log(JSON.stringify(process.moduleLoadList.filter((m) => /perf_hooks|_?http\\w*$/.test(m))));
        })()`,
      )
      assert.deepEqual(JSON.parse(stdout), [])
    })
  }

  it('the rxsem bin loads no HTTP module unless --health-addr asks for its endpoint', async () => {
    // Whatever the bundle requires at its top level is loaded on every run; `--help` runs nothing
    // else. Printed at exit, by a preload of this process's own.
    const atExit = `process.on('exit', () => process.stderr.write('LOADED ' + JSON.stringify(process.moduleLoadList.filter((m) => /perf_hooks|_?http\\w*$/.test(m))) + '\\n'))`
    const { stderr } = await run(
      process.execPath,
      [
        '--import',
        `data:text/javascript,${encodeURIComponent(atExit)}`,
        builtFile('dist/rxsem.cjs'),
        'run',
        '--help',
      ],
      { cwd: root, env: { PATH: process.env['PATH'] ?? '', NODE_DISABLE_COMPILE_CACHE: '1' } },
    )
    const loaded = /^LOADED (.*)$/m.exec(stderr)?.[1]
    assert.deepEqual(JSON.parse(loaded ?? 'null'), [])
  })

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
})
