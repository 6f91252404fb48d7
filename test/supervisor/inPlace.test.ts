/**
 * In-place updates (a job change Nomad applies without replacing allocations: same allocation ID,
 * new job version and deployment). Nomad's client clears the allocation's health and watches it
 * again from the update (client/allocrunner/health_hook.go Update, client/allochealth/tracker.go):
 * the new deployment's gate must see it proven again, min_healthy_time after the update.
 */
import { NomadClient } from '../../src/nomad/client.js';
import { createSupervisor, type DeploymentResult, type VerdictRecord } from '../../src/supervisor/index.js';
import { serviceJob } from '../testing/helpers.js';
import { RELEASES, SETTLE_MS, driveTo, flush, notRunningByDeadline, startHarness, type Harness } from './support/harness.js';

const START = Date.UTC(2026, 10, 29, 19);
/** When the in-place update is applied (the version-0 allocations healthy long before). */
const MOVED = START + 10_000;
/** serviceJob's min_healthy_time. */
const MIN_HEALTHY_MS = 2_000;
/** When Nomad's deployment watcher marks the new deployment successful (it lags the last health by ~1 s). */
const COMPLETED = MOVED + MIN_HEALTHY_MS + 1_000;

/** Nomad's deployment watcher ends `deploymentId` successfully at `at` (FakeNomad does not decide it by itself). */
async function completeAt(harness: Harness, deploymentId: string | undefined, at: number): Promise<void> {
  await driveTo(harness.clock, at);
  harness.fake.cluster.setDeploymentStatus(deploymentId!, 'successful');
}

function follow(harness: Harness, waiting: Promise<DeploymentResult>): { result?: DeploymentResult; at?: number } {
  const settled: { result?: DeploymentResult; at?: number } = {};
  void waiting.then((result) => Object.assign(settled, { result, at: harness.clock.now() }));
  return settled;
}

/** Version 0 running and healthy, then at MOVED a meta-only change (version 1) applied in place. */
async function updatedInPlace(harness: Harness, beforeMove: () => void = () => undefined) {
  const { cluster } = harness.fake;
  cluster.registerJob(serviceJob('web'));
  const placed = cluster.placeAllocations('web');
  for (const alloc of placed) cluster.startTask(alloc.ID);
  await driveTo(harness.clock, MOVED);
  beforeMove();
  cluster.registerJob(serviceJob('web', { Meta: { release: 'two' } }));
  const moved = cluster.updateInPlace('web');
  return { placed, moved };
}

