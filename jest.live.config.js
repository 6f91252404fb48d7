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
  // One agent serves every suite: two at a time keeps 2 cores busy without starving the agent, and the
  // timing suite runs alone after the rest (test/live/run.ts). In band the tier passes too, leaving no
  // handle, but took 841 s against 376 s at two at a time on the same loaded machine.
  maxWorkers: 2,
};
