/**
 * FakeNomad acting as a cluster: registrations are scheduled and placed, allocations start and
 * stop on the clock with the task events Nomad 1.1.2 writes, job updates replace or update
 * allocations in place as Nomad decides, scale and failures behave, purged jobs are collected.
 * Everything through the HTTP API, as a client sees it.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { NomadClient } from '../../src/nomad/client.js';
import type { Allocation, Job } from '../../src/nomad/types.js';
import { tasksUpdated } from '../../src/testing/nomad/updates.js';
import { useFake } from './helpers.js';

/** A runner-shaped batch job: the main group runs, the count-0 `config` group carries meta. */
function runnerJob(id: string, meta: Record<string, string> = { used: 'false' }, groupMeta?: Record<string, string>): Job {
  return {
    ID: id, Name: id, Type: 'batch', Datacenters: ['dc1'],
    TaskGroups: [
      {
        Name: 'default-group', Count: 1, ...(groupMeta ? { Meta: groupMeta } : {}),
        Tasks: [{ Name: 'default-task', Driver: 'raw_exec', Config: { command: 'sleep', args: ['infinity'] }, Resources: { CPU: 20, MemoryMB: 16 } }],
      },
      { Name: 'config', Count: 0, Tasks: [{ Name: 'config', Driver: 'raw_exec', Config: { command: 'true' } }], Meta: meta },
    ],
  };
}

const eventTypes = (alloc: Allocation | undefined): string[] => (alloc?.TaskStates?.['default-task']?.Events ?? []).map((e) => e.Type);

