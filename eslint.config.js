// Lint rules for every package's sources and tests, the benchmarks and the scripts; `npm test`
// runs them (scripts/run-tests.mjs) so a change that floats a promise cannot land.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

// Promises are where a lint pays off most: an unawaited write or delivery fails silently.
const promiseRules = {
  '@typescript-eslint/no-floating-promises': [
    'error',
    // node:test's test() and describe() return promises the runner itself awaits.
    { allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite'] }] },
  ],
  '@typescript-eslint/no-misused-promises': 'error',
  '@typescript-eslint/await-thenable': 'error',
};

export default tseslint.config(
  {
    ignores: [
      '**/dist/**',
      'packages/server/dashboard-assets/**',
      'test-artifacts/**',
      '**/node_modules/**',
      'bench/results/**',
      'packages/server/test/fixtures/**',
      'coverage/**',
      '.tmp/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: globals.node,
      // One program over everything linted: tests and benchmarks are in no package's build.
      parserOptions: { project: './tsconfig.eslint.json', tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      ...promiseRules,
      // `_name` marks a parameter an interface requires but this implementation does not use.
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      // A `let` that a callback defined before its only assignment may read (an answer that
      // comes synchronously) cannot be a `const`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  {
    files: ['packages/*/src/**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    rules: {
      ...promiseRules,
      // Store methods and Fastify plugins are async to meet an async contract (a throw becomes a
      // rejection the caller handles), even where the SQLite implementation never waits.
      '@typescript-eslint/require-await': 'off',
      // Rethrowing a caught error as a rejection passes on whatever was thrown, as it was.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
      // An opaque handle typed `unknown` (the analytics clock's timers) still reads better as
      // `TimerHandle | undefined` where a timer may be unset.
      '@typescript-eslint/no-redundant-type-constituents': 'off',
    },
  },
  {
    // The dashboard runs in a browser and has a program of its own (DOM types, JSX for Preact).
    files: ['packages/dashboard/**/*.{ts,tsx}'],
    languageOptions: {
      globals: globals.browser,
      parserOptions: { project: './packages/dashboard/tsconfig.json', tsconfigRootDir: import.meta.dirname },
    },
  },
  {
    files: ['packages/*/test/**', 'bench/**', 'scripts/**'],
    rules: {
      // Tests and benchmarks read what servers answer (`JSON.parse`, IPC messages) as `any`,
      // and their assertions check it; typing each body would add casts and catch nothing.
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
);
