// The floor guard of eslint.config.js, run through ESLint's Node API on small snippets given the
// path of a file they could live in: the pure floors (src/core, at any depth, and src/base below
// it) load nothing from the effects layer, the transport, the telemetry, the CLI or the package's
// entry files, not even types, no undici and no Node module, and read no clock; every other floor
// imports only itself and the floors below it (floors.json). The same imports from a higher floor
// pass: the guard is about where a file is, not about the names it imports.
import assert from 'node:assert/strict'
import { join, resolve } from 'node:path'
import { describe, it } from 'node:test'
import { ESLint, type Linter } from 'eslint'
import tseslint from 'typescript-eslint'

const root = resolve(import.meta.dirname, '../..')

// The project's own config. Its type-aware rules need a file on disk that the TypeScript project
// includes, which a snippet is not; the guard's rules read only the syntax, so they are kept.
const eslint = new ESLint({
  cwd: root,
  overrideConfigFile: join(root, 'eslint.config.js'),
  overrideConfig: tseslint.configs.disableTypeChecked,
})

async function lint(filePath: string, code: string): Promise<Linter.LintMessage[]> {
  const [result] = await eslint.lintText(code, { filePath })
  assert.ok(result !== undefined, `ESLint gave no result for ${filePath}`)
  const parseErrors = result.messages.filter((message) => message.ruleId === null)
  assert.deepEqual(parseErrors, [], `${filePath}: the snippet does not parse`)
  return result.messages
}

/** Asserts that `code` at `filePath` breaks `rule` (and so fails `npm run lint`). */
async function refused(filePath: string, code: string, rule: RegExp): Promise<void> {
  const messages = await lint(filePath, code)
  assert.ok(
    messages.some((message) => message.severity === 2 && rule.test(message.ruleId ?? '')),
    `${filePath}: expected ${String(rule)} to refuse\n${code}\ngot ${JSON.stringify(messages)}`,
  )
}

/** Asserts that `code` at `filePath` lints clean. */
async function allowed(filePath: string, code: string): Promise<void> {
  assert.deepEqual(await lint(filePath, code), [], `${filePath}: expected no problem in\n${code}`)
}

const IMPORTS = /(^|\/)no-restricted-imports$/
const CLOCK = /^no-restricted-(globals|properties|syntax)$/

/** A snippet that imports `name` from `from` and uses it, lint-clean but for the import. */
const importing = (name: string, from: string): string =>
  `import { ${name} } from '${from}'\n\nexport const used = ${name}\n`

/** A snippet that imports only the type `name` from `from` and uses it. */
const importingType = (name: string, from: string): string =>
  `import type { ${name} } from '${from}'\n\nexport type Used = ${name}\n`

