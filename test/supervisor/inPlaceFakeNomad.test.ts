/**
 * FakeNomad's in-place update (ClusterState.updateInPlace) writes and publishes what Nomad's
 * scheduler does for a non-destructive job change (scheduler/generic_sched.go, the in-place
 * updates of the plan): the same allocations, on the new job version, moved into the new
 * deployment with their health cleared, in one PlanResult.
 */
import { parseLossless } from '../../src/testing/losslessJson.js';
import type { Allocation, Deployment } from '../../src/nomad/types.js';
import { call, serviceJob, useFake } from '../testing/helpers.js';

describe('ClusterState.updateInPlace', () => {
  const env = useFake();

  async function read<T>(path: string): Promise<T> {
    const answer = await call(env.fake.address, 'GET', path);
    expect(answer.status).toBe(200);
    return parseLossless(answer.text) as unknown as T;
  }

  function runningVersion0() {
    const { cluster } = env.fake;
    cluster.registerJob(serviceJob('web'));
    const placed = cluster.placeAllocations('web');
    for (const alloc of placed) cluster.startTask(alloc.ID);
    cluster.setAllocHealth(placed[0]!.ID, true);
    env.clock.advance(5_000);
    cluster.registerJob(serviceJob('web', { Meta: { release: 'two' } }));
    return placed;
  }

  it('keeps the allocations and their tasks, on the new version, in the new deployment, health cleared', async () => {
    const placed = runningVersion0();
    const before = await read<Allocation>(`/v1/allocation/${placed[0]!.ID}`);
    const moved = env.fake.cluster.updateInPlace('web');
    expect(moved.map((a) => a.ID)).toEqual(placed.map((a) => a.ID));

    const after = await read<Allocation & { Job: { Version: number } }>(`/v1/allocation/${placed[0]!.ID}`);
    expect(after.Job.Version).toBe(1);
    expect(after.DeploymentID).not.toBe(before.DeploymentID);
    expect(after.DeploymentStatus ?? null).toBeNull();
    expect(after).toMatchObject({ CreateIndex: before.CreateIndex, CreateTime: before.CreateTime, TaskStates: before.TaskStates, ClientStatus: 'running' });
    expect(after.AllocModifyIndex).toBe(after.ModifyIndex);
    expect(after.ModifyIndex).toBeGreaterThan(before.ModifyIndex!);
    expect(after.ModifyTime).toBe(BigInt(env.clock.now()) * 1_000_000n);

    const stubs = await read<{ ID: string; JobVersion: number }[]>('/v1/job/web/allocations');
    expect(stubs.map((s) => s.JobVersion)).toEqual([1, 1]);
    const deployment = await read<Deployment>(`/v1/deployment/${after.DeploymentID!}`);
    expect(deployment).toMatchObject({ JobVersion: 1, Status: 'running', TaskGroups: { app: { PlacedAllocs: 2, HealthyAllocs: 0 } } });
    // Placed before the deployment existed: how a late reader tells a moved allocation.
    expect(deployment.CreateIndex).toBeGreaterThan(after.CreateIndex!);
  });

  it('publishes one PlanResult batch (deployment, evaluation, the moved allocations), then the evaluation completes', () => {
    runningVersion0();
    const from = env.fake.broker.buffered().length;
    const moved = env.fake.cluster.updateInPlace('web');
    const batches = env.fake.broker.buffered().slice(from);
    expect(batches.map((b) => b.Events.map((e) => `${e.Topic}:${e.Type}`).sort())).toEqual([
      // The new deployment, and version 0's, still running, cancelled in the same plan (as Nomad 1.1.2 does).
      ['Allocation:PlanResult', 'Allocation:PlanResult', 'Deployment:PlanResult', 'Deployment:PlanResult', 'Evaluation:PlanResult'],
      ['Evaluation:EvaluationUpdated'],
    ]);
    const deployments = batches[0]!.Events.filter((e) => e.Topic === 'Deployment').map((e) => (e.Payload as { Deployment: Deployment }).Deployment);
    expect(deployments.map((d) => [d.JobVersion, d.Status, d.StatusDescription]).sort()).toEqual([
      [0, 'cancelled', 'Cancelled due to newer version of job'],
      [1, 'running', 'Deployment is running'],
    ]);
    const allocations = batches[0]!.Events.filter((e) => e.Topic === 'Allocation').map((e) => (e.Payload as { Allocation: Allocation }).Allocation);
    expect(allocations.map((a) => [a.ID, a.DeploymentID, a.DeploymentStatus ?? null])).toEqual(moved.map((a) => [a.ID, a.DeploymentID, null]));
    // Allocation payloads never carry the job.
    expect(allocations.every((a) => !('Job' in a))).toBe(true);
  });

  it('allocations already on the current version are left alone', () => {
    runningVersion0();
    env.fake.cluster.updateInPlace('web');
    expect(env.fake.cluster.updateInPlace('web')).toEqual([]);
  });
});
