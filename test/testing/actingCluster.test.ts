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
  const env = useFake({ acting: { scheduleDelayMs: 50, receiveDelayMs: 100, startDelayMs: 400, stopDelayMs: 100, gcAfterMs: 5_000 } });
  let nomad: NomadClient;
  beforeEach(() => {
    nomad = new NomadClient({ address: env.fake.address }, { clock: env.clock, gzip: false });
  });
  afterEach(() => nomad.close());

  const allocsOf = (jobId: string): Allocation[] =>
    env.fake.cluster.listAllocations({ jobId }).map((stub) => env.fake.cluster.allocation(String(stub.ID))!);

  it('places a registered job and runs it: Received, Task Setup, Started on the clock, its directories made', async () => {
    const written = await nomad.registerJob(runnerJob('7-a'));
    expect(env.fake.cluster.evaluation(written.EvalID)?.Status).toBe('pending');
    env.clock.advance(49);
    expect(allocsOf('7-a')).toHaveLength(0);
    env.clock.advance(1);
    const [placed] = allocsOf('7-a');
    expect(placed).toMatchObject({ ClientStatus: 'pending', DesiredStatus: 'run', Name: '7-a.default-group[0]', TaskGroup: 'default-group' });
    expect(env.fake.cluster.evaluation(written.EvalID)?.Status).toBe('complete');
    env.clock.advance(100);
    expect(eventTypes(allocsOf('7-a')[0])).toEqual(['Received', 'Task Setup']);
    const root = (env.fake as unknown as { allocRoot: string }).allocRoot;
    expect(existsSync(join(root, placed!.ID, 'default-task', 'local'))).toBe(true);
    env.clock.advance(400);
    const running = allocsOf('7-a')[0];
    expect(running?.ClientStatus).toBe('running');
    expect(eventTypes(running)).toEqual(['Received', 'Task Setup', 'Started']);
    expect(Date.parse(running!.TaskStates!['default-task']!.StartedAt!)).toBe(env.clock.now());
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

  it('deregistering stops the allocations (Killing, Killed, client complete); a purged job is collected later', async () => {
    await nomad.registerJob(runnerJob('7-d'));
    env.clock.advance(1_000);
    const [alloc] = allocsOf('7-d');
    const removed = await nomad.deregisterJob('7-d', { purge: true });
    expect(env.fake.cluster.evaluation(removed.EvalID)?.Status).toBe('complete');
    env.clock.advance(100);
    const stopped = env.fake.cluster.allocation(alloc!.ID);
    expect(stopped).toMatchObject({ DesiredStatus: 'stop', ClientStatus: 'complete' });
    expect(eventTypes(stopped).slice(-3)).toEqual(['Killing', 'Terminated', 'Killed']);
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

  it('an injected allocation failure fails the task as it starts: failed, Not Restarting', async () => {
    env.fake.acting!.failAllocations({ jobId: '7-h', exitCode: 2 });
    await nomad.registerJob(runnerJob('7-h'));
    env.clock.advance(1_000);
    const [alloc] = allocsOf('7-h');
    expect(alloc?.ClientStatus).toBe('failed');
    expect(eventTypes(alloc).slice(-2)).toEqual(['Terminated', 'Not Restarting']);
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
