/**
 * Job writes as Nomad 1.1.2 applies them: EnforceIndex, a registration that changes nothing, a stop,
 * a purge (which publishes no Job event), and updates applied in place or by replacement as the
 * scheduler's tasksUpdated decides.
 */
import type { Frame } from './support/eventTap.js';
import { allocOf, configGroup, describeFrames, register, rawExecJob, streamJobs, type JsonObject } from './support/scenario.js';
import { useTarget } from './support/target.js';

interface Stub {
  ID: string;
  ClientStatus: string;
  DesiredStatus: string;
  DesiredDescription: string;
  JobVersion: number;
  ModifyIndex: number;
  EvalID: string;
}

const shape = (frame: Frame): string[] => (frame.Events ?? []).map((e) => `${e.Topic}/${e.Type}`).sort();
const evaluationDone = (evalId: string) => (frames: readonly Frame[]): boolean =>
  frames.some((f) => f.Events!.some((e) => e.Key === evalId && e.Payload.Evaluation?.Status === 'complete'));

describe('job writes', () => {
  const target = useTarget();

  test('EnforceIndex: the index must be the job\'s JobModifyIndex, 0 only while the job does not exist', async () => {
    const id = target.jobId('enforce');
    const spec = (meta: Record<string, string>): JsonObject => rawExecJob(id, { type: 'batch', count: 0, meta });
    const refused = async (body: JsonObject): Promise<[number, string]> => {
      const answer = await target.request('PUT', '/v1/jobs', { Job: spec({ a: 'x' }), ...body });
      return [answer.status, answer.text];
    };
    expect(await refused({ EnforceIndex: true, JobModifyIndex: 5 })).toEqual([500, 'Enforcing job modify index 5: job does not exist']);
    const first = await register(target, spec({ a: '0' }), { EnforceIndex: true, JobModifyIndex: 0 });
    expect(await refused({ EnforceIndex: true, JobModifyIndex: 0 })).toEqual([500, 'Enforcing job modify index 0: job already exists']);
    expect(await refused({ EnforceIndex: true, JobModifyIndex: 7 })).toEqual([500, `Enforcing job modify index 7: job exists with conflicting job modify index: ${first.JobModifyIndex}`]);
    expect(await refused({ EnforceIndex: true, JobModifyIndex: first.JobModifyIndex + 1 })).toEqual([500, `Enforcing job modify index ${first.JobModifyIndex + 1}: job exists with conflicting job modify index: ${first.JobModifyIndex}`]);
    const second = await register(target, spec({ a: '1' }), { EnforceIndex: true, JobModifyIndex: first.JobModifyIndex });
    expect(second.JobModifyIndex).toBeGreaterThan(first.JobModifyIndex);
    // Without EnforceIndex the index given is ignored.
    await register(target, spec({ a: '2' }), { EnforceIndex: false, JobModifyIndex: 3 });
    const job = (await target.request('GET', `/v1/job/${id}`)).json<{ Version: number; Meta: Record<string, string> }>();
    expect([job.Version, job.Meta]).toEqual([2, { a: '2' }]);
  });

  test('registering the same spec again: no new version, no Job event, only an evaluation', async () => {
    const id = target.jobId('same');
    const stream = await streamJobs(target, [id]);
    const first = await register(target, rawExecJob(id, { type: 'batch', count: 1 }));
    await stream.until('the first evaluation', evaluationDone(first.EvalID));
    const again = await register(target, rawExecJob(id, { type: 'batch', count: 1 }));
    expect(again.JobModifyIndex).toBe(first.JobModifyIndex);
    expect(again.Index).toBeGreaterThan(first.Index);
    const frames = await stream.until('the second evaluation', evaluationDone(again.EvalID));
    const after = frames.filter((f) => f.Index! >= again.Index);
    expect(after.map(shape)).toEqual([['Evaluation/EvaluationUpdated'], ['Evaluation/EvaluationUpdated']]);
    expect(after[0]!.Index).toBe(again.Index);
    expect(after[0]!.Events![0]!.Payload.Evaluation).toMatchObject({ ID: again.EvalID, Status: 'pending', TriggeredBy: 'job-register', JobModifyIndex: first.JobModifyIndex });
    const job = (await target.request('GET', `/v1/job/${id}`)).json<{ Version: number; JobModifyIndex: number }>();
    expect([job.Version, job.JobModifyIndex]).toEqual([0, first.JobModifyIndex]);
    stream.close();
  });

  test('a purge publishes no Job event: the evaluation, the plan stopping the allocations, the evaluation complete', async () => {
    const id = target.jobId('purge');
    const stream = await streamJobs(target, [id]);
    await register(target, rawExecJob(id, { count: 2 }));
    await stream.until('both running', (frames) => frames.flatMap((f) => f.Events!).filter((e) => e.Payload.Allocation?.ClientStatus === 'running').length >= 2, 20_000);
    const purged = (await target.request('DELETE', `/v1/job/${id}?purge=true`)).json<{ EvalID: string; Index: number; JobModifyIndex: number }>();
    expect(purged.JobModifyIndex).toBe(purged.Index);
    await stream.until('both complete', (frames) => frames.flatMap((f) => f.Events!).filter((e) => e.Payload.Allocation?.ClientStatus === 'complete').length >= 2, 20_000);
    await stream.fence();
    const after = stream.frames().filter((f) => f.Index! >= purged.Index);
    expect(after.flatMap((f) => f.Events!).filter((e) => e.Topic === 'Job')).toEqual([]);
    const [evaluation, plan, complete] = after;
    expect(evaluation!.Index).toBe(purged.Index);
    expect(shape(evaluation!)).toEqual(['Evaluation/JobDeregistered']);
    expect(evaluation!.Events![0]!.Payload.Evaluation).toMatchObject({ ID: purged.EvalID, TriggeredBy: 'job-deregister', Status: 'pending', JobModifyIndex: purged.Index });
    expect(shape(plan!)).toEqual(['Allocation/PlanResult', 'Allocation/PlanResult', 'Deployment/PlanResult', 'Evaluation/PlanResult']);
    expect(plan!.Events!.find((e) => e.Topic === 'Deployment')!.Payload.Deployment).toMatchObject({ Status: 'cancelled', StatusDescription: 'Cancelled because job is stopped' });
    for (const alloc of plan!.Events!.filter((e) => e.Topic === 'Allocation').map(allocOf)) {
      expect(alloc).toMatchObject({ DesiredStatus: 'stop', DesiredDescription: 'alloc not needed due to job update', ClientStatus: 'running' });
    }
    expect(shape(complete!)).toEqual(['Evaluation/EvaluationUpdated']);
    expect((await target.request('GET', `/v1/job/${id}`)).status).toBe(404);
    // The allocations and evaluations stay until Nomad's garbage collection.
    const allocs = (await target.request('GET', `/v1/allocations?prefix=`)).json<(Stub & { JobID: string })[]>().filter((a) => a.JobID === id);
    expect(allocs.map((a) => [a.ClientStatus, a.DesiredStatus])).toEqual([['complete', 'stop'], ['complete', 'stop']]);
    expect((await target.request('GET', `/v1/evaluation/${purged.EvalID}`)).json<{ Status: string }>().Status).toBe('complete');
    stream.close();
  });

  test('a stop (no purge): the job at a new version with Stop set, its allocations stopped, the job dead', async () => {
    const id = target.jobId('stop');
    const stream = await streamJobs(target, [id]);
    const written = await register(target, rawExecJob(id, { count: 1 }));
    await stream.until('running', (frames) => frames.flatMap((f) => f.Events!).some((e) => e.Payload.Allocation?.ClientStatus === 'running'), 20_000);
    const stopped = (await target.request('DELETE', `/v1/job/${id}`)).json<{ EvalID: string; Index: number }>();
    const frames = await stream.until('complete', (all) => all.flatMap((f) => f.Events!).some((e) => e.Payload.Allocation?.ClientStatus === 'complete'), 20_000);
    const after = frames.filter((f) => f.Index! >= stopped.Index);
    expect(after.slice(0, 4).map(shape)).toEqual([
      ['Job/JobDeregistered'],
      ['Evaluation/JobDeregistered'],
      ['Allocation/PlanResult', 'Deployment/PlanResult', 'Evaluation/PlanResult', 'Job/PlanResult'],
      ['Evaluation/EvaluationUpdated', 'Job/EvaluationUpdated'],
    ]);
    expect(after[0]!.Events![0]!.Payload.Job).toMatchObject({ Stop: true, Version: 1, Status: 'running', JobModifyIndex: stopped.Index });
    expect(after[2]!.Events!.find((e) => e.Topic === 'Job')!.Payload.Job).toMatchObject({ Stop: true, Status: 'pending' });
    expect(after[3]!.Events!.find((e) => e.Topic === 'Job')!.Payload.Job).toMatchObject({ Stop: true, Status: 'dead' });
    const job = (await target.request('GET', `/v1/job/${id}`)).json<{ Stop: boolean; Status: string; Version: number; JobModifyIndex: number }>();
    expect(job).toMatchObject({ Stop: true, Status: 'dead', Version: 1, JobModifyIndex: stopped.Index });
    expect(stopped.Index).toBeGreaterThan(written.Index);
    stream.close();
  });

  test('a change of another group\'s meta is applied in place: the same allocation, now on the new version', async () => {
    const id = target.jobId('inplace');
    const spec = (meta: Record<string, string>): JsonObject => rawExecJob(id, { type: 'batch', count: 1, groups: [configGroup(meta)] });
    const stream = await streamJobs(target, [id]);
    await register(target, spec({ used: 'false' }));
    await stream.until('running', (frames) => frames.flatMap((f) => f.Events!).some((e) => e.Payload.Allocation?.ClientStatus === 'running'), 20_000);
    const [before] = (await target.request('GET', `/v1/job/${id}/allocations`)).json<Stub[]>();
    const updated = await register(target, spec({ used: 'true' }));
    const frames = await stream.until('the update', evaluationDone(updated.EvalID));
    const after = frames.filter((f) => f.Index! > updated.Index);
    expect(after.map(shape)).toEqual([['Allocation/PlanResult', 'Evaluation/PlanResult'], ['Evaluation/EvaluationUpdated']]);
    expect(allocOf(after[0]!.Events!.find((e) => e.Topic === 'Allocation')!)).toMatchObject({ ID: before!.ID, ClientStatus: 'running', DesiredStatus: 'run', EvalID: updated.EvalID, AllocModifyIndex: after[0]!.Index });
    const [now] = (await target.request('GET', `/v1/job/${id}/allocations`)).json<Stub[]>();
    expect(now).toMatchObject({ ID: before!.ID, JobVersion: 1, ClientStatus: 'running', EvalID: updated.EvalID });
    expect(now!.ModifyIndex).toBeGreaterThan(before!.ModifyIndex);
    const full = (await target.request('GET', `/v1/allocation/${before!.ID}`)).json<{ Job: { Version: number }; AllocModifyIndex: number }>();
    expect(full.Job.Version).toBe(1);
    await stream.fence();
    expect(stream.events(id).filter((e) => e.Topic === 'Allocation' && e.Type === 'AllocationUpdated' && e.Index > updated.Index)).toEqual([]);
    stream.close();
  });

  test('a change of a task\'s config replaces the allocation: the new one names the old, the old deployment is cancelled', async () => {
    const id = target.jobId('replace');
    const stream = await streamJobs(target, [id]);
    await register(target, rawExecJob(id, { count: 1 }));
    await stream.until('running', (frames) => frames.flatMap((f) => f.Events!).some((e) => e.Payload.Allocation?.ClientStatus === 'running'), 20_000);
    const [before] = (await target.request('GET', `/v1/job/${id}/allocations`)).json<Stub[]>();
    const oldDeployment = (await target.request('GET', `/v1/job/${id}/deployment`)).json<{ ID: string }>();
    const updated = await register(target, rawExecJob(id, { count: 1, args: ['301'] }));
    const frames = await stream.until('the old one complete, the new one running', (all) => {
      const events = all.flatMap((f) => f.Events!).filter((e) => e.Index > updated.Index && e.Topic === 'Allocation');
      return events.some((e) => allocOf(e).ID === before!.ID && allocOf(e).ClientStatus === 'complete') && events.some((e) => allocOf(e).ID !== before!.ID && allocOf(e).ClientStatus === 'running');
    }, 20_000);
    const plan = frames.find((f) => f.Index! > updated.Index && f.Events!.some((e) => e.Type === 'PlanResult'))!;
    expect(shape(plan)).toEqual(['Allocation/PlanResult', 'Allocation/PlanResult', 'Deployment/PlanResult', 'Deployment/PlanResult', 'Evaluation/PlanResult']);
    const allocs = plan.Events!.filter((e) => e.Topic === 'Allocation').map(allocOf);
    const old = allocs.find((a) => a.ID === before!.ID)!;
    const replacement = allocs.find((a) => a.ID !== before!.ID)!;
    expect(old).toMatchObject({ DesiredStatus: 'stop', DesiredDescription: 'alloc is being updated due to job update', NextAllocation: replacement.ID, ClientStatus: 'running' });
    expect(replacement).toMatchObject({ DesiredStatus: 'run', ClientStatus: 'pending', PreviousAllocation: before!.ID });
    const deployments = plan.Events!.filter((e) => e.Topic === 'Deployment').map((e) => e.Payload.Deployment!);
    expect(deployments.find((d) => d.ID === oldDeployment.ID)).toMatchObject({ Status: 'cancelled', StatusDescription: 'Cancelled due to newer version of job' });
    expect(deployments.find((d) => d.ID !== oldDeployment.ID)).toMatchObject({ Status: 'running', JobVersion: 1 });
    expect(replacement.DeploymentID).toBe(deployments.find((d) => d.ID !== oldDeployment.ID)!.ID);
    // Killed before it was healthy: the client reports it unhealthy, which the old deployment counts.
    const killed = stream.events(id).filter((e) => e.Topic === 'Allocation' && allocOf(e).ID === before!.ID && allocOf(e).ClientStatus === 'complete')[0]!;
    expect(allocOf(killed).DeploymentStatus).toMatchObject({ Healthy: false });
    const counted = stream.frames(id).find((f) => f.Index === killed.Index)!.Events!.find((e) => e.Topic === 'Deployment');
    expect(counted?.Payload.Deployment).toMatchObject({ ID: oldDeployment.ID, TaskGroups: { g: { UnhealthyAllocs: 1 } } });
    expect(describeFrames([plan])).toContain('PlanResult');
    stream.close();
  });
});
