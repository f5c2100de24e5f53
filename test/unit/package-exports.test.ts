// The published package works from both module systems, in plain Node (no tsx loader, which would
// paper over resolution problems such as fp-ts's directory imports). `npm test` builds dist/ first.
// Importing by the package's own name goes through its "exports" map.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, it } from 'node:test'

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

describe('package exports', () => {
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

  it('ships type declarations for both module systems', () => {
    for (const d of ['dist/esm/index.d.ts', 'dist/cjs/index.d.ts']) {
      assert.ok(existsSync(`${root}/${d}`), `${d} is missing`)
    }
  })
})
