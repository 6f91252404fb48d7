/**
 * waitForDeployment() over clusters scripted through FakeNomad: the script plays Nomad's client
 * (task states, allocation health) and its deployment watcher (the deployment's status); Warden
 * follows the deployment's own end and gives its own reasons.
 */
import type { DeploymentResult } from '../../src/supervisor/index.js';
import { serviceJob } from '../testing/helpers.js';
import { SETTLE_MS, driveTo, notRunningByDeadline, startHarness, type Harness } from '../supervisor/support/harness.js';

const START = Date.UTC(2026, 10, 29, 18);

/** The result, and the clock's time when it came. */
function follow(harness: Harness, waiting: Promise<DeploymentResult>): { result?: DeploymentResult; at?: number } {
  const settled: { result?: DeploymentResult; at?: number } = {};
  void waiting.then((result) => Object.assign(settled, { result, at: harness.clock.now() }));
  return settled;
}

describe('waitForDeployment() over a scripted cluster', () => {
  let harness: Harness;
  beforeEach(async () => {
    harness = await startHarness(START);
  });
  afterEach(() => harness.close());

  function register(update: Record<string, unknown> = {}): void {
    const job = serviceJob('web');
    harness.fake.cluster.registerJob({ ...job, Update: { ...(job.Update as object), ...update } });
  }

  test('the first allocation fails, its replacement becomes healthy, Nomad calls it successful: ok, listing the healthy ones', async () => {
    register();
    const settled = follow(harness, harness.supervisor.waitForDeployment('web', { version: 0 }));
    const { cluster } = harness.fake;
    const [first, second] = cluster.placeAllocations('web');
    for (const alloc of [first!, second!]) cluster.startTask(alloc.ID);
    await driveTo(harness.clock, START + 1_000);
    cluster.failTask(first!.ID, 'main', { exitCode: 1 });
    await driveTo(harness.clock, START + 1_500);
    const [replacement] = cluster.placeAllocations('web', { count: 1 });
    cluster.startTask(replacement!.ID);
    await driveTo(harness.clock, START + 4_500);
    expect(settled.result).toBeUndefined();
    cluster.setDeploymentStatus(first!.DeploymentID!, 'successful');
    await driveTo(harness.clock, START + 5_000);
    expect(settled).toMatchObject({ at: START + 4_500, result: { ok: true, healthy: [second!.ID, replacement!.ID].sort() } });
  });

  test('Nomad fails it at the progress deadline: Nomad\'s words, and the allocation Warden judged unhealthy with its reason', async () => {
    register();
    const settled = follow(harness, harness.supervisor.waitForDeployment('web', { version: 0 }));
    const { cluster } = harness.fake;
    const [first, second] = cluster.placeAllocations('web');
    for (const alloc of [first!, second!]) cluster.startTask(alloc.ID);
    await driveTo(harness.clock, START + 700);
    cluster.failTask(first!.ID, 'main', { exitCode: 1 });
    await driveTo(harness.clock, START + 30_000);
    expect(settled.result).toBeUndefined();
    cluster.setDeploymentStatus(first!.DeploymentID!, 'failed', 'Failed due to progress deadline');
    await driveTo(harness.clock, START + 30_500);
    expect(settled.result).toEqual({
      ok: false,
      jobId: 'web',
      version: 0,
      deploymentId: first!.DeploymentID,
      rule: 'progress-deadline',
      reason: 'Deployment failed: Failed due to progress deadline; 1 allocation unhealthy',
      unhealthy: [{ allocId: first!.ID, name: first!.Name, at: START + 700, reasons: { main: 'Unhealthy because of failed task' } }],
    });
  });

  test('Nomad ends it while an allocation is still being judged: the result waits for that verdict', async () => {
    register();
    const settled = follow(harness, harness.supervisor.waitForDeployment('web', { version: 0 }));
    const { cluster } = harness.fake;
    const [first, second] = cluster.placeAllocations('web');
    cluster.startTask(first!.ID);
    cluster.receiveAllocation(second!.ID);
    await driveTo(harness.clock, START + 1_000);
    cluster.setDeploymentStatus(first!.DeploymentID!, 'failed', 'Deployment marked as failed');
    await driveTo(harness.clock, START + 10_000);
    expect(settled.result).toBeUndefined();
    // The second never runs: unhealthy at its healthy_deadline (20 s), said once the window has passed.
    await driveTo(harness.clock, START + 21_000 + SETTLE_MS);
    expect(settled.result).toMatchObject({ ok: false, rule: 'nomad', unhealthy: [{ allocId: second!.ID, reasons: { main: notRunningByDeadline('1.1.2', 20_000) } }] });
  });

  test('failFast: the first failure ends it at once, whatever Nomad does next', async () => {
    register();
    const settled = follow(harness, harness.supervisor.waitForDeployment('web', { version: 0, failFast: true }));
    const { cluster } = harness.fake;
    const [first] = cluster.placeAllocations('web');
    cluster.startTask(first!.ID);
    await driveTo(harness.clock, START + 700);
    cluster.failTask(first!.ID, 'main', { exitCode: 1 });
    await driveTo(harness.clock, START + 1_000);
    expect(settled).toMatchObject({ at: START + 700, result: { ok: false, rule: 'fail-fast', unhealthy: [{ allocId: first!.ID }] } });
  });

  test('canaries Nomad counts healthy, waiting for a manual promotion: awaitingPromotion', async () => {
    register({ Canary: 1 });
    const settled = follow(harness, harness.supervisor.waitForDeployment('web', { version: 0 }));
    const { cluster } = harness.fake;
    const [canary] = cluster.placeAllocations('web', { count: 1, canary: true });
    cluster.startTask(canary!.ID);
    await driveTo(harness.clock, START + 2_000);
    expect(settled.result).toBeUndefined();
    cluster.setDeploymentAllocHealth(canary!.DeploymentID!, [canary!.ID], []);
    await driveTo(harness.clock, START + 2_000 + SETTLE_MS + 100);
    expect(settled.result).toMatchObject({ ok: true, awaitingPromotion: true, healthy: [canary!.ID] });
  });

  test('auto_promote: healthy canaries are not the end; Nomad\'s success after the promotion is', async () => {
    register({ Canary: 1, AutoPromote: true });
    const settled = follow(harness, harness.supervisor.waitForDeployment('web', { version: 0 }));
    const { cluster } = harness.fake;
    const [canary] = cluster.placeAllocations('web', { count: 1, canary: true });
    cluster.startTask(canary!.ID);
    await driveTo(harness.clock, START + 2_500);
    cluster.setDeploymentAllocHealth(canary!.DeploymentID!, [canary!.ID], []);
    await driveTo(harness.clock, START + 5_000);
    expect(settled.result).toBeUndefined();
    cluster.promoteDeployment(canary!.DeploymentID!);
    const [rest] = cluster.placeAllocations('web', { count: 1 });
    cluster.startTask(rest!.ID);
    await driveTo(harness.clock, START + 8_000);
    cluster.setDeploymentStatus(canary!.DeploymentID!, 'successful');
    await driveTo(harness.clock, START + 8_500);
    expect(settled.result).toMatchObject({ ok: true, healthy: [canary!.ID, rest!.ID].sort() });
    expect(settled.result!.ok && settled.result!.awaitingPromotion).toBeUndefined();
  });
});
