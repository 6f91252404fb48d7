/**
 * Replaying recordings: lines at their `t` on the clock, the recorded bytes on the stream, and a
 * cluster whose GET endpoints answer what the real agent answered at the same moment.
 */
import { join } from 'node:path';
import { VirtualClock, settle } from '../../src/clock/index.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { parseLossless } from '../../src/testing/losslessJson.js';
import { listScenarios, readScenario } from '../../src/testing/recording.js';
import { FIXTURES, call } from './helpers.js';
import { openStream } from './streamClient.js';

interface Expected {
  captured_at_stream_t: number;
  allocations: { ID: string; ClientStatus: string; DesiredStatus: string; DeploymentStatus: unknown; FollowupEvalID: string | null; TaskStates_extra: Record<string, { State: string; Failed: boolean; Restarts: number }> }[];
  deployments: { ID: string; Status: string; StatusDescription: string; TaskGroups: unknown }[];
  evaluations: { ID: string; Status: string; TriggeredBy: string; BlockedEval: string | null }[];
}

describe.each(listScenarios(join(FIXTURES, 'scenarios')))('replaying %s to the moment expected.json was read', (name) => {
  const scenario = readScenario(join(FIXTURES, 'scenarios', name));
  const expected = scenario.expected as unknown as Expected;
  let fake: FakeNomad;
  beforeAll(async () => {
    fake = await FakeNomad.start({ clock: new VirtualClock({ start: Date.parse(scenario.meta.stream_opened_at) }) });
    fake.replay(scenario.stream.filter((l) => l.t <= expected.captured_at_stream_t), { immediate: true });
  });
  afterAll(() => fake.close());

  const get = async <T>(path: string): Promise<T> => parseLossless((await call(fake.address, 'GET', path)).text) as T;

  it('answers the allocations as Nomad did', async () => {
    const stubs = await get<{ ID: string }[]>(`/v1/job/${scenario.meta.job_id}/allocations`);
    expect(stubs.map((s) => s.ID).sort()).toEqual(expected.allocations.map((a) => a.ID).sort());
    for (const want of expected.allocations) {
      const alloc = await get<Record<string, unknown> & { TaskStates: Record<string, { State: string; Failed: boolean; Restarts: number }> }>(`/v1/allocation/${want.ID}`);
      expect(alloc).toMatchObject({ ClientStatus: want.ClientStatus, DesiredStatus: want.DesiredStatus });
      // expected.json writes null for a field the API left out.
      expect(alloc.DeploymentStatus).toEqual(want.DeploymentStatus ?? undefined);
      expect(alloc.FollowupEvalID).toBe(want.FollowupEvalID ?? undefined);
      for (const [task, state] of Object.entries(want.TaskStates_extra)) {
        expect(alloc.TaskStates[task]).toMatchObject({ State: state.State, Failed: state.Failed, Restarts: state.Restarts });
      }
    }
  });

  it('answers the deployments and evaluations as Nomad did', async () => {
    for (const want of expected.deployments) {
      expect(await get(`/v1/deployment/${want.ID}`)).toMatchObject({ Status: want.Status, StatusDescription: want.StatusDescription, TaskGroups: want.TaskGroups });
    }
    for (const want of expected.evaluations) {
      const evaluation = await get<Record<string, unknown>>(`/v1/evaluation/${want.ID}`);
      expect(evaluation).toMatchObject({ Status: want.Status, TriggeredBy: want.TriggeredBy });
      expect(evaluation.BlockedEval).toBe(want.BlockedEval ?? undefined);
    }
  });
});

describe('FakeNomad replay of a recorded stream', () => {
  const scenario = readScenario(join(FIXTURES, 'scenarios', 'healthy_task_states'));
  let clock: VirtualClock;
  let fake: FakeNomad;
  beforeEach(async () => {
    clock = new VirtualClock({ start: Date.parse(scenario.meta.stream_opened_at) });
    fake = await FakeNomad.start({ clock, initialIndex: scenario.meta.raft_index_before });
  });
  afterEach(() => fake.close());

  it('serves each recorded line at its t, byte for byte, with the GET endpoints in step', async () => {
    const stream = await openStream(fake, `?index=${scenario.meta.raft_index_before + 1}`);
    await settle(10);
    const replay = fake.replay(scenario.stream);
    await settle(10);
    const data = scenario.stream.filter((l) => l.raw !== '{}');
    expect(stream.lines.slice(1)).toEqual(data.filter((l) => l.t <= 0).map((l) => l.raw));
    clock.advance(2217);
    await settle(20);
    expect(stream.lines.filter((l) => l !== '{}')).toEqual(data.filter((l) => l.t <= 2217).map((l) => l.raw));
    const alloc = await call(fake.address, 'GET', '/v1/allocation/13f711ff-770e-8b1e-5994-78e19f6a7a75');
    expect(JSON.parse(alloc.text)).toMatchObject({ ClientStatus: 'running', DeploymentStatus: { Healthy: true }, Job: { ID: 'healthy-task-states' } });
    expect(alloc.headers['x-nomad-index']).toBe('33');
    clock.advance(10_000);
    await replay.done;
    await settle(20);
    expect(stream.lines.filter((l) => l !== '{}')).toEqual(data.map((l) => l.raw));
    // The purge published no Job event; the job is gone all the same.
    expect((await call(fake.address, 'GET', '/v1/job/healthy-task-states')).status).toBe(404);
    stream.close();
  });

  it('applies a transform to every event before it is stored and published', async () => {
    fake.replay(scenario.stream, {
      immediate: true,
      transform: (event) => {
        const alloc = event.Payload.Allocation as Record<string, unknown> | undefined;
        if (alloc) delete alloc.DeploymentStatus;
        return event.Topic === 'Deployment' ? null : event;
      },
    });
    const stream = await openStream(fake, '?index=1');
    await settle(20);
    const events = stream.dataLines().flatMap((b) => b.Events);
    expect(events.some((e) => e.Topic === 'Deployment')).toBe(false);
    expect(events.filter((e) => e.Topic === 'Allocation').every((e) => !('DeploymentStatus' in (e as unknown as { Payload: { Allocation: object } }).Payload.Allocation))).toBe(true);
    expect(fake.cluster.allocation('13f711ff-770e-8b1e-5994-78e19f6a7a75')!.DeploymentStatus).toBeUndefined();
    stream.close();
  });

  it('refuses a line that is not an event batch with a typed error, keeping what it applied', async () => {
    const replay = fake.replay([...scenario.stream.slice(0, 2), { t: 5, raw: '{"Events": [' }]);
    clock.advance(10);
    await expect(replay.done).rejects.toThrow(/recorded line at t=5 is not an event batch/);
    expect(fake.cluster.allocation('7b5f760f-852a-7abb-f6fd-96c36b2a89df')?.ClientStatus).toBe('complete');
  });
});
