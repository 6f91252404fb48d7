/**
 * The scripting API publishes what Nomad 1.1.2 publishes: a scripted run of a recorded scenario
 * produces the same sequence of batches (one per raft index, same topics and raft message types
 * in each) as the recording, and the objects read back follow the scripted changes.
 */
import { join } from 'node:path';
import { parseLossless } from '../../src/testing/losslessJson.js';
import { isHeartbeatLine, readScenario } from '../../src/testing/recording.js';
import { parseJobHcl } from '../../src/testing/nomad/hcl.js';
import type { EventBatch } from '../../src/testing/nomad/eventBroker.js';
import { FIXTURES, call, serviceJob, useFake } from './helpers.js';

/** Each batch as the sorted list of its events' Topic:Type. */
function kinds(batches: readonly Pick<EventBatch, 'Events'>[]): string[][] {
  return batches.map((b) => b.Events.map((e) => `${e.Topic}:${e.Type}`).sort());
}

function recordedKinds(name: string): string[][] {
  const scenario = readScenario(join(FIXTURES, 'scenarios', name));
  const batches = scenario.stream
    .filter((line) => !isHeartbeatLine(line))
    .map((line) => parseLossless(line.raw) as unknown as EventBatch)
    .filter((batch) => batch.Index > scenario.meta.raft_index_before);
  return kinds(batches);
}

function scenarioJob(name: string): Record<string, unknown> {
  return parseJobHcl(readScenario(join(FIXTURES, 'scenarios', name)).hcl!);
}