describe('FakeNomad acting as a cluster', () => {
  const env = useFake({ acting: { gcAfterMs: 5_000 } });
  let nomad: NomadClient;
  beforeEach(() => {
    nomad = new NomadClient({ address: env.fake.address }, { clock: env.clock, gzip: false });
  });
  afterEach(() => nomad.close());

  const allocsOf = (jobId: string): Allocation[] =>
    env.fake.cluster.listAllocations({ jobId }).map((stub) => env.fake.cluster.allocation(String(stub.ID))!);

  it('plans a registration 6 ms after it, and the client reports in 200 ms batches applied 50 ms later: received, then running', async () => {
    const start = env.clock.now();
    const written = await nomad.registerJob(runnerJob('7-a'));
    expect(env.fake.cluster.evaluation(written.EvalID)?.Status).toBe('pending');
    env.clock.advance(5);
    expect(allocsOf('7-a')).toHaveLength(0);
    env.clock.advance(1);
    const [placed] = allocsOf('7-a');
    expect(placed).toMatchObject({ ClientStatus: 'pending', DesiredStatus: 'run', Name: '7-a.default-group[0]', TaskGroup: 'default-group' });
    expect(env.fake.cluster.evaluation(written.EvalID)?.Status).toBe('complete');
    // Received 5 ms after the placement: its directories made, the servers not told yet.
    env.clock.advance(5);
    const root = (env.fake as unknown as { allocRoot: string }).allocRoot;
    expect(existsSync(join(root, placed!.ID, 'default-task', 'local'))).toBe(true);
    expect(eventTypes(allocsOf('7-a')[0])).toEqual([]);
    // The sync ticks every 200 ms from the client's start; the server applies the report 50 ms later.
    env.clock.advanceTo(start + 249);
    expect(eventTypes(allocsOf('7-a')[0])).toEqual([]);
    env.clock.advanceTo(start + 250);
    const reported = allocsOf('7-a')[0]!;
    expect(eventTypes(reported)).toEqual(['Received', 'Task Setup']);
    expect(Number(reported.ModifyTime) / 1e6).toBe(start + 200);
    expect(Number(reported.TaskStates!['default-task']!.Events![0]!.Time) / 1e6).toBe(start + 11);
    // Started 250 ms after it was received; the next tick is 200 ms after the last report returned.
    env.clock.advanceTo(start + 499);
    expect(allocsOf('7-a')[0]?.ClientStatus).toBe('pending');
    env.clock.advanceTo(start + 500);
    const running = allocsOf('7-a')[0];
    expect(running?.ClientStatus).toBe('running');
    expect(eventTypes(running)).toEqual(['Received', 'Task Setup', 'Started']);
    expect(Date.parse(running!.TaskStates!['default-task']!.StartedAt!)).toBe(start + 261);
  });

  it('allocations placed together are reported together, one index for all; a task started within the period is reported running at once', async () => {
    const start = env.clock.now();
    env.clock.advance(150);
    await nomad.registerJob({ ...runnerJob('7-j'), TaskGroups: [{ ...runnerJob('7-j').TaskGroups![0]!, Count: 3 }, runnerJob('7-j').TaskGroups![1]!] });
    const reports: number[] = [];
    const stop = env.fake.broker.listen((batch) => {
      if (batch.Events.some((e) => e.Type === 'AllocationUpdated')) reports.push(batch.Events.filter((e) => e.Type === 'AllocationUpdated').length);
    });
    env.clock.advanceTo(start + 2_000);
    stop();
    // Placed at 156, received at 161: reported at the 200 ms tick (applied at 250), started at 411, reported at 450 + 200.
    expect(reports).toEqual([3, 3]);
    expect(allocsOf('7-j').filter((a) => a.TaskGroup === 'default-group').map((a) => a.ClientStatus)).toEqual(['running', 'running', 'running']);
  });

  it('a change of the count-0 config group only updates the allocation in place: same allocation, new job version', async () => {
    const first = await nomad.registerJob(runnerJob('7-b'));
    env.clock.advance(1_000);
    const [before] = allocsOf('7-b');
    const job = (await nomad.getJob('7-b')).body;
    const updated = { ...job, TaskGroups: job.TaskGroups!.map((g) => (g.Name === 'config' ? { ...g, Meta: { used: 'true', timeout: '30' } } : g)) };
    await nomad.registerJob(updated, { enforceIndex: first.JobModifyIndex });
    env.clock.advance(1_000);
    const after = allocsOf('7-b');
    expect(after.map((a) => a.ID)).toEqual([before!.ID]);
    expect(after[0]?.ClientStatus).toBe('running');
    expect(after[0]?.Job?.Version).toBe(1);
    expect(env.fake.cluster.listAllocations({ jobId: '7-b' })[0]?.JobVersion).toBe(1);
    expect(Number(after[0]?.AllocModifyIndex)).toBeGreaterThan(Number(before?.AllocModifyIndex));
  });

  it("a change of the runner group's own meta replaces its allocation (Nomad hands group meta to tasks)", async () => {
    await nomad.registerJob(runnerJob('7-c'));
    env.clock.advance(1_000);
    const [before] = allocsOf('7-c');
    const job = (await nomad.getJob('7-c')).body;
    await nomad.registerJob({ ...job, TaskGroups: job.TaskGroups!.map((g) => (g.Name === 'default-group' ? { ...g, Meta: { x: '1' } } : g)) });
    env.clock.advance(1_000);
    const all = allocsOf('7-c');
    expect(all).toHaveLength(2);
    const old = all.find((a) => a.ID === before!.ID);
    const replacement = all.find((a) => a.ID !== before!.ID);
    expect(old).toMatchObject({ DesiredStatus: 'stop', ClientStatus: 'complete' });
    expect(eventTypes(old).slice(-3)).toEqual(['Killing', 'Terminated', 'Killed']);
    expect(replacement).toMatchObject({ DesiredStatus: 'run', ClientStatus: 'running' });
  });

  it('deregistering stops the allocations (Killing reported, then Terminated, Killed, client complete); a purged job is collected later', async () => {
    await nomad.registerJob(runnerJob('7-d'));
    env.clock.advance(1_000);
    const [alloc] = allocsOf('7-d');
    const removed = await nomad.deregisterJob('7-d', { purge: true });
    expect(env.fake.cluster.evaluation(removed.EvalID)?.Status).toBe('complete');
    const reports: string[][] = [];
    const stop = env.fake.broker.listen((batch) => {
      for (const e of batch.Events) if (e.Type === 'AllocationUpdated') reports.push(eventTypes(e.Payload.Allocation as Allocation).slice(3));
    });
    env.clock.advance(1_000);
    stop();
    expect(reports).toEqual([['Killing'], ['Killing', 'Terminated', 'Killed']]);
    const stopped = env.fake.cluster.allocation(alloc!.ID);
    expect(stopped).toMatchObject({ DesiredStatus: 'stop', ClientStatus: 'complete' });
    env.clock.advance(5_000);
    expect(env.fake.cluster.allocation(alloc!.ID)).toBeUndefined();
    expect(env.fake.cluster.evaluation(removed.EvalID)).toBeUndefined();
  });

  it('scale: PUT /v1/job/:id/scale changes the count in a new version with a job-scaling evaluation', async () => {
    await nomad.registerJob(runnerJob('7-e'));
    env.clock.advance(1_000);
    const up = await nomad.scaleJob('7-e', 'default-group', 3, { message: 'more' });
    expect(env.fake.cluster.evaluation(up.EvalID)?.TriggeredBy).toBe('job-scaling');
    env.clock.advance(1_000);
    expect(allocsOf('7-e').filter((a) => a.ClientStatus === 'running')).toHaveLength(3);
    await nomad.scaleJob('7-e', 'default-group', 1);
    env.clock.advance(1_000);
    const live = allocsOf('7-e').filter((a) => a.ClientStatus === 'running');
    expect(live.map((a) => a.Name)).toEqual(['7-e.default-group[0]']);
    await expect(nomad.scaleJob('7-e', 'nope', 1)).rejects.toThrow('task group "nope" specified for scaling does not exist in job');
    await expect(nomad.scaleJob('7-e', 'default-group', -1)).rejects.toThrow("scaling action count can't be negative");
    await expect(nomad.scaleJob('missing', 'default-group', 1)).rejects.toThrow('job "missing" not found');
  });

  it('an injected placement failure: FailedTGAllocs and a blocked evaluation, nothing placed', async () => {
    env.fake.acting!.failPlacements({ jobId: /^7-f/, dimension: 'memory' });
    const written = await nomad.registerJob(runnerJob('7-f'));
    env.clock.advance(1_000);
    const evaluation = env.fake.cluster.evaluation(written.EvalID)!;
    expect(evaluation.Status).toBe('complete');
    expect(Object.keys(evaluation.FailedTGAllocs ?? {})).toEqual(['default-group']);
    expect(env.fake.cluster.evaluation(evaluation.BlockedEval!)?.Status).toBe('blocked');
    expect(allocsOf('7-f')).toHaveLength(0);
    // Used up: the next registration is placed.
    await nomad.registerJob(runnerJob('7-g'));
    env.clock.advance(1_000);
    expect(allocsOf('7-g')).toHaveLength(1);
  });

  it('an injected allocation failure: restarted as the restart policy allows, then failed, then rescheduled as the reschedule policy allows', async () => {
    env.fake.acting!.failAllocations({ jobId: '7-h', exitCode: 2 });
    await nomad.registerJob(runnerJob('7-h'));
    env.clock.advance(1_000);
    const [alloc] = allocsOf('7-h');
    // A batch job's default restart policy: 3 attempts in 24 h, 15 s apart (and up to 25% more).
    expect(alloc?.ClientStatus).toBe('pending');
    expect(eventTypes(alloc).slice(2)).toEqual(['Started', 'Terminated', 'Restarting']);
    expect(alloc!.TaskStates!['default-task']!.Events!.at(-1)!.DisplayMessage).toMatch(/^Task restarting in 1[5-8](\.\d+)?s$/);
    env.clock.advance(80_000);
    const failed = env.fake.cluster.allocation(alloc!.ID)!;
    expect(failed.ClientStatus).toBe('failed');
    expect(failed.TaskStates!['default-task']!.Restarts).toBe(3);
    expect(failed.TaskStates!['default-task']!.Events!.at(-1)).toMatchObject({ Type: 'Not Restarting', DisplayMessage: 'Exceeded allowed attempts 3 in interval 24h0m0s and mode is "fail"' });
    // Node.UpdateAlloc asked for its reschedule; a batch job's policy waits 5 s: a follow-up evaluation.
    const evaluations = env.fake.cluster.listEvaluations({ jobId: '7-h' });
    const failure = evaluations.find((e) => e.TriggeredBy === 'alloc-failure' && e.WaitUntil === undefined)!;
    const followup = evaluations.find((e) => e.WaitUntil !== undefined)!;
    expect(failure.Status).toBe('complete');
    expect(followup).toMatchObject({ TriggeredBy: 'alloc-failure', PreviousEval: failure.ID, StatusDescription: 'created for delayed rescheduling' });
    expect(failed.FollowupEvalID).toBe(followup.ID);
    const finished = Date.parse(failed.TaskStates!['default-task']!.FinishedAt!);
    expect(Date.parse(String(followup.WaitUntil))).toBe(finished + 5_000);
    env.clock.advance(10_000);
    const all = allocsOf('7-h');
    const replacement = all.find((a) => a.ID !== alloc!.ID)!;
    expect(env.fake.cluster.allocation(alloc!.ID)).toMatchObject({ DesiredStatus: 'stop', DesiredDescription: 'alloc was rescheduled because it failed', NextAllocation: replacement.ID });
    expect(replacement).toMatchObject({ ClientStatus: 'running', PreviousAllocation: alloc!.ID, EvalID: followup.ID });
    expect(replacement.RescheduleTracker?.Events).toEqual([expect.objectContaining({ PrevAllocID: alloc!.ID, Delay: 5e9 })]);
  });

  it('a lost allocation is replaced by one that names it as its previous allocation', async () => {
    await nomad.registerJob(runnerJob('7-i'));
    env.clock.advance(1_000);
    const [alloc] = allocsOf('7-i');
    env.fake.acting!.lose(alloc!.ID);
    env.clock.advance(1_000);
    const all = allocsOf('7-i');
    expect(all.find((a) => a.ID === alloc!.ID)).toMatchObject({ ClientStatus: 'lost', DesiredStatus: 'stop' });
    expect(all.find((a) => a.ID !== alloc!.ID)).toMatchObject({ ClientStatus: 'running', PreviousAllocation: alloc!.ID });
  });
});

