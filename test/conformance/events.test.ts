/**
 * The event stream (GET /v1/event/stream, nomad/stream): its headers and heartbeats, one frame per
 * raft write item in index order, the events a write publishes, topic and key filters, and where a
 * subscription with `index=` starts.
 */
import { ofJob, type Frame, type StreamEvent } from './support/eventTap.js';
import { register, rawExecJob, streamJobs } from './support/scenario.js';
import { useTarget } from './support/target.js';

const shape = (frame: Frame): string[] => (frame.Events ?? []).map((e) => `${e.Topic}/${e.Type}`).sort();

describe('the event stream', () => {
  const target = useTarget();

  test('a subscription: 200, the stream headers, `{}` at once', async () => {
    const tap = await target.stream('topic=Job:conformance-nothing');
    expect(tap.status).toBe(200);
    expect(tap.headers).toMatchObject({ 'content-type': 'application/json', 'cache-control': 'no-cache', vary: 'Accept-Encoding', 'transfer-encoding': 'chunked' });
    expect(tap.frames[0]?.line).toBe('{}');
    tap.close();
  });

  test('a heartbeat `{}` every 30 s, nothing else on a quiet filter', async () => {
    const tap = await target.stream('topic=Job:conformance-nothing-at-all');
    const opened = tap.frames[0]!.at;
    await tap.until('two more heartbeats', (frames) => frames.length >= 3, 70_000);
    const gaps = tap.frames.slice(1, 3).map((frame, i) => frame.at - tap.frames[i]!.at);
    // Arrival times: a loaded machine delays one frame's reading by some hundreds of ms.
    for (const gap of gaps) {
      expect(gap).toBeGreaterThanOrEqual(29_000);
      expect(gap).toBeLessThan(31_000);
    }
    expect(tap.frames.every((frame) => frame.line === '{}')).toBe(true);
    expect(tap.frames[2]!.at - opened).toBeGreaterThanOrEqual(59_000);
    tap.close();
  }, 90_000);

  test('a registration: the job and its evaluation as two frames of one index, the plan at a newer one, then the evaluation complete', async () => {
    const id = target.jobId('register');
    const stream = await streamJobs(target, [id]);
    const written = await register(target, rawExecJob(id, { count: 2 }));
    const frames = await stream.until('the evaluation complete', (all) => all.some((f) => f.Events!.some((e) => e.Type === 'EvaluationUpdated' && e.Payload.Evaluation?.Status === 'complete')));
    const [job, evaluation, plan, complete] = frames;
    expect(frames.map(shape)).toEqual([
      ['Job/JobRegistered'],
      ['Evaluation/JobRegistered'],
      ['Allocation/PlanResult', 'Allocation/PlanResult', 'Deployment/PlanResult', 'Evaluation/PlanResult', 'Job/PlanResult'],
      ['Evaluation/EvaluationUpdated'],
    ]);
    expect([job!.Index, evaluation!.Index]).toEqual([written.Index, written.Index]);
    expect(plan!.Index).toBeGreaterThan(written.Index);
    expect(complete!.Index).toBeGreaterThan(plan!.Index!);
    for (const frame of frames) for (const event of frame.Events!) expect(event.Index).toBe(frame.Index);
    // What each event carries.
    const byTopic = (frame: Frame, topic: string): StreamEvent[] => frame.Events!.filter((e) => e.Topic === topic);
    expect(job!.Events![0]).toMatchObject({ Key: id, Namespace: 'default', FilterKeys: null });
    expect(job!.Events![0]!.Payload.Job).toMatchObject({ ID: id, Version: 0, Status: 'pending', Stop: false, JobModifyIndex: written.Index });
    expect(evaluation!.Events![0]).toMatchObject({ Key: written.EvalID, FilterKeys: [id, ''] });
    expect(evaluation!.Events![0]!.Payload.Evaluation).toMatchObject({ Status: 'pending', TriggeredBy: 'job-register', JobModifyIndex: written.Index });
    const [deployment] = byTopic(plan!, 'Deployment');
    const deploymentId = deployment!.Key;
    expect(deployment).toMatchObject({ FilterKeys: [id] });
    expect(deployment!.Payload.Deployment).toMatchObject({ Status: 'running', JobVersion: 0, StatusDescription: 'Deployment is running' });
    for (const alloc of byTopic(plan!, 'Allocation')) {
      expect(alloc.FilterKeys).toEqual([id, deploymentId]);
      expect(alloc.Payload.Allocation).toMatchObject({ ClientStatus: 'pending', DesiredStatus: 'run', DeploymentID: deploymentId, EvalID: written.EvalID, JobID: id });
      expect(Object.keys(alloc.Payload.Allocation!)).not.toContain('Job');
      expect(Object.keys(alloc.Payload.Allocation!)).not.toContain('TaskStates');
    }
    // The plan carries the evaluation as the scheduler took it; its completion names the deployment.
    const planned = byTopic(plan!, 'Evaluation')[0]!;
    expect(planned).toMatchObject({ FilterKeys: [id, ''] });
    expect(planned.Payload.Evaluation).toMatchObject({ Status: 'pending', ModifyIndex: plan!.Index });
    expect(Object.keys(planned.Payload.Evaluation!)).not.toContain('DeploymentID');
    expect(byTopic(plan!, 'Job')[0]!.Payload.Job).toMatchObject({ Status: 'running', Version: 0 });
    expect(complete!.Events![0]).toMatchObject({ FilterKeys: [id, deploymentId] });
    expect(complete!.Events![0]!.Payload.Evaluation).toMatchObject({
      ID: written.EvalID, Status: 'complete', QueuedAllocations: { g: 0 }, SnapshotIndex: written.Index, DeploymentID: deploymentId, ModifyIndex: complete!.Index,
    });
    stream.close();
  });

  test('frames come in raft index order, each holding one write\'s events', async () => {
    const ids = [target.jobId('order-a'), target.jobId('order-b')];
    const stream = await streamJobs(target, ids);
    await Promise.all(ids.map((id) => register(target, rawExecJob(id, { count: 2 }))));
    await stream.until('both running', (frames) => ids.every((id) => frames.flatMap((f) => f.Events!).filter((e) => ofJob(id)(e) && e.Payload.Allocation?.ClientStatus === 'running').length >= 2), 20_000);
    const frames = stream.frames();
    for (let i = 1; i < frames.length; i++) expect(frames[i]!.Index).toBeGreaterThanOrEqual(frames[i - 1]!.Index!);
    // Only a write's several items share an index (a registration's job and evaluation).
    const repeated = frames.filter((frame, i) => i > 0 && frame.Index === frames[i - 1]!.Index);
    for (const frame of repeated) expect(shape(frame)).toEqual(['Evaluation/JobRegistered']);
    stream.close();
  });

  test('index= starts at the batch with that index, inclusive, and replays what came since', async () => {
    const id = target.jobId('resume');
    const stream = await streamJobs(target, [id]);
    const written = await register(target, rawExecJob(id, { type: 'batch', count: 1 }));
    const live = await stream.until('running', (frames) => frames.some((f) => f.Events!.some((e) => e.Payload.Allocation?.ClientStatus === 'running')), 20_000);
    const topics = ['Job', 'Evaluation', 'Allocation'].map((topic) => `topic=${topic}:${id}`).join('&');
    for (const from of [written.Index, live[2]!.Index!]) {
      const resumed = await target.stream(`index=${from}&${topics}`);
      await resumed.until('the replay', (frames) => frames.filter((f) => f.Events).length >= live.filter((f) => f.Index! >= from).length, 10_000);
      expect(resumed.data().map((f) => [f.Index, shape(f)])).toEqual(live.filter((f) => f.Index! >= from).map((f) => [f.Index, shape(f)]));
      resumed.close();
    }
    stream.close();
  });

  test('topic filters: Job by key; Evaluation, Allocation, Deployment by job ID; Allocation by deployment ID; an unknown topic never', async () => {
    const id = target.jobId('filters');
    const fence = target.jobId('filters-fence');
    const only = (query: string) => target.stream(`index=9007199254740991&${query}&topic=Evaluation:${fence}`);
    const taps = {
      job: await only(`topic=Job:${id}`),
      evaluation: await only(`topic=Evaluation:${id}`),
      allocation: await only(`topic=Allocation:${id}`),
      deployment: await only(`topic=Deployment:${id}`),
      unknown: await only(`topic=NoSuchTopic:${id}&topic=NoSuchTopic`),
      otherJob: await only(`topic=Job:${id}-other&topic=Allocation:${id}-other`),
    };
    await register(target, rawExecJob(id, { count: 1 }));
    await target.waitFor<{ ClientStatus: string }[]>('running', `/v1/job/${id}/allocations`, (list) => list.some((a) => a.ClientStatus === 'running'));
    const deployment = (await target.request('GET', `/v1/job/${id}/deployment`)).json<{ ID: string }>();
    const byDeployment = await target.stream(`index=1&topic=Allocation:${deployment.ID}&topic=Evaluation:${fence}`);
    const fenced = await target.request('DELETE', `/v1/job/${fence}`);
    const fenceIndex = fenced.json<{ Index: number }>().Index;
    const topicsOf = async (tap: (typeof taps)['job']): Promise<string[]> => {
      await tap.until('the fence', (frames) => frames.some((f) => f.Index !== undefined && f.Index >= fenceIndex));
      return [...new Set(tap.data((e) => ofJob(id)(e)).flatMap((f) => f.Events!.map((e) => e.Topic)))].sort();
    };
    expect(await topicsOf(taps.job)).toEqual(['Job']);
    expect(await topicsOf(taps.evaluation)).toEqual(['Evaluation']);
    expect(await topicsOf(taps.allocation)).toEqual(['Allocation']);
    expect(await topicsOf(taps.deployment)).toEqual(['Deployment']);
    expect(await topicsOf(taps.unknown)).toEqual([]);
    expect(await topicsOf(taps.otherJob)).toEqual([]);
    expect(await topicsOf(byDeployment)).toEqual(['Allocation']);
    for (const tap of [...Object.values(taps), byDeployment]) tap.close();
  });
});
