// @ts-check
import js from '@eslint/js'
import tseslint from 'typescript-eslint'

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
  {
    // The pure core has no I/O and no clock but RxJS schedulers (docs/design.md).
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [
                'undici',
                'node:*',
                'rxjs/internal/*',
                'rxjs/operators',
                '../consul/http*',
                '../effects/*',
              ],
            },
            {
              regex: '^fp-ts/(?!lib/[A-Za-z]+\\.js$)',
              message: "Import fp-ts modules as 'fp-ts/lib/<Module>.js' (see eslint.config.js).",
            },
          ],
        },
      ],
      'no-restricted-globals': ['error', 'setTimeout', 'setInterval', 'fetch'],
      'no-restricted-properties': ['error', { object: 'Date', property: 'now' }],
    },
  },
)
