// @ts-check
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

/**
 * The folders whose code is pure, and what each may import from the rest of src/ besides types
 * of the transport's data (src/consul: KVSnapshot, ConsulError, ...), which leave no code behind.
 * The core builds on src/shared; src/shared builds on nothing.
 */
const PURE_FOLDERS = [
  { name: 'core', mayImport: ['shared'] },
  { name: 'shared', mayImport: [] },
]

/** Packages a pure module may load: RxJS, fp-ts and io-ts. No undici, no Node module. */
const PURE_PACKAGES = '^(?![./]|rxjs$|fp-ts/|io-ts$)'

/** The deepest nesting below a pure folder that `pureImportGuard` spells out (src/core/a/b/c/x.ts). */
const PURE_MAX_DEPTH = 3

/**
 * The import rules of one pure folder, one block per depth below it. A relative import names no
 * folder, only a number of `../`: from src/core/semaphore/x.ts, `../events.js` stays in the core and
 * `../../effects/registry.js` leaves it. So the block for files `depth` folders down refuses any
 * import that climbs more than `depth` levels, unless it lands in a folder the pure folder may
 * import, or takes only types from src/consul. Files deeper than PURE_MAX_DEPTH may not climb at
 * all, until PURE_MAX_DEPTH is raised.
 *
 * @param {{ name: string, mayImport: string[] }} folder
 * @returns {import('typescript-eslint').ConfigArray}
 */
function pureImportGuard(folder) {
  const packages = {
    regex: PURE_PACKAGES,
    message: `src/${folder.name} loads only rxjs, fp-ts and io-ts: no I/O (docs/design.md).`,
  }
  // `x/../` would hide where a path lands.
  const climbBack = {
    regex: '(^|/)[^./][^/]*/\\.\\.(/|$)',
    message: 'Write the path without `x/../`.',
  }
  const depths = Array.from({ length: PURE_MAX_DEPTH + 1 }, (_, depth) => depth)
  return [
    ...depths.map((depth) => {
      const out = `^(\\.\\./){${depth + 1}}`
      return {
        files: [`src/${folder.name}/${'*/'.repeat(depth)}*.ts`],
        rules: {
          '@typescript-eslint/no-restricted-imports': [
            'error',
            {
              patterns: [
                packages,
                climbBack,
                {
                  regex: `${out}(?!(${[...folder.mayImport, 'consul'].join('|')})/)`,
                  message:
                    `src/${folder.name} imports ` +
                    [...folder.mayImport.map((name) => `src/${name}`), 'types of src/consul'].join(
                      ', ',
                    ) +
                    ', nothing else outside itself (docs/design.md).',
                },
                {
                  regex: `${out}consul/`,
                  allowTypeImports: true,
                  message: `src/${folder.name} takes only types from src/consul (\`import type\`).`,
                },
              ],
            },
          ],
        },
      }
    }),
    {
      files: [`src/${folder.name}/${'*/'.repeat(PURE_MAX_DEPTH + 1)}**/*.ts`],
      rules: {
        '@typescript-eslint/no-restricted-imports': [
          'error',
          {
            patterns: [
              packages,
              {
                regex: '^\\.\\./',
                message: `Raise PURE_MAX_DEPTH in eslint.config.js to check this file's imports.`,
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
  // The pure core (src/core) and the pure module beside it (src/shared): no I/O, no clock but the
  // RxJS scheduler's, and no run-time code from the layers around them (docs/design.md, "Layers").
  {
    files: [...PURE_FOLDERS.map((folder) => `src/${folder.name}/**/*.ts`)],
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
  ...PURE_FOLDERS.flatMap(pureImportGuard),
)
