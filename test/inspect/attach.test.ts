/**
 * A model attached to a supervisor already at work (without the inspect hook): it starts from the
 * allocations being judged, and follows their moves and verdicts.
 */
import { InspectionModel } from '../../src/inspect/index.js';
import { isoTime } from '../../src/inspect/time.js';
import { driveTo, loadScenario, requestedIndex, startHarness, stripNomadVerdict } from '../supervisor/support/harness.js';

test('attached late and without the inspect hook: the allocations judged now, then their moves and verdicts', async () => {
  const scenario = loadScenario('rolling_update');
  const harness = await startHarness(scenario.opened);
  try {
    harness.fake.replay(scenario.stream, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario) });
    while (harness.supervisor.supervisedAllocations().length === 0 || harness.verdicts.length === 0) await driveTo(harness.clock, harness.clock.now() + 100);
    const model = new InspectionModel({ clock: harness.clock });
    const detach = model.attach(harness.supervisor);
    const judgedNow = harness.supervisor.supervisedAllocations();
    const first = model.snapshot();
    expect(first.allocations.map((a) => [a.id, a.state, a.finished])).toEqual(judgedNow.map((s) => [s.alloc.allocId, s.state, false]));
    const verdictsBefore = harness.verdicts.length;
    await driveTo(harness.clock, scenario.closed);
    detach();
    const last = model.snapshot();
    const later = harness.verdicts.slice(verdictsBefore);
    expect(later.length).toBeGreaterThan(0);
    // Every verdict reached after attaching is there, with its last move into it.
    for (const record of later) {
      const shown = last.allocations.find((a) => a.id === record.alloc.allocId)!;
      expect(shown.finished).toBe(true);
      expect(shown.verdict).toMatchObject({ at: isoTime(record.outcome.at) });
      expect(shown.lastTransition?.to).toBe(shown.state);
    }
  } finally {
    await harness.close();
  }
});
