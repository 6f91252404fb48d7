// Tests run as CommonJS through swc (no --experimental-vm-modules); see README "Tests".
/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  // The live suites need the agents test/live/run.ts starts (npm run test:live); npm test stays hermetic.
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/test/live/'],
  transform: {
    '^.+\\.(ts|mjs|js)$': [
      '@swc/jest',
      {
        jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
        module: { type: 'commonjs' },
      },
    ],
  },
  // Let ESM-only dependencies through the transform.
  transformIgnorePatterns: ['/node_modules/(?!(@xstate/graph|@fast-check|@statelyai/inspect|pixelmatch)/)'],
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  testTimeout: 30000,
  // Builds the inspector page (src/inspect/browser → dist/inspector), which the inspector tests serve.
  globalSetup: '<rootDir>/test/globalSetup.ts',
  // Fails a run that left something keeping the process alive, rather than hanging until CI's limit.
  globalTeardown: '<rootDir>/test/globalTeardown.ts',
};
