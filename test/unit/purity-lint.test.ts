// The purity guard of eslint.config.js, run through ESLint's Node API on small snippets given the
// path of a file they could live in: the pure core (src/core, at any depth) and the pure module
// (src/shared) load no run-time code from the effects layer, the transport, the telemetry, the CLI
// or the package's entry files, no undici and no Node module, and read no clock; types of the
// transport's data are allowed, since they leave no code behind. The same imports from src/effects
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

describe('the purity guard (eslint.config.js)', () => {
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
      "import type { Member } from '../../effects/coordinator/contend.js'\n\nexport type Run = Member\n",
      IMPORTS,
    )
  })

  it("refuses the transport's run-time code, and allows the types of its data", async () => {
    await refused(
      'src/core/semaphore/x.ts',
      importing('createConsulHttp', '../../consul/http.js'),
      IMPORTS,
    )
    await refused(
      'src/core/release/x.ts',
      importing('isTransient', '../../consul/errors.js'),
      IMPORTS,
    )
    await refused('src/core/x.ts', importing('createConsulClient', '../consul/client.js'), IMPORTS)
    await allowed(
      'src/core/semaphore/x.ts',
      "import type { KVSnapshot } from '../../consul/types.js'\n\nexport type Seen = KVSnapshot\n",
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
    await refused('src/core/semaphore/x.ts', importing('semaphore', '../../semaphore.js'), IMPORTS)
    await refused('src/core/semaphore/x.ts', importing('decide', '../../experimental.js'), IMPORTS)
  })

  it('refuses undici and Node modules', async () => {
    await refused('src/core/semaphore/x.ts', importing('Pool', 'undici'), IMPORTS)
    await refused('src/core/semaphore/x.ts', importing('readFileSync', 'node:fs'), IMPORTS)
    await refused('src/core/semaphore/x.ts', importing('readFileSync', 'fs'), IMPORTS)
    await refused('src/shared/x.ts', importing('Pool', 'undici'), IMPORTS)
  })

  it('allows the pure module and the rest of the core, from any depth', async () => {
    await allowed('src/core/semaphore/x.ts', importing('LOCK_FLAGS', '../../shared/flags.js'))
    await allowed('src/core/x.ts', importing('BACKOFF', '../shared/backoff.js'))
    await allowed('src/core/contender/x.ts', importing('decide', '../semaphore/decide.js'))
    await allowed('src/core/semaphore/x.ts', importing('map', 'rxjs'))
  })

  it('keeps the pure module below the core and the transport', async () => {
    await refused('src/shared/x.ts', importing('decide', '../core/semaphore/decide.js'), IMPORTS)
    await refused('src/shared/x.ts', importing('createConsulHttp', '../consul/http.js'), IMPORTS)
    await allowed(
      'src/shared/x.ts',
      "import type { ConsulError } from '../consul/errors.js'\n\nexport type Failure = ConsulError\n",
    )
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
    await allowed('src/effects/coordinator/x.ts', importing('LOCK_FLAGS', '../../shared/flags.js'))
    await allowed(
      'src/effects/x.ts',
      'export const later = (): unknown => setTimeout(() => 0, 1)\n',
    )
  })

  it('refuses a clock in the core and the pure module', async () => {
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
      'src/shared/x.ts',
      'export const later = (): unknown => setInterval(() => 0, 1)\n',
      CLOCK,
    )
  })
})
