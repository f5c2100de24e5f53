// `npm run docs` builds the API reference from the TSDoc comments without a warning: the script
// treats warnings as errors, so a type that a public signature names without exporting it (which
// the reference would leave out) fails it. Written to a temporary folder, not to docs/api.
import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { after, describe, it } from 'node:test'

const root = resolve(import.meta.dirname, '../..')
const run = promisify(execFile)

describe('the API reference (npm run docs)', { timeout: 180_000 }, () => {
  const out = mkdtempSync(join(tmpdir(), 'rxsem-api-reference-'))
  after(() => rmSync(out, { recursive: true, force: true }))

  it('is generated without a warning', async () => {
    const { stdout, stderr } = await run('npm', ['run', 'docs', '--', '--out', out], {
      cwd: root,
      maxBuffer: 16 * 1024 * 1024,
    }).catch((error: { code?: number; stdout?: string; stderr?: string }) =>
      assert.fail(`npm run docs exited ${error.code}:\n${error.stdout}\n${error.stderr}`),
    )
    assert.doesNotMatch(`${stdout}\n${stderr}`, /\[warning\]/)
    assert.ok(existsSync(join(out, 'index.html')), 'no index.html written')
  })
})
