// @ts-check
import { readFileSync } from 'node:fs'
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

/**
 * The floors of src/, lowest first, from floors.json (test/unit/import-graph.test.ts reads the same
 * table): each a folder, which may import itself and the floors before it, nothing above; the pure
 * ones load no I/O either. The entries at the root of src/ may import any floor.
 *
 * @typedef {{ entries: string[], floors: { folder: string, holds: string, pure: boolean }[] }} Floors
 */
/** @type {unknown} */
const floorsJson = JSON.parse(readFileSync(new URL('./floors.json', import.meta.url), 'utf8'))
const FLOORS = /** @type {Floors} */ (floorsJson)

/** Packages a pure module may load: RxJS, fp-ts and io-ts. No other package, no Node module. */
const PURE_PACKAGES = '^(?![./]|rxjs$|fp-ts/|io-ts$)'

/** The deepest nesting below a floor's folder that `floorImportGuard` spells out (src/core/a/b/c/x.ts). */
const MAX_DEPTH = 3

/**
 * The import rules of one floor, one block per depth below its folder. A relative import names no
 * folder, only a number of `../`: from src/core/semaphore/x.ts, `../events.js` stays in the core and
 * `../../effects/registry.js` leaves it. So the block for files `depth` folders down refuses any
 * import that climbs more than `depth` levels, unless it lands in a floor below. Type imports are
 * refused alike: a type from a floor above ties the floors together as much as code does. Files
 * deeper than MAX_DEPTH may not climb at all, until MAX_DEPTH is raised.
 *
 * @param {{ folder: string, pure: boolean }} floor
 * @param {number} index - Its place in FLOORS.floors, lowest first.
 * @returns {import('typescript-eslint').ConfigArray}
 */
function floorImportGuard(floor, index) {
  const name = floor.folder.replace(/^src\//, '')
  const below = FLOORS.floors.slice(0, index).map((lower) => lower.folder.replace(/^src\//, ''))
  const packages = {
    regex: PURE_PACKAGES,
    message: `${floor.folder} loads only rxjs, fp-ts and io-ts: no I/O (docs/design.md).`,
  }
  // `x/../` would hide where a path lands.
  const climbBack = {
    regex: '(^|/)[^./][^/]*/\\.\\.(/|$)',
    message: 'Write the path without `x/../`.',
  }
  const pure = floor.pure ? [packages] : []
  const allowed =
    below.length === 0
      ? `${floor.folder} imports nothing outside itself`
      : `${floor.folder} imports only itself and the floors below it (${below.map((name) => `src/${name}`).join(', ')})`
  const depths = Array.from({ length: MAX_DEPTH + 1 }, (_, depth) => depth)
  return [
    ...depths.map((depth) => ({
      files: [`${floor.folder}/${'*/'.repeat(depth)}*.{ts,cts}`],
      rules: {
        '@typescript-eslint/no-restricted-imports': [
          'error',
          {
            patterns: [
              ...pure,
              climbBack,
              {
                regex: `^(\\.\\./){${depth + 1}}(?!(${[name, ...below].join('|')})/)`,
                message: `${allowed}, types included (floors.json, docs/design.md).`,
              },
            ],
          },
        ],
      },
    })),
    {
      files: [`${floor.folder}/${'*/'.repeat(MAX_DEPTH + 1)}**/*.{ts,cts}`],
      rules: {
        '@typescript-eslint/no-restricted-imports': [
          'error',
          {
            patterns: [
              ...pure,
              {
                regex: '^\\.\\./',
                message: `Raise MAX_DEPTH in eslint.config.js to check this file's imports.`,
              },
            ],
          },
        ],
      },
    },
  ]
}

export default tseslint.config(
  { ignores: ['dist/', '.cache/', '.test-run/', 'docs/api/', 'node_modules/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        projectService: { allowDefaultProject: ['*.js', 'scripts/*.mjs', 'examples/*.mjs'] },
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          // node:test runs what describe/it return itself.
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite'] },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['rxjs/internal/*', 'io-ts/lib/*'] },
            {
              // rxjs 7 exports every operator from its root; 'rxjs/operators' is one more index.
              group: ['rxjs/operators'],
              message: "Import operators from 'rxjs'.",
            },
            {
              // fp-ts 2 has no "exports" map: 'fp-ts/Either' is a directory import, which Node's
              // ES module loader refuses. 'fp-ts/lib/Either.js' loads in both of our builds.
              regex: '^fp-ts/(?!lib/[A-Za-z]+\\.js$)',
              message: "Import fp-ts modules as 'fp-ts/lib/<Module>.js' (see eslint.config.js).",
            },
          ],
        },
      ],
      // Passing on what user code threw (typed unknown) is the honest thing to do.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
  },
  // The pure floors (src/base, src/core): no I/O, no clock but the RxJS scheduler's, and nothing
  // from the floors above them (docs/design.md, "Floors").
  {
    files: FLOORS.floors.filter((floor) => floor.pure).map((floor) => `${floor.folder}/**/*.ts`),
    rules: {
      'no-restricted-globals': [
        'error',
        ...['setTimeout', 'setInterval', 'setImmediate', 'queueMicrotask'].map((name) => ({
          name,
          message: 'A pure module sets no timer: return when to wake up, the effects layer waits.',
        })),
        ...['fetch', 'process', 'performance'].map((name) => ({
          name,
          message: 'A pure module does no I/O and reads no clock: take what it needs as arguments.',
        })),
      ],
      'no-restricted-properties': [
        'error',
        {
          object: 'Date',
          property: 'now',
          message: "A pure module reads no clock: take `now` as an argument (the scheduler's).",
        },
      ],
      'no-restricted-syntax': [
        'error',
        {
          selector: "NewExpression[callee.name='Date'][arguments.length=0]",
          message: "A pure module reads no clock: take `now` as an argument (the scheduler's).",
        },
        {
          selector: 'ImportExpression',
          message: 'A pure module loads no module at run time.',
        },
      ],
    },
  },
  ...FLOORS.floors.flatMap(floorImportGuard),
)
