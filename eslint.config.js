import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

const AGENT_REFUSED = 'The gateway does not depend on the agent: share through @perfwatch/common, or take it in.';

export default tseslint.config(
  { ignores: ['node_modules/', '.tools/', 'data/', '**/dist/', 'test/fixtures/', 'local/src/demo-site/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', Buffer: 'readonly', console: 'readonly', URL: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-syntax': [
        'error',
        { selector: 'TSEnumDeclaration', message: 'Use an `as const` object and a derived union type.' },
      ],
    },
  },
  {
    // The gateway reaches agents over NATS or through the LocalAgent it is handed, never by
    // importing them: the agent's package (Chrome, Lighthouse) is no dependency of the gateway's.
    files: ['gateway/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: '@perfwatch/agent', message: AGENT_REFUSED }],
          patterns: [{ group: ['@perfwatch/agent/*', '**/agent/src', '**/agent/src/**'], message: AGENT_REFUSED }],
        },
      ],
    },
  },
  {
    // The dashboard's browser modules, served as they are (no build step).
    files: ['gateway/src/dashboard/public/**/*.js'],
    languageOptions: { globals: globals.browser, sourceType: 'module' },
  },
  {
    // Issue 31's size limits: no product file over 400 lines (blank lines and comments counted),
    // no function over 60 lines of code. Small modules with one job each, named for it.
    files: ['*/src/**/*.ts', 'bin/**/*.js', 'gateway/src/dashboard/public/**/*.js'],
    ignores: ['**/*.test.ts'],
    rules: {
      'max-lines': ['error', { max: 400, skipBlankLines: false, skipComments: false }],
      'max-lines-per-function': ['error', { max: 60, skipBlankLines: true, skipComments: true }],
    },
  },
  {
    // A store backend file of a slice only maps fields and runs queries: the rules live in the slice.
    files: ['gateway/src/*/store/mongo-*.ts', 'gateway/src/*/store/sqlite-*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'max-lines': ['error', { max: 300, skipBlankLines: false, skipComments: false }],
    },
  },
  {
    // process.env is read in one place per program: its main.ts (and the CLI entry, which hands it on).
    files: ['{common,client,gateway,agent,local}/src/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'Read the environment in main.ts and pass configuration in.' },
      ],
    },
  },
);