describe('FakeNomad scripting API', () => {
  const env = useFake();

  const published = (): string[][] => kinds(env.fake.broker.buffered());

  it('healthy_task_states: register, place, run, healthy, successful, purge: the recorded batches', () => {
    const { cluster } = env.fake;
    cluster.registerJob(scenarioJob('healthy_task_states'));
    const allocs = cluster.placeAllocations('healthy-task-states');
    const ids = allocs.map((a) => a.ID);
    cluster.batch(() => ids.forEach((id) => cluster.receiveAllocation(id)));
    env.clock.advance(250);
    cluster.batch(() => ids.forEach((id) => cluster.startTask(id)));
    env.clock.advance(2000);
    cluster.batch(() => ids.forEach((id) => cluster.setAllocHealth(id, true)));
    cluster.setDeploymentStatus(allocs[0]!.DeploymentID!, 'successful');
    cluster.deregisterJob('healthy-task-states', { purge: true });
    cluster.batch(() => ids.forEach((id) => cluster.killTasks(id)));
    expect(published()).toEqual(recordedKinds('healthy_task_states'));
  });

  it('stopped_while_waiting: a stop, the kill, then a purge: the recorded batches', () => {
    const { cluster } = env.fake;
    cluster.registerJob(scenarioJob('stopped_while_waiting'));
    const [alloc] = cluster.placeAllocations('stopped-while-waiting');
    cluster.receiveAllocation(alloc!.ID);
    cluster.startTask(alloc!.ID);
    cluster.deregisterJob('stopped-while-waiting');
    cluster.addTaskEvents(alloc!.ID, 'main', [{ Type: 'Killing', DisplayMessage: 'Sent interrupt. Waiting 5s before force killing' }]);
    cluster.batch(() => {
      cluster.killTasks(alloc!.ID);
      cluster.setAllocHealth(alloc!.ID, false);
    });
    cluster.deregisterJob('stopped-while-waiting', { purge: true });
    expect(published()).toEqual(recordedKinds('stopped_while_waiting'));
    expect(cluster.allocation(alloc!.ID)).toMatchObject({ ClientStatus: 'complete', DesiredStatus: 'stop', DeploymentStatus: { Healthy: false } });
  });

  it('placement_failure: blocked evaluation, deployment anyway, cancelled on purge: the recorded batches', () => {
    const { cluster } = env.fake;
    cluster.registerJob(scenarioJob('placement_failure'));
    const { evaluation, blocked } = cluster.failPlacement('placement-failure');
    expect(evaluation).toMatchObject({ Status: 'complete', BlockedEval: blocked.ID, FailedTGAllocs: { app: { DimensionExhausted: { memory: 1 } } } });
    expect(blocked).toMatchObject({ Status: 'blocked', TriggeredBy: 'queued-allocs', PreviousEval: evaluation.ID });
    const { evaluation: deregister } = cluster.deregisterJob('placement-failure', { purge: true });
    expect(published()).toEqual(recordedKinds('placement_failure'));
    expect(cluster.evaluation(blocked.ID)).toMatchObject({ Status: 'canceled', StatusDescription: `evaluation "${deregister.ID}" successful` });
  });

  it('batch_job: a batch job runs to completion and the job goes dead: the recorded batches', () => {
    const { cluster } = env.fake;
    cluster.registerJob(scenarioJob('batch_job'));
    const [alloc] = cluster.placeAllocations('batch-job');
    expect(alloc!.DeploymentID).toBeUndefined();
    cluster.startTask(alloc!.ID);
    cluster.completeTask(alloc!.ID);
    expect(cluster.job('batch-job')!.Status).toBe('dead');
    cluster.deregisterJob('batch-job', { purge: true });
    expect(published()).toEqual(recordedKinds('batch_job'));
  });

  it('rolling_update: v0 to healthy, then v1 replacing one allocation at a time: the recorded batches', () => {
    const { cluster } = env.fake;
    const scenario = readScenario(join(FIXTURES, 'scenarios', 'rolling_update'));
    cluster.registerJob(scenarioJob('rolling_update'));
    const v0 = cluster.placeAllocations('rolling-update').map((a) => a.ID);
    cluster.batch(() => v0.forEach((id) => cluster.startTask(id)));
    cluster.batch(() => v0.forEach((id) => cluster.setAllocHealth(id, true)));
    cluster.setDeploymentStatus(cluster.allocation(v0[0]!)!.DeploymentID!, 'successful');
    cluster.registerJob(parseJobHcl(scenario.hclV1!));
    for (const [step, old] of v0.entries()) {
      if (step > 0) {
        const watcher = cluster.createEvaluation('rolling-update', { TriggeredBy: 'deployment-watcher' }, { type: 'AllocationUpdateDesiredStatus' });
        expect(watcher.Type).toBe('service');
      }
      const [next] = cluster.placeAllocations('rolling-update', { count: 1, stop: [old] });
      expect(cluster.allocation(old)).toMatchObject({ DesiredStatus: 'stop', DesiredDescription: 'alloc not needed due to job update' });
      cluster.batch(() => {
        cluster.killTasks(old);
        cluster.startTask(next!.ID);
      });
      cluster.setAllocHealth(next!.ID, true);
    }
    const mine = published();
    expect(mine.length).toBeGreaterThan(20);
    expect(mine).toEqual(recordedKinds('rolling_update').slice(0, mine.length));
  });

  it('moves tasks through states with their events, restarts and failures', () => {
    const { cluster } = env.fake;
    cluster.registerJob(serviceJob('web', { TaskGroups: [{ Name: 'app', Count: 1, Tasks: [{ Name: 'main', Driver: 'raw_exec' }, { Name: 'side', Driver: 'raw_exec' }] }] }));
    const [alloc] = cluster.placeAllocations('web');
    const id = alloc!.ID;
    expect(cluster.receiveAllocation(id)).toMatchObject({ ClientStatus: 'pending', ClientDescription: 'No tasks have started' });
    env.clock.advance(1000);
    const started = cluster.startTask(id, 'main');
    expect(started.ClientStatus).toBe('running');
    expect(Date.parse(started.TaskStates!.main!.StartedAt!)).toBe(env.clock.now());
    expect(started.TaskStates!.side!.State).toBe('pending');
    const restarted = cluster.failTask(id, 'main', { exitCode: 2, restartDelayMs: 1500 });
    expect(restarted.TaskStates!.main).toMatchObject({ State: 'pending', Restarts: 1, Failed: false });
    expect(restarted.TaskStates!.main!.Events!.slice(-2).map((e) => e.DisplayMessage)).toEqual(['Exit Code: 2', 'Task restarting in 1.5s']);
    const failed = cluster.failTask(id, 'main');
    expect(failed).toMatchObject({ ClientStatus: 'failed', ClientDescription: 'Failed tasks' });
    expect(failed.TaskStates!.main).toMatchObject({ State: 'dead', Failed: true });
    // Events are capped at 10 per task, oldest dropped.
    const many = cluster.addTaskEvents(id, 'side', Array.from({ length: 12 }, (_, i) => ({ Type: 'Driver', DisplayMessage: `event ${i}` })));
    expect(many.TaskStates!.side!.Events!.map((e) => e.DisplayMessage)).toEqual(Array.from({ length: 10 }, (_, i) => `event ${i + 2}`));
    expect(() => cluster.startTask(id, 'nope')).toThrow('unknown task name "nope"');
  });

  it('embeds the job version an allocation runs in GET /v1/allocation/:id', async () => {
    const { cluster } = env.fake;
    cluster.registerJob(serviceJob('web'));
    const [v0] = cluster.placeAllocations('web', { count: 1 });
    cluster.registerJob(serviceJob('web', { Meta: { v: '2' } }));
    const [v1] = cluster.placeAllocations('web', { count: 1 });
    const read = async (id: string) => parseLossless((await call(env.fake.address, 'GET', `/v1/allocation/${id}`)).text) as { Job: { Version: number; Meta: unknown; TaskGroups: { Tasks: { Name: string }[] }[] } };
    expect((await read(v0!.ID)).Job.Version).toBe(0);
    expect((await read(v1!.ID)).Job).toMatchObject({ Version: 1, Meta: { v: '2' } });
    expect(cluster.allocation(v1!.ID)!.Job!.TaskGroups![0]!.Tasks!.map((t) => t.Name)).toEqual(['main']);
    const stubs = parseLossless((await call(env.fake.address, 'GET', '/v1/job/web/allocations')).text) as { JobVersion: number }[];
    expect(stubs.map((s) => s.JobVersion)).toEqual([0, 1]);
  });

  it('promotes a canary deployment: the canary flag drops, the groups are promoted', async () => {
    const { cluster } = env.fake;
    cluster.registerJob(serviceJob('web', { Update: { Canary: 1, HealthCheck: 'task_states', MinHealthyTime: 1e9, HealthyDeadline: 5e9, ProgressDeadline: 10e9 } }));
    const [canary] = cluster.placeAllocations('web', { count: 1, canary: true });
    expect(canary!.DeploymentStatus).toEqual({ Canary: true, Healthy: null, ModifyIndex: canary!.CreateIndex, Timestamp: null });
    const deploymentId = canary!.DeploymentID!;
    expect(cluster.deployment(deploymentId)).toMatchObject({ StatusDescription: 'Deployment is running but requires manual promotion', TaskGroups: { app: { PlacedCanaries: [canary!.ID], DesiredCanaries: 1 } } });
    cluster.setAllocHealth(canary!.ID, true);
    expect(cluster.deployment(deploymentId)!.TaskGroups!.app!.HealthyAllocs).toBe(1);
    const promoted = await call(env.fake.address, 'POST', `/v1/deployment/promote/${deploymentId}`, { DeploymentID: deploymentId, All: true });
    expect(promoted.status).toBe(200);
    expect(cluster.allocation(canary!.ID)!.DeploymentStatus).toMatchObject({ Canary: false, Healthy: true });
    expect(cluster.deployment(deploymentId)).toMatchObject({ StatusDescription: 'Deployment is running', TaskGroups: { app: { Promoted: true } } });
    const promotion = env.fake.broker.buffered().at(-1)!;
    expect(new Set(promotion.Events.map((e) => e.Type))).toEqual(new Set(['DeploymentPromotion']));
    expect(await call(env.fake.address, 'POST', '/v1/deployment/promote/nope', { DeploymentID: 'nope', All: true })).toMatchObject({ status: 500, text: 'deployment lookup failed: index error: UUID must be 36 characters' });
    const unknown = '00000000-0000-0000-0000-000000000000';
    expect(await call(env.fake.address, 'POST', `/v1/deployment/promote/${unknown}`, { DeploymentID: unknown, All: true })).toMatchObject({ status: 500, text: 'deployment not found' });
  });

  it('creates and updates evaluations, and marks deployments failed with the watcher evaluation', () => {
    const { cluster } = env.fake;
    cluster.registerJob(serviceJob('web'));
    const [alloc] = cluster.placeAllocations('web', { count: 1 });
    const delayed = cluster.createEvaluation('web', { TriggeredBy: 'alloc-failure', Status: 'pending', WaitUntil: '2026-11-29T17:00:30Z', StatusDescription: 'created for delayed rescheduling' });
    expect(cluster.evaluation(delayed.ID)).toMatchObject({ TriggeredBy: 'alloc-failure', WaitUntil: '2026-11-29T17:00:30Z' });
    expect(cluster.job('web')!.Status).toBe('running');
    expect(cluster.updateEvaluation(delayed.ID, { Status: 'complete' }).Status).toBe('complete');
    const failed = cluster.setDeploymentStatus(alloc!.DeploymentID!, 'failed', 'Failed due to progress deadline');
    expect(failed).toMatchObject({ Status: 'failed', StatusDescription: 'Failed due to progress deadline' });
    const last = env.fake.broker.buffered().slice(-2);
    expect(kinds(last)).toEqual([['Deployment:DeploymentStatusUpdate', 'Evaluation:DeploymentStatusUpdate'], ['Evaluation:EvaluationUpdated']]);
    expect(() => cluster.updateEvaluation('nope', {})).toThrow('eval not found');
  });

  it('groups changes into one raft index with batch()', () => {
    const { cluster } = env.fake;
    cluster.registerJob(serviceJob('web'));
    const allocs = cluster.placeAllocations('web');
    const before = cluster.index;
    cluster.batch(() => allocs.forEach((a) => cluster.receiveAllocation(a.ID)));
    expect(cluster.index).toBe(before + 1);
    expect(env.fake.broker.buffered().at(-1)!.Events.map((e) => e.Key).sort()).toEqual(allocs.map((a) => a.ID).sort());
  });
});

