import { join } from 'node:path';
import { request } from 'undici';
import { VirtualClock, settle } from '../../src/clock/index.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { readScenario } from '../../src/testing/recording.js';
import { FIXTURES, call, serviceJob } from './helpers.js';
import { openStream } from './streamClient.js';

/** Five jobs registered: ten batches (job, then evaluation, per registration), one event each. */
function registerFive(fake: FakeNomad): void {
  for (const id of ['a', 'b', 'c', 'd', 'e']) fake.cluster.registerJob(serviceJob(id));
}

describe('FakeNomad fault switches', () => {
  let clock: VirtualClock;
  let fake: FakeNomad;
  beforeEach(async () => {
    clock = new VirtualClock({ start: Date.UTC(2026, 10, 29, 17) });
    fake = await FakeNomad.start({ clock });
    registerFive(fake);
  });
  afterEach(() => fake.close());

  it('cuts the connection after N events, for the next connection only', async () => {
    fake.faults.stream({ cutAfterEvents: 3 });
    const cut = await openStream(fake, '?index=1');
    await settle(20);
    expect(cut.dataLines()).toHaveLength(3);
    expect(cut.failed ?? cut.ended).toBeTruthy();
    const whole = await openStream(fake, '?index=1');
    await settle(20);
    expect(whole.dataLines()).toHaveLength(10);
    whole.close();
  });

  it('sends a truncated line, then cuts', async () => {
    fake.faults.stream({ truncateAfterEvents: 2 });
    const stream = await openStream(fake, '?index=1');
    await settle(20);
    expect(stream.dataLines()).toHaveLength(2);
    expect(stream.rest.length).toBeGreaterThan(0);
    expect(() => JSON.parse(stream.rest)).toThrow();
    expect(stream.failed ?? stream.ended).toBeTruthy();
  });

  it('ends with Nomad\'s raw error text', async () => {
    fake.faults.stream({ errorAfterEvents: 1 });
    const stream = await openStream(fake, '?index=1');
    await settle(20);
    expect(stream.ended).toBe(true);
    expect(stream.dataLines()).toHaveLength(1);
    expect(stream.rest).toBe('subscription closed by server, client should resubscribe');
  });

  it('stalls: no data, no heartbeats, connection open', async () => {
    fake.faults.stream({ stallAfterEvents: 4 });
    const stream = await openStream(fake, '?index=1');
    await settle(20);
    clock.advance(90_000);
    fake.cluster.registerJob(serviceJob('late'));
    await settle(20);
    expect(stream.lines.filter((l) => l === '{}')).toHaveLength(1);
    expect(stream.dataLines()).toHaveLength(4);
    expect(stream.ended).toBe(false);
    stream.close();
  });

  it('repeats and reorders batches deterministically', async () => {
    fake.faults.stream({ repeatEvery: 3 }).stream({ reorderEvery: 4 });
    const repeated = await openStream(fake, '?index=1');
    const reordered = await openStream(fake, '?index=1');
    await settle(20);
    const order = fake.broker.buffered().map((b) => `${b.Index}/${b.Events[0]!.Topic}`);
    const seen = (s: typeof repeated) => s.dataLines().map((b) => `${b.Index}/${b.Events[0]!.Topic}`);
    expect(seen(repeated)).toEqual(order.flatMap((x, i) => ((i + 1) % 3 === 0 ? [x, x] : [x])));
    const swapped = [...order];
    [swapped[3], swapped[4]] = [swapped[4]!, swapped[3]!];
    [swapped[7], swapped[8]] = [swapped[8]!, swapped[7]!];
    expect(seen(reordered)).toEqual(swapped);
    repeated.close();
    reordered.close();
  });

  it('draws random repeats and reorders from its seed', async () => {
    const plan = { repeatProbability: 0.3, reorderProbability: 0.3, seed: 42 };
    fake.faults.stream(plan, 2);
    const first = await openStream(fake, '?index=1');
    const second = await openStream(fake, '?index=1');
    await settle(20);
    const seen = (s: typeof first) => s.dataLines().map((b) => `${b.Index}/${b.Events[0]!.Topic}`);
    expect(seen(first)).toEqual(seen(second));
    expect(seen(first)).not.toEqual(fake.broker.buffered().map((b) => `${b.Index}/${b.Events[0]!.Topic}`));
    expect(new Set(seen(first)).size).toBe(10);
    first.close();
    second.close();
  });

  it('answers requests with 5xx as told, then recovers', async () => {
    fake.faults.failRequests({ status: 503, body: 'No cluster leader', path: '/v1/job/', times: 2 });
    expect(await call(fake.address, 'GET', '/v1/jobs')).toMatchObject({ status: 200 });
    expect(await call(fake.address, 'GET', '/v1/job/a')).toMatchObject({ status: 503, text: 'No cluster leader' });
    expect(await call(fake.address, 'GET', '/v1/job/a')).toMatchObject({ status: 503 });
    expect(await call(fake.address, 'GET', '/v1/job/a')).toMatchObject({ status: 200 });
    fake.faults.failRequests({ path: /stream/ });
    expect((await call(fake.address, 'GET', '/v1/event/stream')).status).toBe(500);
  });

  it('refuses connections, then accepts them again', async () => {
    fake.faults.refuseConnections(1);
    await expect(request(`${fake.address}/v1/jobs`, { reset: true })).rejects.toThrow();
    expect((await call(fake.address, 'GET', '/v1/jobs')).status).toBe(200);
    fake.faults.refuseConnections();
    await expect(request(`${fake.address}/v1/status/leader`, { reset: true })).rejects.toThrow();
    fake.faults.clear();
    expect((await call(fake.address, 'GET', '/v1/status/leader')).text).toBe('"127.0.0.1:4647"');
  });

  it('close() ends every stream and clears its timers', async () => {
    const stream = await openStream(fake, '?index=1');
    await settle(10);
    expect(clock.pending()).toBeGreaterThan(0);
    await fake.close();
    await settle(10);
    expect(stream.failed ?? stream.ended).toBeTruthy();
    expect(clock.pending()).toBe(0);
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