describe('the floor guard (eslint.config.js)', () => {
  it('refuses an import of the effects layer from a nested core file', async () => {
    await refused(
      'src/core/semaphore/x.ts',
      importing('contend', '../../effects/coordinator/contend.js'),
      IMPORTS,
    )
    await refused(
      'src/core/semaphore/x.ts',
      importing('registry', '../../effects/registry.js'),
      IMPORTS,
    )
    await refused(
      'src/core/semaphore/x.ts',
      importingType('Member', '../../effects/coordinator/contend.js'),
      IMPORTS,
    )
  })

  it('refuses the transport, its types too, and allows the data types of the base floor', async () => {
    await refused(
      'src/core/semaphore/x.ts',
      importing('createConsulHttp', '../../consul/http.js'),
      IMPORTS,
    )
    await refused(
      'src/core/release/x.ts',
      importing('watchPrefix', '../../consul/watch-prefix.js'),
      IMPORTS,
    )
    await refused('src/core/x.ts', importing('createConsulClient', '../consul/client.js'), IMPORTS)
    await refused(
      'src/core/semaphore/x.ts',
      importingType('ConsulClient', '../../consul/client-api.js'),
      IMPORTS,
    )
    await allowed(
      'src/core/semaphore/x.ts',
      importingType('KVSnapshot', '../../base/kv-snapshot.js'),
    )
  })

  it('refuses the telemetry, the CLI and the entry files, at any depth', async () => {
    await refused('src/core/x.ts', importing('scope', '../telemetry/scope.js'), IMPORTS)
    await refused('src/core/contender/x.ts', importing('main', '../../cli/main.js'), IMPORTS)
    await refused(
      'src/core/a/b/x.ts',
      importing('registry', '../../../effects/registry.js'),
      IMPORTS,
    )
    await refused('src/core/semaphore/x.ts', importing('semaphore', '../../index.js'), IMPORTS)
    await refused(
      'src/core/semaphore/x.ts',
      importing('semaphore', '../../recipes/semaphore.js'),
      IMPORTS,
    )
    await refused('src/core/semaphore/x.ts', importing('decide', '../../experimental.js'), IMPORTS)
  })

  it('refuses undici and Node modules', async () => {
    await refused('src/core/semaphore/x.ts', importing('Pool', 'undici'), IMPORTS)
    await refused('src/core/semaphore/x.ts', importing('readFileSync', 'node:fs'), IMPORTS)
    await refused('src/core/semaphore/x.ts', importing('readFileSync', 'fs'), IMPORTS)
    await refused('src/base/x.ts', importing('Pool', 'undici'), IMPORTS)
  })

  it('allows the base floor and the rest of the core, from any depth', async () => {
    await allowed('src/core/semaphore/x.ts', importing('LOCK_FLAGS', '../../base/flags.js'))
    await allowed('src/core/x.ts', importing('BACKOFF', '../base/backoff.js'))
    await allowed('src/core/contender/x.ts', importing('decide', '../semaphore/decide.js'))
    await allowed('src/core/semaphore/x.ts', importing('map', 'rxjs'))
  })

  it('keeps the base floor below the core and the transport, types included', async () => {
    await refused('src/base/x.ts', importing('decide', '../core/semaphore/decide.js'), IMPORTS)
    await refused('src/base/x.ts', importing('createConsulHttp', '../consul/http.js'), IMPORTS)
    await refused('src/base/x.ts', importingType('Decision', '../core/events.js'), IMPORTS)
    await allowed('src/base/x.ts', importingType('ConsulError', './consul-error.js'))
  })

  it('refuses an import up a floor from every other floor, types and re-exports included', async () => {
    await refused('src/consul/x.ts', importing('scope', '../telemetry/scope.js'), IMPORTS)
    await refused(
      'src/effects/coordinator/x.ts',
      importingType('SlotGuard', '../../handle/slot-guard.js'),
      IMPORTS,
    )
    await refused(
      'src/options/x.ts',
      "export { semaphore } from '../recipes/semaphore.js'\n",
      IMPORTS,
    )
    await refused('src/handle/x.ts', importing('evict', '../operator/evict.js'), IMPORTS)
    await refused('src/recipes/x.ts', importing('main', '../cli/main.js'), IMPORTS)
    await refused('src/operator/doctor/x.ts', importing('semaphore', '../../index.js'), IMPORTS)
    await allowed('src/cli/run/x.ts', importing('semaphore', '../../recipes/semaphore.js'))
    await allowed('src/recipes/x.ts', importing('slotGuard', '../handle/slot-guard.js'))
  })

  it('allows the same imports from the effects layer', async () => {
    await allowed(
      'src/effects/coordinator/x.ts',
      importing('registry', '../../effects/registry.js'),
    )
    await allowed(
      'src/effects/coordinator/x.ts',
      importing('createConsulHttp', '../../consul/http.js'),
    )
    await allowed('src/effects/coordinator/x.ts', importing('LOCK_FLAGS', '../../base/flags.js'))
    await allowed(
      'src/effects/x.ts',
      'export const later = (): unknown => setTimeout(() => 0, 1)\n',
    )
  })

  it('refuses a clock in the core and the base floor', async () => {
    await refused('src/core/semaphore/x.ts', 'export const now = (): number => Date.now()\n', CLOCK)
    await refused('src/core/semaphore/x.ts', 'export const now = (): Date => new Date()\n', CLOCK)
    await refused(
      'src/core/semaphore/x.ts',
      'export const now = (): number => performance.now()\n',
      CLOCK,
    )
    await refused(
      'src/core/contender/x.ts',
      'export const later = (): unknown => setTimeout(() => 0, 1)\n',
      CLOCK,
    )
    await refused(
      'src/base/x.ts',
      'export const later = (): unknown => setInterval(() => 0, 1)\n',
      CLOCK,
    )
  })
})