describe('FakeNomad write endpoints beyond registration', () => {
  const env = useFake();

  async function runningDeployment(healthCheck = 'manual'): Promise<{ deploymentId: string; allocIds: string[] }> {
    env.fake.cluster.registerJob(serviceJob('web', { Update: { HealthCheck: healthCheck, MinHealthyTime: 1e9, HealthyDeadline: 5e9, ProgressDeadline: 10e9 } }));
    const allocs = env.fake.cluster.placeAllocations('web');
    return { deploymentId: allocs[0]!.DeploymentID!, allocIds: allocs.map((a) => a.ID) };
  }

  it('sets manual health through /v1/deployment/allocation-health in one write', async () => {
    const { deploymentId, allocIds } = await runningDeployment();
    const before = env.fake.cluster.index;
    const answer = await call(env.fake.address, 'PUT', `/v1/deployment/allocation-health/${deploymentId}`, {
      DeploymentID: deploymentId, HealthyAllocationIDs: [allocIds[0]], UnhealthyAllocationIDs: [allocIds[1]],
    });
    expect(answer.status).toBe(200);
    expect(env.fake.cluster.index).toBe(before + 1);
    expect(env.fake.cluster.allocation(allocIds[0]!)!.DeploymentStatus!.Healthy).toBe(true);
    expect(env.fake.cluster.allocation(allocIds[1]!)!.DeploymentStatus!.Healthy).toBe(false);
    expect(env.fake.cluster.deployment(deploymentId)!.TaskGroups!.app).toMatchObject({ HealthyAllocs: 1, UnhealthyAllocs: 1 });
    const stranger = await call(env.fake.address, 'PUT', `/v1/deployment/allocation-health/${deploymentId}`, { DeploymentID: deploymentId, HealthyAllocationIDs: ['nope'] });
    expect(stranger).toMatchObject({ status: 500, text: 'Unknown allocation "nope"' });
    expect(await call(env.fake.address, 'PUT', `/v1/deployment/allocation-health/${deploymentId}`, { HealthyAllocationIDs: [] })).toMatchObject({ status: 400, text: 'DeploymentID must be specified' });
  });

  it('pauses, resumes and fails deployments', async () => {
    const { deploymentId } = await runningDeployment('task_states');
    const pause = (Pause: boolean) => call(env.fake.address, 'PUT', `/v1/deployment/pause/${deploymentId}`, { DeploymentID: deploymentId, Pause });
    expect((await pause(true)).status).toBe(200);
    expect(env.fake.cluster.deployment(deploymentId)).toMatchObject({ Status: 'paused', StatusDescription: 'Deployment is paused' });
    await pause(false);
    expect(env.fake.cluster.deployment(deploymentId)!.Status).toBe('running');
    const failed = await call(env.fake.address, 'PUT', `/v1/deployment/fail/${deploymentId}`);
    expect(Number(failed.headers['x-nomad-index'])).toBe(env.fake.cluster.deployment(deploymentId)!.ModifyIndex);
    expect(env.fake.cluster.deployment(deploymentId)).toMatchObject({ Status: 'failed', StatusDescription: 'Deployment marked as failed' });
  });

  it('stops an allocation through an alloc-stop evaluation, and summarises the job', async () => {
    const { allocIds } = await runningDeployment('task_states');
    env.fake.cluster.batch(() => allocIds.forEach((id) => env.fake.cluster.startTask(id)));
    const stopped = await call(env.fake.address, 'POST', `/v1/allocation/${allocIds[0]}/stop`);
    const { EvalID } = JSON.parse(stopped.text) as { EvalID: string };
    expect(env.fake.cluster.evaluation(EvalID)).toMatchObject({ TriggeredBy: 'alloc-stop', Status: 'complete' });
    expect(env.fake.cluster.allocation(allocIds[0]!)).toMatchObject({ DesiredStatus: 'stop', DesiredTransition: { Migrate: true } });
    env.fake.cluster.killTasks(allocIds[0]!);
    const summary = JSON.parse((await call(env.fake.address, 'GET', '/v1/job/web/summary')).text) as { Summary: { app: Record<string, number> } };
    expect(summary.Summary.app).toMatchObject({ Running: 1, Complete: 1 });
    expect(await call(env.fake.address, 'GET', '/v1/job/nope/summary')).toMatchObject({ status: 404, text: 'job not found' });
    expect(await call(env.fake.address, 'POST', '/v1/allocation/nope/stop')).toMatchObject({ status: 500, text: 'alloc lookup failed: index error: UUID must be 36 characters' });
    expect(await call(env.fake.address, 'POST', '/v1/allocation/00000000-0000-0000-0000-000000000000/stop')).toMatchObject({ status: 404, text: 'allocation not found' });
  });
});
