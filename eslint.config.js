import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import globals from 'globals';

export default tseslint.config(
  { ignores: ['node_modules/', '.tools/', 'data/', '**/dist/', 'test/fixtures/', 'gateway/src/local/demo-site/'] },
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
    // The dashboard's browser modules, served as they are (no build step).
    files: ['gateway/src/dashboard/public/**/*.js'],
    languageOptions: { globals: globals.browser, sourceType: 'module' },
  },
  {
    // process.env is read in one place per program: its main.ts (and the CLI entry, which hands it on).
    files: ['common/src/**/*.ts', 'client/src/**/*.ts', 'gateway/src/**/*.ts', 'agent/src/**/*.ts'],
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'process', property: 'env', message: 'Read the environment in main.ts and pass configuration in.' },
      ],
    },
  },
);
