// Mutation testing of the pure domain modules (npm run test:mutation; not part of CI: it takes minutes).
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'mocha',
  testRunnerNodeArgs: ['--import', 'tsx'],
  mochaOptions: { spec: ['test/unit/**/*.test.ts'], config: '.mocharc.json' },
  mutate: [
    'src/messaging/**/*.ts',
    'src/pricing/**/*.ts',
    'src/scheduling/**/*.ts',
    'src/api-keys/api-key.ts',
    'src/api-keys/rate-limiter.ts',
    'src/carriers/carrier-outcomes.ts',
    'src/webhooks/event-envelope.ts',
    'src/webhooks/retry-plan.ts',
    'src/libraries/errors/**/*.ts',
    'src/libraries/validation/**/*.ts',
  ],
  coverageAnalysis: 'perTest',
  concurrency: 2,
  timeoutMS: 20000,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  htmlReporter: { fileName: 'reports/mutation/mutation.html' },
  jsonReporter: { fileName: 'reports/mutation/mutation.json' },
  tempDirName: '.stryker-tmp',
  ignorePatterns: ['data', 'reports', 'coverage', 'dist'],
};
