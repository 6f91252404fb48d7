/**
 * waitForDeployment() concludes what Nomad's deployment watcher concludes, from Warden's own
 * verdicts on the VirtualClock: recordings replayed with Nomad's verdicts AND Nomad's own
 * conclusion (the deployment's status updates) removed, and clusters scripted through FakeNomad.
 */
import type { DeploymentResult } from '../../src/supervisor/index.js';
import type { StreamEvent } from '../../src/testing/index.js';
import { isHeartbeatLine } from '../../src/testing/recording.js';
import { serviceJob } from '../testing/helpers.js';
import { driveTo, loadScenario, requestedIndex, startHarness, stripNomadVerdict, type Harness } from './support/harness.js';

const START = Date.UTC(2026, 10, 29, 18);

/** Neither Nomad's health flags nor its verdict on the deployment reach the supervisor. */
function withoutNomadConclusion(event: StreamEvent): StreamEvent | null {
  return event.Topic === 'Deployment' && event.Type === 'DeploymentStatusUpdate' ? null : stripNomadVerdict(event);
}

/** The result, and the clock's time when it came. */
function follow(harness: Harness, waiting: Promise<DeploymentResult>): { result?: DeploymentResult; at?: number } {
  const settled: { result?: DeploymentResult; at?: number } = {};
  void waiting.then((result) => Object.assign(settled, { result, at: harness.clock.now() }));
  return settled;
}

/** When the recorded deployment turned failed with `description`, on the recording's clock. */
function nomadFailedAt(name: string, description: string): number {
  const scenario = loadScenario(name);
  const line = scenario.stream.find((l) => !isHeartbeatLine(l) && l.raw.includes('"DeploymentStatusUpdate"') && l.raw.includes(description));
  return scenario.opened + line!.t;
}

async function judgeRecording(name: string, options: { version?: number; failFast?: boolean } = {}) {
  const scenario = loadScenario(name);
  const harness = await startHarness(scenario.opened);
  try {
    const settled = follow(harness, harness.supervisor.waitForDeployment(scenario.meta.job_id, { version: options.version ?? 0, failFast: options.failFast ?? false }));
    harness.fake.replay(scenario.stream, { transform: withoutNomadConclusion, fromIndex: requestedIndex(scenario) });
    for (let t = scenario.opened; settled.result === undefined && t < scenario.closed + 5_000; t += 1_000) await driveTo(harness.clock, t);
    return { ...settled, verdicts: harness.verdicts };
  } finally {
    await harness.close();
  }
}

// Warden's deadline is Nomad's RequireProgressBy (first placement's ModifyTime + progress_deadline),
// exact to the nanosecond; Nomad's timer then commits the failure through raft and publishes it, which
// the recordings show arriving 3-4 ms later. 100 ms covers that lag with room, and is far below
// the gap to any other moment of these scenarios (the failure came seconds to tens of seconds earlier).
const DEADLINE_TOLERANCE_MS = 100;

describe('waitForDeployment() over the recordings, Nomad\'s conclusion removed', () => {
  test.each([
    ['failed_task', 'Unhealthy because of failed task'],
    ['restart_before_min_healthy', 'Unhealthy because of failed task'],
    ['deadline_not_running', 'Task not running by healthy_deadline of 5s'],
  ])('%s: fails at its own progress deadline, where Nomad did, with the reasons', async (name, reason) => {
    const { result, at } = await judgeRecording(name);
    const nomadAt = nomadFailedAt(name, 'Failed due to progress deadline');
    expect(Math.abs(at! - nomadAt)).toBeLessThanOrEqual(DEADLINE_TOLERANCE_MS);
    expect(result).toMatchObject({ ok: false, rule: 'progress-deadline', unhealthy: [{ reasons: { main: reason } }] });
    expect(result!.ok === false && result!.reason).toMatch(
      /^1 allocation unhealthy; Failed due to progress deadline: group "app" had 0 of 1 allocation healthy by 2026-11-29T17:0\d:\d\d\.\d{3}Z$/,
    );
    expect(result!.ok === false && result!.unhealthy).toHaveLength(1);
  });

  test.each(['failed_task', 'restart_before_min_healthy', 'deadline_not_running'])(
    '%s with failFast: fails at the first unhealthy verdict, long before the deadline',
    async (name) => {
      const { result, at, verdicts } = await judgeRecording(name, { failFast: true });
      const unhealthy = verdicts.find((v) => 'healthy' in v.outcome && !v.outcome.healthy)!;
      expect(result).toMatchObject({ ok: false, rule: 'fail-fast', reason: '1 allocation unhealthy', unhealthy: [{ allocId: unhealthy.alloc.allocId }] });
      // The verdict is timed by the allocation's own events; the gate answers once it is reached.
      expect(at! - unhealthy.outcome.at).toBeGreaterThanOrEqual(0);
      expect(at! - unhealthy.outcome.at).toBeLessThan(1_000);
      expect(at!).toBeLessThan(nomadFailedAt(name, 'Failed due to progress deadline') - 3_000);
    },
  );

  test.each([0, 1])('rolling_update version %i succeeds with 3 healthy allocations, at the last healthy verdict', async (version) => {
    const { result, at, verdicts } = await judgeRecording('rolling_update', { version });
    expect(result).toMatchObject({ ok: true, version });
    expect(result!.ok && result!.healthy).toHaveLength(3);
    expect(result!.ok && result!.awaitingPromotion).toBeUndefined();
    const ids = new Set(result!.ok ? result!.healthy : []);
    const lastHealthy = Math.max(...verdicts.filter((v) => ids.has(v.alloc.allocId)).map((v) => v.outcome.at));
    expect(at! - lastHealthy).toBeLessThan(1_000);
  });
});

