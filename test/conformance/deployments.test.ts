/**
 * Deployments as the client's health tracker and the deployment watcher drive them: each allocation
 * reported healthy once its tasks ran min_healthy_time (health_check task_states), the deployment
 * made successful and the job version stable through a deployment-watcher evaluation, a rolling
 * update replacing max_parallel allocations at a time.
 */
import type { Frame, StreamEvent } from './support/eventTap.js';
import { allocOf, register, rawExecJob, streamJobs, type JsonObject } from './support/scenario.js';
import { useTarget } from './support/target.js';

const UPDATE = { MaxParallel: 1, HealthCheck: 'task_states', MinHealthyTime: 1e9, HealthyDeadline: 20e9, ProgressDeadline: 60e9, AutoRevert: false, AutoPromote: false, Canary: 0, Stagger: 30e9 };

const events = (frames: readonly Frame[]): StreamEvent[] => frames.flatMap((f) => [...f.Events!]);
const shape = (frame: Frame): string[] => frame.Events!.map((e) => `${e.Topic}/${e.Type}`).sort();
const successful = (frames: readonly Frame[]): boolean => events(frames).some((e) => e.Topic === 'Deployment' && e.Payload.Deployment!.Status === 'successful');

describe('deployments', () => {
  const target = useTarget();

  test('healthy after min_healthy_time, then successful and the version stable, through the watcher\'s evaluation', async () => {
    const id = target.jobId('healthy');
    const stream = await streamJobs(target, [id]);
    await register(target, rawExecJob(id, { count: 2, group: { Update: UPDATE } }));
    const frames = await stream.until('the deployment successful', successful, 30_000);
    await stream.fence();
    const all = stream.frames();
    const healthy = events(frames).filter((e) => e.Topic === 'Allocation' && (allocOf(e).DeploymentStatus as JsonObject | undefined)?.Healthy === true);
    expect(new Set(healthy.map((e) => allocOf(e).ID)).size).toBe(2);
    for (const event of healthy) {
      const alloc = allocOf(event);
      const status = alloc.DeploymentStatus as { Timestamp: string; Healthy: boolean; ModifyIndex: number };
      const startedAt = Date.parse(String((alloc.TaskStates as Record<string, { StartedAt: string }>).t!.StartedAt));
      expect(Date.parse(status.Timestamp) - startedAt).toBeGreaterThanOrEqual(1_000);
      expect(event.Type).toBe('AllocationUpdated');
      // The deployment's count moves in the same write.
      const frame = all.find((f) => f.Index === event.Index)!;
      expect(frame.Events!.some((e) => e.Topic === 'Deployment' && e.Type === 'AllocationUpdated')).toBe(true);
    }
    const lastHealthy = all.filter((f) => f.Events!.some((e) => healthy.includes(e))).at(-1)!;
    const after = all.filter((f) => f.Index! > lastHealthy.Index!);
    expect(after.slice(0, 3).map(shape)).toEqual([
      ['Evaluation/AllocationUpdateDesiredStatus'],
      ['Deployment/PlanResult', 'Evaluation/PlanResult', 'Job/PlanResult'],
      ['Evaluation/EvaluationUpdated'],
    ]);
    // deployment_watcher.go perJobEvalBatchPeriod (1 s), seen from the frames' arrival: a few ms either way on the wall clock.
    expect(after[0]!.at - lastHealthy.at).toBeGreaterThanOrEqual(950);
    expect(after[0]!.at - lastHealthy.at).toBeLessThan(3_000);
    expect(after[0]!.Events![0]!.Payload.Evaluation).toMatchObject({ TriggeredBy: 'deployment-watcher', Status: 'pending' });
    expect(after[1]!.Events!.find((e) => e.Topic === 'Deployment')!.Payload.Deployment).toMatchObject({
      Status: 'successful', StatusDescription: 'Deployment completed successfully', TaskGroups: { g: { HealthyAllocs: 2, DesiredTotal: 2, PlacedAllocs: 2 } },
    });
    expect(after[1]!.Events!.find((e) => e.Topic === 'Job')!.Payload.Job).toMatchObject({ Stable: true, Version: 0 });
    expect(after.slice(3)).toEqual([]);
    stream.close();
  });

  test('a rolling update replaces max_parallel allocations at a time, the next once the new one is healthy', async () => {
    const id = target.jobId('rolling');
    const stream = await streamJobs(target, [id]);
    await register(target, rawExecJob(id, { count: 2, group: { Update: UPDATE } }));
    await stream.until('the first deployment successful', successful, 30_000);
    const updated = await register(target, rawExecJob(id, { count: 2, args: ['301'], group: { Update: UPDATE } }));
    const frames = await stream.until('the second deployment successful', (all) => events(all.filter((f) => f.Index! > updated.Index)).some((e) => e.Topic === 'Deployment' && e.Payload.Deployment!.Status === 'successful'), 40_000);
    const after = frames.filter((f) => f.Index! > updated.Index);
    const placements = after.filter((f) => f.Events!.some((e) => e.Type === 'PlanResult' && e.Topic === 'Allocation' && allocOf(e).PreviousAllocation && allocOf(e).ClientStatus === 'pending'));
    expect(placements).toHaveLength(2);
    for (const plan of placements) expect(plan.Events!.filter((e) => e.Topic === 'Allocation' && allocOf(e).ClientStatus === 'pending')).toHaveLength(1);
    // The second replacement waits for the first one's health, and a watcher's evaluation.
    const firstNew = allocOf(placements[0]!.Events!.find((e) => e.Topic === 'Allocation' && allocOf(e).ClientStatus === 'pending')!);
    const firstHealthy = after.find((f) => f.Events!.some((e) => e.Topic === 'Allocation' && allocOf(e).ID === firstNew.ID && (allocOf(e).DeploymentStatus as JsonObject | undefined)?.Healthy === true))!;
    expect(placements[1]!.Index).toBeGreaterThan(firstHealthy.Index!);
    const between = after.filter((f) => f.Index! > firstHealthy.Index! && f.Index! < placements[1]!.Index!);
    expect(events(between).some((e) => e.Topic === 'Evaluation' && e.Payload.Evaluation!.TriggeredBy === 'deployment-watcher')).toBe(true);
    stream.close();
  });
});
