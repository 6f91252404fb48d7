import { request } from 'undici';
import { settle } from '../../src/clock/index.js';
import type { FakeNomad } from '../../src/testing/fakeNomad.js';
import { call, serviceJob, useFake } from './helpers.js';
import { openStream } from './streamClient.js';

/** Five jobs registered: ten batches (job, then evaluation, per registration), one event each. */
function registerFive(fake: FakeNomad): void {
  for (const id of ['a', 'b', 'c', 'd', 'e']) fake.cluster.registerJob(serviceJob(id));
}

describe('FakeNomad fault switches', () => {
  const env = useFake();
  beforeEach(() => registerFive(env.fake));

  it('cuts the connection after N events, for the next connection only', async () => {
    env.fake.faults.stream({ cutAfterEvents: 3 });
    const cut = await openStream(env.fake, '?index=1');
    await settle(20);
    expect(cut.dataLines()).toHaveLength(3);
    expect(cut.failed ?? cut.ended).toBeTruthy();
    const whole = await openStream(env.fake, '?index=1');
    await settle(20);
    expect(whole.dataLines()).toHaveLength(10);
    whole.close();
  });

  it('sends a truncated line, then cuts', async () => {
    env.fake.faults.stream({ truncateAfterEvents: 2 });
    const stream = await openStream(env.fake, '?index=1');
    await settle(20);
    expect(stream.dataLines()).toHaveLength(2);
    expect(stream.rest.length).toBeGreaterThan(0);
    expect(() => JSON.parse(stream.rest)).toThrow();
    expect(stream.failed ?? stream.ended).toBeTruthy();
  });

  it('ends with Nomad\'s raw error text', async () => {
    env.fake.faults.stream({ errorAfterEvents: 1 });
    const stream = await openStream(env.fake, '?index=1');
    await settle(20);
    expect(stream.ended).toBe(true);
    expect(stream.dataLines()).toHaveLength(1);
    expect(stream.rest).toBe('subscription closed by server, client should resubscribe');
  });

  it('stalls: no data, no heartbeats, connection open', async () => {
    env.fake.faults.stream({ stallAfterEvents: 4 });
    const stream = await openStream(env.fake, '?index=1');
    await settle(20);
    env.clock.advance(90_000);
    env.fake.cluster.registerJob(serviceJob('late'));
    await settle(20);
    expect(stream.lines.filter((l) => l === '{}')).toHaveLength(1);
    expect(stream.dataLines()).toHaveLength(4);
    expect(stream.ended).toBe(false);
    stream.close();
  });

  it('repeats and reorders batches deterministically', async () => {
    env.fake.faults.stream({ repeatEvery: 3 }).stream({ reorderEvery: 4 });
    const repeated = await openStream(env.fake, '?index=1');
    const reordered = await openStream(env.fake, '?index=1');
    await settle(20);
    const order = env.fake.broker.buffered().map((b) => `${b.Index}/${b.Events[0]!.Topic}`);
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
    env.fake.faults.stream(plan, 2);
    const first = await openStream(env.fake, '?index=1');
    const second = await openStream(env.fake, '?index=1');
    await settle(20);
    const seen = (s: typeof first) => s.dataLines().map((b) => `${b.Index}/${b.Events[0]!.Topic}`);
    expect(seen(first)).toEqual(seen(second));
    expect(seen(first)).not.toEqual(env.fake.broker.buffered().map((b) => `${b.Index}/${b.Events[0]!.Topic}`));
    expect(new Set(seen(first)).size).toBe(10);
    first.close();
    second.close();
  });

  it('answers requests with 5xx as told, then recovers', async () => {
    env.fake.faults.failRequests({ status: 503, body: 'No cluster leader', path: '/v1/job/', times: 2 });
    expect(await call(env.fake.address, 'GET', '/v1/jobs')).toMatchObject({ status: 200 });
    expect(await call(env.fake.address, 'GET', '/v1/job/a')).toMatchObject({ status: 503, text: 'No cluster leader' });
    expect(await call(env.fake.address, 'GET', '/v1/job/a')).toMatchObject({ status: 503 });
    expect(await call(env.fake.address, 'GET', '/v1/job/a')).toMatchObject({ status: 200 });
    env.fake.faults.failRequests({ path: /stream/ });
    expect((await call(env.fake.address, 'GET', '/v1/event/stream')).status).toBe(500);
  });

  it('refuses connections, then accepts them again', async () => {
    env.fake.faults.refuseConnections(1);
    await expect(request(`${env.fake.address}/v1/jobs`, { reset: true })).rejects.toThrow();
    expect((await call(env.fake.address, 'GET', '/v1/jobs')).status).toBe(200);
    env.fake.faults.refuseConnections();
    await expect(request(`${env.fake.address}/v1/status/leader`, { reset: true })).rejects.toThrow();
    env.fake.faults.clear();
    expect((await call(env.fake.address, 'GET', '/v1/status/leader')).text).toBe('"127.0.0.1:4647"');
  });

  it('endStreams() ends every stream cleanly, as a server shutdown does', async () => {
    const stream = await openStream(env.fake, '?index=1');
    await settle(10);
    env.fake.endStreams();
    await settle(10);
    expect(stream.ended).toBe(true);
    expect(stream.dataLines()).toHaveLength(10);
    expect((await call(env.fake.address, 'GET', '/v1/jobs')).status).toBe(200);
  });

  it('close() ends every stream and clears its timers', async () => {
    const stream = await openStream(env.fake, '?index=1');
    await settle(10);
    expect(env.clock.pending()).toBeGreaterThan(0);
    await env.fake.close();
    await settle(10);
    expect(stream.failed ?? stream.ended).toBeTruthy();
    expect(env.clock.pending()).toBe(0);
  });
});
