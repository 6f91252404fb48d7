/**
 * Every recorded scenario through the whole supervisor: FakeNomad replays the recording (Nomad's
 * own verdicts stripped) over loopback, and the supervisor follows it through the real event
 * stream, client and actors on a VirtualClock, FakeNomad telling it which release it is. Its
 * verdicts must be those of the fixtures README table for that release's rules, and the same as
 * the health registry reaches when fed the recording directly with them.
 */
import { listScenarios } from '../../src/testing/recording.js';
import { liveScenarios, replayScenario } from '../health/support/replayScenario.js';
import { SCENARIOS, driveTo, loadScenario, requestedIndex, startHarness, stripNomadVerdict, type Harness } from './support/harness.js';
import type { VerdictRecord } from '../../src/supervisor/types.js';
import type { FakeNomadVersion } from '../../src/testing/fakeNomad.js';

type Verdicts = { healthy: number; unhealthy: Record<string, string>[]; stopped: number };

/** The README's "Verdicts Warden must reach" by today's rules, as counts and messages per scenario. */
const TABLE: Record<string, Verdicts> = {
  healthy_task_states: { healthy: 2, unhealthy: [], stopped: 0 },
  failed_task: { healthy: 0, unhealthy: [{ main: 'Unhealthy because of failed task' }], stopped: 0 },
  restart_before_min_healthy: { healthy: 0, unhealthy: [{ main: 'Unhealthy because of failed task' }], stopped: 0 },
  deadline_not_running: { healthy: 0, unhealthy: [{ main: 'Task not running by healthy_deadline of 5s' }], stopped: 0 },
  stopped_while_waiting: { healthy: 0, unhealthy: [], stopped: 1 },
  placement_failure: { healthy: 0, unhealthy: [], stopped: 0 },
  rolling_update: { healthy: 6, unhealthy: [], stopped: 0 },
  batch_job: { healthy: 0, unhealthy: [], stopped: 0 },
  prestart_sidecar_lifecycle: { healthy: 1, unhealthy: [], stopped: 0 },
  manual_health: { healthy: 0, unhealthy: [], stopped: 0 },
  many_allocs: { healthy: 40, unhealthy: [], stopped: 0 },
  // Recorded from the live tier (test/fixtures/nomad-1.1.2-live/README.md).
  'live/auto_revert': { healthy: 2, unhealthy: [{ main: 'Unhealthy because of failed task' }], stopped: 0 },
  'live/canary_awaiting_promotion': { healthy: 3, unhealthy: [], stopped: 0 },
  'live/deadline_not_running': { healthy: 0, unhealthy: [{ init: 'Task not running by healthy_deadline of 5s', main: 'Task not running by healthy_deadline of 5s' }], stopped: 0 },
  'live/deadline_while_restarting': { healthy: 0, unhealthy: [{ main: 'Task not running for min_healthy_time of 3s by healthy_deadline of 8s' }], stopped: 0 },
  'live/healthy_then_failed': { healthy: 1, unhealthy: [], stopped: 0 },
  'live/restart_after_healthy': { healthy: 1, unhealthy: [], stopped: 0 },
  'live/two_groups': { healthy: 3, unhealthy: [], stopped: 0 },
};

/** The same by Nomad 1.1.2's rules (the recordings' release): its poststart bug and its words. */
const TABLE_112: Record<string, Verdicts> = {
  ...TABLE,
  deadline_not_running: { healthy: 0, unhealthy: [{ main: 'Task not running by deadline' }], stopped: 0 },
  prestart_sidecar_lifecycle: { healthy: 0, unhealthy: [{ post: 'Unhealthy because of dead task' }], stopped: 0 },
  'live/deadline_not_running': { healthy: 0, unhealthy: [{ init: 'Task not running by deadline', main: 'Task not running by deadline' }], stopped: 0 },
  'live/deadline_while_restarting': { healthy: 0, unhealthy: [{ main: 'Task not running for min_healthy_time of 3s by deadline' }], stopped: 0 },
};

const RELEASES: readonly { version: FakeNomadVersion; table: Record<string, Verdicts> }[] = [
  { version: '1.1.2', table: TABLE_112 },
  { version: '1.6.3', table: TABLE },
  { version: '2.0', table: TABLE },
];

function summary(verdicts: readonly VerdictRecord[]) {
  const healthy = verdicts.filter((v) => 'healthy' in v.outcome && v.outcome.healthy).length;
  const unhealthy = verdicts.flatMap((v) => ('healthy' in v.outcome && !v.outcome.healthy ? [v.outcome.reasons] : []));
  const stopped = verdicts.filter((v) => 'stopped' in v.outcome).length;
  return { healthy, unhealthy, stopped };
}

async function runScenario(name: string, version: FakeNomadVersion): Promise<Harness> {
  const scenario = loadScenario(name);
  const harness = await startHarness(scenario.opened, {}, undefined, { version });
  harness.fake.replay(scenario.stream, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario) });
  await driveTo(harness.clock, scenario.closed + 1_000);
  return harness;
}

describe('the supervisor over FakeNomad replays every recorded scenario to the README verdicts', () => {
  test('the table covers every recorded scenario', () => {
    expect(Object.keys(TABLE).sort()).toEqual([...listScenarios(SCENARIOS), ...liveScenarios()].sort());
  });

  test.each(RELEASES.flatMap(({ version }) => Object.keys(TABLE).map((name) => [name, version] as const)))('%s on Nomad %s', async (name, version) => {
    const harness = await runScenario(name, version);
    try {
      expect(summary(harness.verdicts)).toEqual(RELEASES.find((release) => release.version === version)?.table[name]);
      // The same outcomes, at the same times, as the registry fed the recording directly.
      const direct = replayScenario(name, { release: version }).allocations;
      for (const record of harness.verdicts) {
        expect(direct.get(record.alloc.allocId)?.outcome).toEqual(record.outcome);
      }
      expect([...direct.values()].filter((a) => a.outcome).length).toBe(harness.verdicts.length);
      // Nomad re-sent allocations of earlier, purged jobs: reported as such, and nothing else went wrong.
      for (const problem of harness.problems) {
        expect(problem.kind).toBe('job-unavailable');
        expect(direct.has(problem.allocId!)).toBe(false);
      }
      expect(harness.supervisor.supervised).toBe(0);
    } finally {
      await harness.close();
    }
  });
});
