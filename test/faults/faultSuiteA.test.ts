/**
 * The seeded fault suite over the first half of the recorded scenarios (the rest in
 * faultSuiteB.test.ts, so both run side by side): 30 seeds each, zero differences in verdicts,
 * times and reasons from the run without faults (see support.ts for the faults drawn).
 */
import { replayedScenarios } from '../supervisor/support/harness.js';
import { SEEDS, differencesUnderFaults } from './support.js';

const scenarios = replayedScenarios();
const FIRST_HALF = scenarios.slice(0, Math.ceil(scenarios.length / 2));

test.each(FIRST_HALF)('%s: 30 seeds of faults, the same verdicts at the same times with the same reasons', async (name) => {
  const { differences, disturbed, runs } = await differencesUnderFaults(name);
  expect(runs).toBe(SEEDS.length);
  // Each difference names its seed and the faults it drew, to replay it alone.
  expect(differences).toEqual([]);
  // The faults were felt: a reconnect or a failed answer in nearly every run.
  expect(disturbed).toBeGreaterThanOrEqual(runs - 3);
}, 120_000);
