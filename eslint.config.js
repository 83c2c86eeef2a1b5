// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

const NACT_ONLY_IN_ACTORS_LIBRARY = {
  name: 'nact',
  message: 'Only src/libraries/actors/ may import nact; use its typed wrapper.',
};

const IO_MODULES = ['pg', 'mongodb', 'express', 'agenda', 'node:fs', 'node:net', 'node:http', 'node:https', 'fs', 'net', 'http', 'https']
  .map((name) => ({ name, message: 'Actor behaviour is pure: do I/O in the wrapper or effects layer.' }));

export default tseslint.config(
  { ignores: ['dist/**', 'coverage/**', 'node_modules/**', '.stryker-tmp/**', 'reports/**', 'data/**'] },
  eslint.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-imports': ['error', { paths: [NACT_ONLY_IN_ACTORS_LIBRARY] }],
    },
  },
  {
    files: ['src/libraries/actors/**/*.ts'],
    rules: { 'no-restricted-imports': 'off' },
  },
  {
    files: ['src/**/*-actor.ts', 'src/**/*-behaviour.ts'],
    rules: { 'no-restricted-imports': ['error', { paths: [NACT_ONLY_IN_ACTORS_LIBRARY, ...IO_MODULES] }] },
  },
  {
    // the client ships to merchants on its own: Node built-ins, p-retry and its own files only
    files: ['src/client/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(?!node:|p-retry$|\\./)', message: 'The client is self-contained: import only node:*, p-retry and ./ files.' }] },
      ],
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      // chai's property assertions (expect(x).to.be.true) read as expressions
      '@typescript-eslint/no-unused-expressions': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    files: ['**/*.js', '**/*.cjs', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
  },
);