describe.each(RELEASES)('an allocation updated in place is judged again for the new deployment (Nomad %s)', (version) => {
  let harness: Harness;
  beforeEach(async () => {
    harness = await startHarness(START, {}, undefined, { version });
  });
  afterEach(() => harness.close());

  test('healthy min_healthy_time after the update (not at once); the new gate succeeds; the old deployment\'s verdicts stand', async () => {
    let gate: ReturnType<typeof follow> = {};
    const { placed, moved } = await updatedInPlace(harness, () => {
      gate = follow(harness, harness.supervisor.waitForDeployment('web', { version: 1 }));
    });
    const ids = placed.map((a) => a.ID);
    expect(moved.map((a) => a.ID)).toEqual(ids);
    const [oldDeployment, newDeployment] = [placed[0]!.DeploymentID, moved[0]!.DeploymentID];
    expect(newDeployment).not.toBe(oldDeployment);

    await driveTo(harness.clock, MOVED + MIN_HEALTHY_MS - 1);
    const rejudged = harness.supervisor.verdict(ids[0]!);
    expect(gate.result).toBeUndefined();
    expect(harness.supervisor.supervisedAllocation(ids[0]!)).toMatchObject({ jobVersion: 1, state: 'minHealthyWait', alloc: { deploymentId: newDeployment } });
    await completeAt(harness, newDeployment, COMPLETED);
    await driveTo(harness.clock, MOVED + 5_000);

    expect(gate).toMatchObject({ at: COMPLETED, result: { ok: true, version: 1, deploymentId: newDeployment } });
    expect(gate.result!.ok && [...gate.result!.healthy].sort()).toEqual([...ids].sort());
    const byDeployment = (deploymentId: string | undefined) =>
      harness.verdicts.filter((v) => v.alloc.deploymentId === deploymentId).map((v) => [v.alloc.allocId, v.outcome]);
    expect(byDeployment(oldDeployment)).toEqual(ids.map((id) => [id, { healthy: true, at: START + MIN_HEALTHY_MS, reasons: {} }]));
    expect(byDeployment(newDeployment)).toEqual(ids.map((id) => [id, { healthy: true, at: MOVED + MIN_HEALTHY_MS, reasons: {} }]));
    // Asked while it was watched again: the new deployment's verdict, not the old one in the history.
    await expect(rejudged).resolves.toMatchObject({ alloc: { deploymentId: newDeployment }, outcome: { at: MOVED + MIN_HEALTHY_MS } });
  });

  test('a task failing after the update: unhealthy for the new deployment, which a fail-fast gate reports', async () => {
    let gate: ReturnType<typeof follow> = {};
    const { moved } = await updatedInPlace(harness, () => {
      gate = follow(harness, harness.supervisor.waitForDeployment('web', { version: 1, failFast: true }));
    });
    const failing = moved[0]!;
    await driveTo(harness.clock, MOVED + 700);
    harness.fake.cluster.failTask(failing.ID, 'main', { exitCode: 1 });
    await driveTo(harness.clock, MOVED + 5_000);
    const forNew = harness.verdicts.filter((v) => v.alloc.deploymentId === failing.DeploymentID);
    expect(forNew.map((v) => [v.alloc.allocId, v.outcome])).toEqual([
      [failing.ID, { healthy: false, at: MOVED + 700, reasons: { main: 'Unhealthy because of failed task' } }],
      [moved[1]!.ID, { healthy: true, at: MOVED + MIN_HEALTHY_MS, reasons: {} }],
    ]);
    expect(gate).toMatchObject({ at: MOVED + 700, result: { ok: false, rule: 'fail-fast', unhealthy: [{ allocId: failing.ID }] } });
  });

  test('the healthy deadline counts from the update: a task that stops running after it fails the allocation then', async () => {
    const { moved } = await updatedInPlace(harness);
    const restarting = moved[0]!;
    await driveTo(harness.clock, MOVED + 500);
    // It restarts and never runs again: pending until the deadline, 20 s after the update.
    harness.fake.cluster.failTask(restarting.ID, 'main', { exitCode: 1, restartDelayMs: 60_000 });
    await driveTo(harness.clock, MOVED + 21_000 + SETTLE_MS);
    const verdict = harness.verdicts.find((v) => v.alloc.allocId === restarting.ID && v.alloc.deploymentId === restarting.DeploymentID);
    expect(verdict?.outcome).toEqual({ healthy: false, at: MOVED + 20_000, reasons: { main: notRunningByDeadline(version, 20_000) } });
  });
});

describe('an allocation nobody judged, moved into a deployment that is judged', () => {
  let harness: Harness;
  beforeEach(async () => {
    harness = await startHarness(START);
  });
  afterEach(() => harness.close());

  test('health set manually in version 0, by task states in version 1: judged from the update', async () => {
    const { cluster } = harness.fake;
    const job = serviceJob('web');
    const withHealth = (HealthCheck: string) => ({ Update: { ...(job.Update as object), HealthCheck } });
    cluster.registerJob(serviceJob('web', withHealth('manual')));
    const placed = cluster.placeAllocations('web');
    for (const alloc of placed) cluster.startTask(alloc.ID);
    await driveTo(harness.clock, MOVED);
    await expect(harness.supervisor.verdict(placed[0]!.ID)).rejects.toThrow(/manual/);
    cluster.registerJob(serviceJob('web', withHealth('task_states')));
    const gate = follow(harness, harness.supervisor.waitForDeployment('web', { version: 1 }));
    const moved = cluster.updateInPlace('web');
    await completeAt(harness, moved[0]!.DeploymentID, COMPLETED);
    await driveTo(harness.clock, MOVED + 5_000);
    expect(gate).toMatchObject({ at: COMPLETED, result: { ok: true, deploymentId: moved[0]!.DeploymentID } });
    await expect(harness.supervisor.verdict(placed[0]!.ID)).resolves.toMatchObject({ outcome: { healthy: true, at: MOVED + MIN_HEALTHY_MS } });
  });
});