describe('tasksUpdated (scheduler/util.go)', () => {
  const job = runnerJob('x') as unknown as Record<string, unknown>;
  const withGroup = (name: string, change: Record<string, unknown>): Record<string, unknown> => ({
    ...job,
    TaskGroups: (job.TaskGroups as Record<string, unknown>[]).map((g) => (g.Name === name ? { ...g, ...change } : g)),
  });

  it('the config group changes nothing of the runner group; its own meta, resources or config do', () => {
    expect(tasksUpdated(job, withGroup('config', { Meta: { used: 'true' } }), 'default-group')).toBe(false);
    expect(tasksUpdated(job, withGroup('default-group', { Count: 5 }), 'default-group')).toBe(false);
    expect(tasksUpdated(job, withGroup('default-group', { Meta: { a: 'b' } }), 'default-group')).toBe(true);
    expect(tasksUpdated(job, { ...job, Meta: { a: 'b' } }, 'default-group')).toBe(true);
    const task = (job.TaskGroups as { Tasks: Record<string, unknown>[] }[])[0]!.Tasks[0]!;
    expect(tasksUpdated(job, withGroup('default-group', { Tasks: [{ ...task, Resources: { CPU: 21, MemoryMB: 16 } }] }), 'default-group')).toBe(true);
    expect(tasksUpdated(job, withGroup('default-group', { Tasks: [{ ...task, Config: { command: 'true' } }] }), 'default-group')).toBe(true);
  });
});
