// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';
import { createNodeResolver, importX } from 'eslint-plugin-import-x';
import prettierConfig from 'eslint-config-prettier/flat';

const NACT_ONLY_IN_ACTORS_LIBRARY = {
  name: 'nact',
  message: 'Only src/libraries/actors/ may import nact; use its typed wrapper.',
};

const IO_MODULES = [
  'pg',
  'mongodb',
  'express',
  'agenda',
  'node:fs',
  'node:net',
  'node:http',
  'node:https',
  'fs',
  'net',
  'http',
  'https',
].map((name) => ({ name, message: 'Actor behaviour is pure: do I/O in the wrapper or effects layer.' }));

// Layering of src/ (docs/development.md draws it). An arrow is an allowed import; nothing points upwards.
//
//   composition roots   src/main.ts, src/gateway*.ts, src/composition/, src/wiring/, and the mains of the other
//                       processes (src/**/*-main.ts: the CLI's cli-main.ts, the connectors' connector-main.ts,
//                       smpp-main.ts, kannel-main.ts, simulator-main.ts), which read their process's environment and start it
//        ↓
//   entry points        src/entry-points/ (HTTP, CLI, transport consumers, schedulers)
//        ↓
//   business areas      src/api-keys, carriers, cluster, merchants, messaging, pricing, scheduling, wallets, webhooks
//        ↓                (areas may import one another; the rest of src/carriers/connector/ is the carriers area)
//   libraries           src/libraries/ (no business words)
//
//   src/client/ ships to merchants as a package of its own: it imports only its own files.
// no-restricted-paths wants a zone's `from` to be all globs or all paths: these are all globs.
const AREAS = ['api-keys', 'carriers', 'cluster', 'merchants', 'messaging', 'pricing', 'scheduling', 'wallets', 'webhooks'];
const AREA_FILES = AREAS.map((area) => `./src/${area}/**`);
const ENTRY_POINT_FILES = './src/entry-points/**';
const COMPOSITION_ROOT_FILES = ['./src/{main,gateway*}.ts', './src/{composition,wiring}/**', './src/**/*-main.ts'];

const LAYERS = [
  {
    target: './src/libraries',
    from: [...AREA_FILES, ENTRY_POINT_FILES, ...COMPOSITION_ROOT_FILES, './src/client/**'],
    message: 'A library knows no business area, entry point, composition root or the client: pass what it needs in.',
  },
  ...AREAS.map((area) => ({
    target: `./src/${area}`,
    from: [ENTRY_POINT_FILES, ...COMPOSITION_ROOT_FILES],
    message: 'A business area imports libraries and other areas, never an entry point or a composition root.',
  })),
  {
    target: './src/entry-points',
    from: COMPOSITION_ROOT_FILES,
    message: 'An entry point imports areas and libraries; the composition root builds it and hands it what it needs.',
  },
  {
    target: './src/client',
    from: ['./src/!(client)/**', './src/*.ts'],
    message: 'The client is published on its own: it imports only its own files.',
  },
];

/** Time is read through the Clock, so that tests can drive it. */
const CLOCK_MESSAGE =
  'Read the time from a Clock (src/libraries/clock/clock.ts): take one as a dependency, or systemClock at a process edge.';

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
        {
          patterns: [
            { regex: '^(?!node:|p-retry$|\\./)', message: 'The client is self-contained: import only node:*, p-retry and ./ files.' },
          ],
        },
      ],
    },
  },
  {
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      // packages are neither layers nor part of a cycle: do not read them
      'import-x/external-module-folders': ['node_modules'],
      'import-x/ignore': ['node_modules'],
      // sources import each other as ./file.js (NodeNext) and the file is ./file.ts
      'import-x/resolver-next': [
        createNodeResolver({ extensions: ['.ts', '.js', '.json', '.node'], extensionAlias: { '.js': ['.ts', '.js'] } }),
      ],
    },
    rules: {
      'import-x/no-restricted-paths': ['error', { basePath: import.meta.dirname, zones: LAYERS }],
      // runtime cycles only: `import type` leaves no trace in the emitted JavaScript
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'no-restricted-properties': ['error', { object: 'Date', property: 'now', message: CLOCK_MESSAGE }],
      'no-restricted-syntax': ['error', { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: CLOCK_MESSAGE }],
    },
  },
  {
    // a process's main (the CLI's, each connector's) is its composition root: it may import anything in src
    files: ['src/**/*-main.ts'],
    rules: { 'import-x/no-restricted-paths': 'off' },
  },
  {
    files: ['src/libraries/clock/**/*.ts'],
    rules: { 'no-restricted-properties': 'off', 'no-restricted-syntax': 'off' },
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
  // last: turns off the stylistic rules Prettier decides (npm run format)
  prettierConfig,
);