describe('waitForDeployment() over a scripted cluster', () => {
  let harness: Harness;
  beforeEach(async () => {
    harness = await startHarness(START);
  });
  afterEach(() => harness.close());

  function register(update: Record<string, unknown> = {}, group: Record<string, unknown> = {}): void {
    const job = serviceJob('web');
    harness.fake.cluster.registerJob({
      ...job,
      Update: { ...(job.Update as object), ...update },
      TaskGroups: [{ ...(job.TaskGroups as object[])[0], ...group }],
    });
  }

  /** Job `web` registered with `update` / `group`, its two allocations placed, the first failing at +700 ms. */
  async function failFirst(update: Record<string, unknown>, group: Record<string, unknown> = {}, failFast = false) {
    register(update, group);
    const settled = follow(harness, harness.supervisor.waitForDeployment('web', { version: 0, failFast }));
    const [first] = harness.fake.cluster.placeAllocations('web');
    await driveTo(harness.clock, START + 700);
    harness.fake.cluster.failTask(first!.ID, 'main', { exitCode: 1 });
    await driveTo(harness.clock, START + 1_500);
    return { ...settled, first: first! };
  }

  test('the first allocation fails, its replacement becomes healthy: success, as Nomad would conclude', async () => {
    register();
    const settled = follow(harness, harness.supervisor.waitForDeployment('web', { version: 0 }));
    const { cluster } = harness.fake;
    const [first, second] = cluster.placeAllocations('web');
    for (const alloc of [first!, second!]) cluster.startTask(alloc.ID);
    await driveTo(harness.clock, START + 1_000);
    cluster.failTask(first!.ID, 'main', { exitCode: 1 });
    await driveTo(harness.clock, START + 1_500);
    expect(settled.result).toBeUndefined();
    const [replacement] = cluster.placeAllocations('web', { count: 1 });
    cluster.startTask(replacement!.ID);
    await driveTo(harness.clock, START + 10_000);
    expect(settled.result).toMatchObject({ ok: true, healthy: [second!.ID, replacement!.ID] });
    // min_healthy_time is 2 s from the replacement's start at +1.5 s.
    expect(settled.at).toBe(START + 3_500);
  });

  test('failFast: the same cluster fails at the first failure', async () => {
    const { result, at, first } = await failFirst({}, {}, true);
    expect(result).toMatchObject({ ok: false, rule: 'fail-fast', unhealthy: [{ allocId: first.ID, reasons: { main: 'Unhealthy because of failed task' } }] });
    expect(at).toBe(START + 700);
  });

  test('no replacement: fails at the deadline Warden computes, pushed on by its own healthy verdict', async () => {
    register();
    const settled = follow(harness, harness.supervisor.waitForDeployment('web', { version: 0 }));
    const { cluster } = harness.fake;
    const [first, second] = cluster.placeAllocations('web');
    cluster.startTask(first!.ID);
    await driveTo(harness.clock, START + 1_000);
    cluster.failTask(second!.ID, 'main', { exitCode: 1 });
    // Nomad's RequireProgressBy is the placement + 30 s; the healthy verdict at +2 s moves it to +32 s.
    await driveTo(harness.clock, START + 31_999);
    expect(settled.result).toBeUndefined();
    await driveTo(harness.clock, START + 40_000);
    expect(settled.at).toBe(START + 32_000);
    expect(settled.result).toMatchObject({
      ok: false,
      rule: 'progress-deadline',
      reason: `1 allocation unhealthy; Failed due to progress deadline: group "app" had 1 of 2 allocations healthy by ${new Date(START + 32_000).toISOString()}`,
      unhealthy: [{ allocId: second!.ID, reasons: { main: 'Unhealthy because of failed task' } }],
    });
  });

  const noReschedule = { Attempts: 0, Interval: 0, Delay: 30e9, DelayFunction: 'exponential', MaxDelay: 3600e9, Unlimited: false };
  test.each([
    [
      'progress_deadline = 0: Nomad fails at the first unhealthy allocation (and auto_revert rolls back)',
      { ProgressDeadline: 0, AutoRevert: true },
      {},
      'unhealthy-allocations',
      '1 allocation unhealthy (auto_revert: Nomad rolls back to the latest stable version)',
    ],
    [
      'no reschedule attempt allowed: an unhealthy allocation fails the deployment at once (Nomad\'s shouldFailEarly)',
      {},
      { ReschedulePolicy: noReschedule },
      'reschedule-exhausted',
      '1 allocation unhealthy; Failed due to unhealthy allocations: no reschedule attempt left for web.app[0]',
    ],
  ])('%s', async (_title, update, group, rule, reason) => {
    const { result, at } = await failFirst(update, group);
    expect(at).toBe(START + 700);
    expect(result).toMatchObject({ ok: false, rule, reason });
  });

  test('max_parallel 1 over longer than progress_deadline: each healthy allocation buys another deadline, so it succeeds', async () => {
    register({ ProgressDeadline: 10e9, HealthyDeadline: 8e9, MaxParallel: 1 }, { Count: 3 });
    const settled = follow(harness, harness.supervisor.waitForDeployment('web', { version: 0 }));
    const { cluster } = harness.fake;
    // One at a time, each started 3 s after placement and healthy 2 s later: healthy at +5, +10.5, +16 s,
    // past the first deadline (+10 s) that FakeNomad, which never moves it, still advertises.
    for (const placedAt of [0, 5_500, 11_000]) {
      await driveTo(harness.clock, START + placedAt);
      const [alloc] = cluster.placeAllocations('web', { count: 1 });
      await driveTo(harness.clock, START + placedAt + 3_000);
      cluster.startTask(alloc!.ID);
      expect(settled.result).toBeUndefined();
    }
    await driveTo(harness.clock, START + 30_000);
    expect(settled.result).toMatchObject({ ok: true });
    expect(settled.at).toBe(START + 16_000);
  });

  test('canaries healthy and waiting for a manual promotion: resolves awaitingPromotion rather than waiting', async () => {
    register({ Canary: 1 });
    const settled = follow(harness, harness.supervisor.waitForDeployment('web', { version: 0 }));
    const { cluster } = harness.fake;
    const [canary] = cluster.placeAllocations('web', { count: 1, canary: true });
    cluster.startTask(canary!.ID);
    await driveTo(harness.clock, START + 1_999);
    expect(settled.result).toBeUndefined();
    await driveTo(harness.clock, START + 2_500);
    expect(settled.at).toBe(START + 2_000);
    expect(settled.result).toMatchObject({ ok: true, awaitingPromotion: true, healthy: [canary!.ID] });
  });

  test('auto_promote: healthy canaries are not the end; after the promotion the whole count must be healthy', async () => {
    register({ Canary: 1, AutoPromote: true });
    const settled = follow(harness, harness.supervisor.waitForDeployment('web', { version: 0 }));
    const { cluster } = harness.fake;
    const [canary] = cluster.placeAllocations('web', { count: 1, canary: true });
    cluster.startTask(canary!.ID);
    await driveTo(harness.clock, START + 5_000);
    expect(settled.result).toBeUndefined();
    cluster.promoteDeployment(canary!.DeploymentID!);
    const [rest] = cluster.placeAllocations('web', { count: 1 });
    cluster.startTask(rest!.ID);
    await driveTo(harness.clock, START + 10_000);
    expect(settled.result).toMatchObject({ ok: true, healthy: [canary!.ID, rest!.ID] });
    expect(settled.result!.ok && settled.result!.awaitingPromotion).toBeUndefined();
    expect(settled.at).toBe(START + 7_000);
  });
});
