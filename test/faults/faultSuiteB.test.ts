/** The seeded fault suite over the second half of the recorded scenarios (see faultSuiteA.test.ts). */
import { replayedScenarios } from '../supervisor/support/harness.js';
import { SEEDS, differencesUnderFaults } from './support.js';

const scenarios = replayedScenarios();

test.each(scenarios.slice(Math.ceil(scenarios.length / 2)))('%s: 30 seeds of faults, the same verdicts at the same times with the same reasons', async (name) => {
  const { differences, disturbed, runs } = await differencesUnderFaults(name);
  expect(runs).toBe(SEEDS.length);
  expect(differences).toEqual([]);
  expect(disturbed).toBeGreaterThanOrEqual(runs - 3);
}, 120_000);
