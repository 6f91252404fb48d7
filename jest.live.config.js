// The live tier (`npm run test:live`, test/live/run.ts starts the agents): the live suites and the
// conformance suites, the latter against the real agent instead of FakeNomad. A live suite run any
// other way fails at once (test/live/support/live.ts liveAgents).
import base from './jest.config.js';

/** @type {import('jest').Config} */
export default {
  ...base,
  testMatch: ['<rootDir>/test/live/**/*.test.ts', '<rootDir>/test/conformance/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/'],
  testTimeout: 180000,
  // One suite at a time: every suite shares one agent, and the timing suites (health verdicts against
  // Nomad's, its CPU-load half, the client's batching) measured another suite's load when two ran at once.
  maxWorkers: 1,
};
