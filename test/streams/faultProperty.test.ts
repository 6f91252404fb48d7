import fc from 'fast-check';
import { join } from 'node:path';
import type { StreamFaultPlan } from '../../src/testing/nomad/faults.js';
import { listScenarios } from '../../src/testing/recording.js';
import { fixtures } from '../nomad/support.js';
import { recordedEventCount, replayThroughStream, scenario } from './replayHarness.js';

/**
 * The property of issue 3: replaying a recorded scenario with faults injected at random points
 * delivers the same final allocation states as the fault-free replay.
 */
const scenarios = listScenarios(join(fixtures, 'scenarios'));

function faultsFor(events: number) {
  const at = fc.integer({ min: 0, max: events });
  const plan: fc.Arbitrary<StreamFaultPlan> = fc.oneof(
    at.map((n) => ({ cutAfterEvents: n })),
    at.map((n) => ({ truncateAfterEvents: n })),
    at.map((n) => ({ stallAfterEvents: n })),
    at.map((n) => ({ errorAfterEvents: n })),
    fc.record({ repeatProbability: fc.double({ min: 0, max: 0.5, noNaN: true }), seed: fc.nat() }),
    fc.record({ reorderProbability: fc.double({ min: 0, max: 0.5, noNaN: true }), seed: fc.nat() }),
  );
  return fc.record({
    plans: fc.array(plan, { minLength: 1, maxLength: 3 }),
    refusals: fc.integer({ min: 0, max: 2 }),
    streamFailures: fc.integer({ min: 0, max: 2 }),
    listingFailures: fc.integer({ min: 0, max: 1 }),
  });
}

describe('event stream replay under random faults (fast-check, seeded)', () => {
  it.each(scenarios)('%s: same final allocation states as the fault-free replay', async (name) => {
    const recorded = scenario(name);
    const faultFree = await replayThroughStream(recorded);
    await fc.assert(
      fc.asyncProperty(faultsFor(recordedEventCount(recorded)), async (faults) => {
        const run = await replayThroughStream(recorded, (fake) => {
          // Each plan applies to one connection, in order: later plans hit the reconnections.
          for (const plan of faults.plans) fake.faults.stream(plan);
          if (faults.refusals > 0) fake.faults.refuseConnections(faults.refusals);
          if (faults.streamFailures > 0) fake.faults.failRequests({ status: 500, path: '/v1/event/stream', times: faults.streamFailures });
          if (faults.listingFailures > 0) fake.faults.failRequests({ status: 503, path: '/v1/allocation', times: faults.listingFailures });
        });
        expect(run.finals).toEqual(faultFree.finals);
        expect(run.regressions).toEqual([]);
      }),
      { seed: 20261129, numRuns: name === 'many_allocs' ? 8 : 15 },
    );
  });
});
