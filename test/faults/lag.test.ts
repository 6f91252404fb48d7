/**
 * A lagging cluster: FakeNomad delivers each allocation update a seeded delay after its task events
 * happened. Warden holds every verdict that only time reaches until a settle window has passed and
 * nothing earlier is in flight, so the verdicts, their times and their reasons are those of the
 * cluster without lag.
 */
import { replayedScenarios } from '../supervisor/support/harness.js';
import { verdictsLagging, verdictsUnder } from './support.js';

const SEEDS = [7, 8, 9, 10, 11];
const scenarios = replayedScenarios();

test.each(scenarios)('%s: delays of 0 to 4 s: no difference (the settle window learns how late updates come)', async (name) => {
  const clean = await verdictsUnder(name);
  for (const seed of SEEDS) expect({ seed, verdicts: await verdictsLagging(name, seed, { minMs: 0, maxMs: 4_000 }) }).toEqual({ seed, verdicts: clean });
}, 120_000);

test.each(scenarios)('%s: delays of 0 to 8 s and a settle window set to cover them from the start: no difference', async (name) => {
  const clean = await verdictsUnder(name);
  for (const seed of SEEDS) expect({ seed, verdicts: await verdictsLagging(name, seed, { minMs: 0, maxMs: 8_000 }, 8_000) }).toEqual({ seed, verdicts: clean });
}, 120_000);

test.each(scenarios)('%s: a steady 3 s delay, the default window: Warden learns the delay and waits it out', async (name) => {
  const clean = await verdictsUnder(name);
  // Every line 3 s late, give or take a millisecond: the delays of a loaded client syncing late.
  expect(await verdictsLagging(name, 1, { minMs: 3_000, maxMs: 3_001 })).toEqual(clean);
}, 120_000);