describe('a supervisor started after the in-place update', () => {
  let harness: Harness;
  beforeEach(async () => {
    harness = await startHarness(START);
  });
  afterEach(() => harness.close());

  /** A second supervisor on the same cluster and clock from now on: its verdicts and its gate for `version`. */
  function lateSupervisor(version: number) {
    const nomad = new NomadClient({ address: harness.fake.address }, { clock: harness.clock, gzip: false });
    const supervisor = createSupervisor({ nomad, clock: harness.clock });
    const verdicts: VerdictRecord[] = [];
    supervisor.verdicts$.subscribe((v) => verdicts.push(v));
    const gate = follow(harness, supervisor.waitForDeployment('web', { version }));
    const close = async () => {
      await supervisor.stop();
      await nomad.close();
    };
    return { verdicts, gate, close };
  }

  const outcomes = (verdicts: readonly VerdictRecord[], deploymentId: string | undefined) =>
    verdicts.filter((v) => v.alloc.deploymentId === deploymentId).map((v) => [v.alloc.allocId, v.outcome]).sort();

  test.each([
    ['while the allocations prove themselves again', 500],
    ['once they have', 3_500],
  ])('%s: the same verdicts as the supervisor that watched throughout, and the gate succeeds', async (_when, lateBy) => {
    const { moved } = await updatedInPlace(harness);
    const deploymentId = moved[0]!.DeploymentID;
    if (lateBy > COMPLETED - MOVED) await completeAt(harness, deploymentId, COMPLETED);
    await driveTo(harness.clock, MOVED + lateBy);
    const late = lateSupervisor(1);
    try {
      if (lateBy <= COMPLETED - MOVED) await completeAt(harness, deploymentId, COMPLETED);
      await driveTo(harness.clock, MOVED + 6_000);
      const expected = moved.map((a) => [a.ID, { healthy: true, at: MOVED + MIN_HEALTHY_MS, reasons: {} }]).sort();
      expect(outcomes(harness.verdicts, deploymentId)).toEqual(expected);
      expect(outcomes(late.verdicts, deploymentId)).toEqual(expected);
      expect(late.gate.result).toMatchObject({ ok: true, version: 1, deploymentId });
      // Once Nomad has ended it and Warden has judged its allocations (at most a settle window later).
      expect(late.gate.at).toBeGreaterThanOrEqual(Math.max(COMPLETED, MOVED + lateBy));
      expect(late.gate.at).toBeLessThanOrEqual(Math.max(COMPLETED, MOVED + lateBy) + SETTLE_MS + 500);
    } finally {
      await late.close();
    }
  });

  test('an allocation placed in its deployment and rewritten by the server since is not taken for moved', async () => {
    const { cluster } = harness.fake;
    cluster.registerJob(serviceJob('web'));
    const placed = cluster.placeAllocations('web');
    for (const alloc of placed) cluster.startTask(alloc.ID);
    await driveTo(harness.clock, START + 500);
    // A server-side write (AllocModifyIndex moves) that is no move into another deployment.
    cluster.patchAllocation(placed[0]!.ID, { DesiredTransition: { ForceReschedule: null, Migrate: null, Reschedule: true } }, 'AllocationUpdateDesiredTransition');
    await flush();
    const late = lateSupervisor(0);
    try {
      await completeAt(harness, placed[0]!.DeploymentID, START + MIN_HEALTHY_MS + 1_000);
      await driveTo(harness.clock, START + 5_000);
      const expected = placed.map((a) => [a.ID, { healthy: true, at: START + MIN_HEALTHY_MS, reasons: {} }]).sort();
      expect(outcomes(late.verdicts, placed[0]!.DeploymentID)).toEqual(expected);
      expect(late.gate.result).toMatchObject({ ok: true, version: 0 });
    } finally {
      await late.close();
    }
  });
});
