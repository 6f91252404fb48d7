/**
 * Health verdicts on the real Nomad. Every shared recording's job (test/fixtures/nomad-1.1.2/
 * scenarios), then the cases the recordings lack (test/fixtures/nomad-1.1.2-live/scenarios: healthy
 * then failed, restarts after healthy and during the deadline, canaries awaiting promotion,
 * auto_revert, two groups), then a few of them under CPU load: each set deployed side by side on the
 * live agent, and Warden's verdicts — watching from the start, started late, restarted mid-deployment,
 * gating in flight and started late — compared with what Nomad's own client decided (see
 * support/healthRun.ts). The sets run one after the other, so the load of the last touches no other
 * health set. Where Warden differs from Nomad 1.1.2 as test/fixtures/nomad-1.1.2/README.md documents,
 * or by Nomad's own lag (its tracker sees a start late), it must differ exactly so, and say so.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { MODES, runHealthSuite, type HealthSuiteReport, type SuiteOptions } from './support/healthRun.js';
import { CASES, RECORDED, type LiveScenario } from './support/healthScenarios.js';
import { useLiveJobs } from './support/live.js';

/** Nomad's clients lag behind the data (syncs, tracker timers) by up to this much, more under load. */
const TOLERANCE = { earlyMs: 2_500, lateMs: 50 };

/** The scenarios that run under CPU load. */
const UNDER_LOAD = ['healthy_task_states', 'restart_before_min_healthy', 'many_allocs', 'restart_after_healthy'];

/**
 * The tests every set passes; `run` deploys it (in the describe's beforeAll). `documented`: the
 * scenarios whose allocations differ from Nomad 1.1.2 as the fixtures README documents; `racing`:
 * those that differ so or not, as a race in Nomad's client goes.
 */
function judgedLikeNomad(run: () => Promise<HealthSuiteReport>, documented: readonly string[], racing: readonly string[] = []): { readonly report: HealthSuiteReport } {
  const state: { report?: HealthSuiteReport } = {};
  beforeAll(async () => {
    state.report = await run();
  }, 600_000);
  const report = (): HealthSuiteReport => state.report as HealthSuiteReport;

  test.each(MODES)('%s: every allocation as Nomad decided it', (mode) => {
    expect(report().disagreements[mode]).toEqual([]);
    expect(report().agreeing[mode]).toBeGreaterThan(0);
  });

  test("gates: each exits as Nomad ended the version's deployment, the same in flight and started late", () => {
    expect(report().gateDifferences).toEqual([]);
  });

  test('differences from Nomad only the documented ones and those its own lag explains, each reported by Warden', () => {
    const differing = new Set(report().documented.map((line) => line.split(' ')[0] as string));
    expect([...differing].filter((name) => !racing.includes(name)).sort()).toEqual([...documented].sort());
    expect(report().unreported).toEqual([]);
  });

  test('no problem reported; each recorded watch replays to the lines it printed; the restarted watch restarted', () => {
    expect(report().problems).toEqual([]);
    expect(report().replayDifferences).toEqual([]);
    expect(report().restarts).toBeGreaterThan(0);
  });
  return state as { readonly report: HealthSuiteReport };
}

describe('health verdicts against a real Nomad', () => {
  const jobs = useLiveJobs();
  const suite = (scenarios: readonly LiveScenario[], options: SuiteOptions = { tolerance: TOLERANCE }) => () => runHealthSuite(scenarios, jobs, options);

  describe("the recordings' jobs", () => {
    // stopped_while_waiting: 1.1.2's client marks it unhealthy when its tracker reports the killed
    // task before the health hook is shut down with the allocation, and records nothing when the
    // shutdown wins; Warden says stopped.
    judgedLikeNomad(suite(RECORDED), ['prestart_sidecar_lifecycle'], ['stopped_while_waiting']);
  });

  describe('the cases the recordings lack', () => {
    const state = judgedLikeNomad(suite(CASES), []);

    test('a canary awaiting promotion: the gate exits 3; a gate started after auto_revert on each version, the older ones too, ends as Nomad ended it', () => {
      const run = (name: string) => state.report.runs.find((r) => r.scenario.name === name)!;
      expect(run('canary_awaiting_promotion').gatesInFlight.map((g) => g.code)).toEqual([0, 3]);
      expect(run('canary_awaiting_promotion').gatesLate.map((g) => g.code)).toEqual([0, 3]);
      expect(run('auto_revert').gatesLate.map((g) => g.code)).toEqual([0, 1, 0]);
    });

    test("after the 10-event cap erased the history, a late watch says Nomad's recorded verdict, marked as Nomad's", () => {
      for (const name of ['restart_after_healthy', 'deadline_while_restarting']) {
        const run = state.report.runs.find((r) => r.scenario.name === name)!;
        expect({ name, bases: run.late.verdicts().map((v) => v.basis) }).toEqual({ name, bases: ['nomad'] });
      }
    });
  });

  describe('under CPU load (as many busy processes beside the agent and Warden as there are cores)', () => {
    const busy: ChildProcess[] = [];
    const scenarios = [...RECORDED, ...CASES].filter((scenario) => UNDER_LOAD.includes(scenario.name));
    judgedLikeNomad(async () => {
      for (let i = 0; i < availableParallelism(); i++) busy.push(spawn('/bin/sh', ['-c', 'while :; do :; done'], { stdio: 'ignore' }));
      try {
        // A loaded client's tracker sees task updates seconds late (its min_healthy_time timer with them).
        return await runHealthSuite(scenarios, jobs, { label: ' under CPU load', tolerance: { earlyMs: 10_000, lateMs: 50 } });
      } finally {
        for (const child of busy) child.kill('SIGKILL');
      }
    }, []);
    afterAll(() => {
      for (const child of busy) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
  });
});
