/**
 * The supervisor keeps its verdicts when the connection misbehaves (FakeNomad cuts, truncates or
 * errors the event stream at random points: it reconnects, resyncs by listing, and goes on), and a
 * supervisor started halfway through a recording judges what it can see as one that watched
 * from the start.
 */
import fc from 'fast-check';
import { isHeartbeatLine, type RecordedLine } from '../../src/testing/recording.js';
import type { StreamFaultPlan } from '../../src/testing/nomad/faults.js';
import type { VerdictRecord } from '../../src/supervisor/types.js';
import { replayScenario } from '../health/support/replayScenario.js';
import { driveTo, loadScenario, requestedIndex, startHarness, stripNomadVerdict } from './support/harness.js';

const SCENARIOS = [
  'healthy_task_states',
  'failed_task',
  'restart_before_min_healthy',
  'deadline_not_running',
  'stopped_while_waiting',
  'rolling_update',
  'prestart_sidecar_lifecycle',
  'many_allocs',
];

/**
 * What a verdict says. A healthy verdict's time comes from the data (latest start +
 * min_healthy_time) and must not move; other times may (a reconnect can see an update later).
 */
function judgement(outcome: VerdictRecord['outcome']): string {
  if (!('healthy' in outcome)) return JSON.stringify(outcome);
  return JSON.stringify({ healthy: outcome.healthy, reasons: outcome.reasons, ...(outcome.healthy ? { at: outcome.at } : {}) });
}

function judgements(verdicts: readonly VerdictRecord[]): Record<string, string> {
  return Object.fromEntries(verdicts.map((v) => [v.alloc.allocId, judgement(v.outcome)]));
}

function directJudgements(name: string, only?: (id: string) => boolean): Record<string, string> {
  const entries = [...replayScenario(name).allocations.values()].filter((a) => a.outcome && (!only || only(a.id)));
  return Object.fromEntries(entries.map((a) => [a.id, judgement(a.outcome!)]));
}

const faultPlan = fc.record(
  {
    kind: fc.constantFrom('cutAfterEvents', 'truncateAfterEvents', 'errorAfterEvents'),
    after: fc.integer({ min: 0, max: 40 }),
  },
  { requiredKeys: ['kind', 'after'] },
);

describe('the supervisor under stream faults', () => {
  test.each(SCENARIOS)('%s: identical verdicts while the stream is cut at random points', async (name) => {
    const expected = directJudgements(name);
    const scenario = loadScenario(name);
    await fc.assert(
      fc.asyncProperty(fc.array(faultPlan, { minLength: 1, maxLength: 3 }), async (plans) => {
        const harness = await startHarness(scenario.opened, {}, (fake) => {
          for (const plan of plans) fake.faults.stream({ [plan.kind]: plan.after } as StreamFaultPlan);
        });
        try {
          harness.fake.replay(scenario.stream, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario) });
          await driveTo(harness.clock, scenario.closed + 60_000, 500);
          expect(judgements(harness.verdicts)).toEqual(expected);
          expect(harness.verdicts.length).toBe(Object.keys(expected).length);
        } finally {
          await harness.close();
        }
      }),
      { numRuns: 4, seed: 20261129 },
    );
  });
});

/** The recording split at `t`: what happened before (applied at once) and after (replayed on the clock, from 0). */
function splitAt(lines: readonly RecordedLine[], t: number): [RecordedLine[], RecordedLine[]] {
  const data = lines.filter((line) => !isHeartbeatLine(line));
  return [data.filter((line) => line.t <= t), data.filter((line) => line.t > t).map((line) => ({ ...line, t: line.t - t }))];
}

describe('a supervisor started halfway through a recording', () => {
  // deadline_not_running included: the deadline counts from when Nomad began watching (the
  // allocation's Received event), not from when this supervisor first saw the allocation.
  test.each(SCENARIOS)('%s: reaches the same verdicts for the allocations it can see', async (name) => {
    const scenario = loadScenario(name);
    const lastT = Math.max(...scenario.stream.map((line) => line.t));
    const half = Math.round(lastT / 2);
    const [before, after] = splitAt(scenario.stream, half);
    const harness = await startHarness(scenario.opened + half, {}, (fake) => {
      fake.replay(before, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario), immediate: true });
    });
    try {
      harness.fake.replay(after, { transform: stripNomadVerdict });
      await driveTo(harness.clock, scenario.closed + 1_000);
      const seen = judgements(harness.verdicts);
      const direct = directJudgements(name);
      // Every verdict it reaches is the one reached by watching from the start...
      for (const [allocId, verdict] of Object.entries(seen)) expect([allocId, verdict]).toEqual([allocId, direct[allocId]]);
      // ...and it misses none of the allocations still live (not client-terminal) when it started.
      const live = directJudgements(name, (id) => {
        const state = harness.fake.cluster.allocation(id);
        return state !== undefined && !harness.verdicts.some((v) => v.alloc.allocId === id) && wasLiveAt(before, id);
      });
      expect(live).toEqual({});
    } finally {
      await harness.close();
    }
  });
});

/** True when the allocation's last update before the split was not client-terminal with desired stop. */
function wasLiveAt(lines: readonly RecordedLine[], allocId: string): boolean {
  let live = false;
  for (const line of lines) {
    const batch = JSON.parse(line.raw) as { Events?: { Topic: string; Payload: { Allocation?: { ID: string; ClientStatus: string; DesiredStatus: string } } }[] };
    for (const event of batch.Events ?? []) {
      const alloc = event.Payload.Allocation;
      if (event.Topic !== 'Allocation' || alloc?.ID !== allocId) continue;
      live = !(alloc.DesiredStatus === 'stop' && ['complete', 'failed', 'lost'].includes(alloc.ClientStatus));
    }
  }
  return live;
}
