import { settle } from '../../src/clock/index.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { call, serviceJob, useFake } from './helpers.js';
import { openStream } from './streamClient.js';

describe('FakeNomad event stream', () => {
  const env = useFake();

  it('sends {} at once and every 30 s on its clock', async () => {
    const stream = await openStream(env.fake, '');
    await settle(5);
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toBe('application/json');
    expect(stream.lines).toEqual(['{}']);
    env.clock.advance(29_999);
    await settle(5);
    expect(stream.lines).toEqual(['{}']);
    env.clock.advance(1);
    await settle(5);
    expect(stream.lines).toEqual(['{}', '{}']);
    stream.close();
  });

  it('publishes a registration and a placement as Nomad 1.1.2 does', async () => {
    const stream = await openStream(env.fake, '?topic=Job&topic=Evaluation&topic=Allocation&topic=Deployment');
    await settle(5);
    const { job } = env.fake.cluster.registerJob(serviceJob('web'));
    const [alloc] = env.fake.cluster.placeAllocations('web');
    await settle(10);
    const batches = stream.dataLines();
    // The registration is two lines at one index: the Job, then its evaluation.
    expect(batches[0]!.Index).toBe(job.JobModifyIndex);
    expect(batches[0]!.Events.map((e) => [e.Topic, e.Type])).toEqual([['Job', 'JobRegistered']]);
    expect(batches[1]!.Index).toBe(job.JobModifyIndex);
    expect(batches[1]!.Events.map((e) => [e.Topic, e.Type])).toEqual([['Evaluation', 'JobRegistered']]);
    const plan = batches[2]!;
    expect(plan.Events.every((e) => e.Type === 'PlanResult')).toBe(true);
    const allocEvent = plan.Events.find((e) => e.Key === alloc!.ID)!;
    expect(allocEvent.FilterKeys).toEqual(['web', alloc!.DeploymentID]);
    expect((allocEvent as unknown as { Payload: { Allocation: Record<string, unknown> } }).Payload.Allocation.Job).toBeUndefined();
    expect(plan.Events.find((e) => e.Topic === 'Deployment')!.FilterKeys).toEqual(['web']);
    expect(batches[3]!.Events.map((e) => [e.Topic, e.Type])).toEqual([['Evaluation', 'EvaluationUpdated']]);
    stream.close();
  });

  it('filters by topic key and namespace', async () => {
    env.fake.cluster.registerJob(serviceJob('web'));
    env.fake.cluster.registerJob(serviceJob('api'));
    env.fake.cluster.registerJob(serviceJob('other', { Namespace: 'team' }));
    const stream = await openStream(env.fake, '?index=1&topic=Job:api');
    const others = await openStream(env.fake, '?index=1&topic=Job&namespace=team');
    await settle(10);
    expect(stream.dataLines().flatMap((b) => b.Events.map((e) => e.Key))).toEqual(['api']);
    expect(others.dataLines().flatMap((b) => b.Events.map((e) => e.Key))).toEqual(['other']);
    stream.close();
    others.close();
  });

  it('starts at the closest batch: whole buffer for an old index, the newest batch for a future one', async () => {
    const small = await FakeNomad.start({ clock: env.clock, eventBufferSize: 3 });
    for (const id of ['a', 'b', 'c', 'd']) small.cluster.registerJob(serviceJob(id));
    const indexes = small.broker.buffered().map((b) => b.Index);
    const old = await openStream(small, '?index=1');
    const future = await openStream(small, '?index=999999');
    const inside = await openStream(small, `?index=${indexes[indexes.length - 1]! - 1}`);
    await settle(10);
    expect(old.dataLines().map((b) => b.Index)).toEqual(indexes);
    expect(future.dataLines().map((b) => b.Index)).toEqual([indexes[indexes.length - 1]]);
    expect(inside.dataLines().length).toBeGreaterThan(0);
    expect(inside.dataLines()[0]!.Index).toBeLessThan(indexes[indexes.length - 1]!);
    for (const s of [old, future, inside]) s.close();
    await small.close();
  });

  it('answers bad index and topic with Nomad 400 texts', async () => {
    const badIndex = await call(env.fake.address, 'GET', '/v1/event/stream?index=abc');
    expect(badIndex.status).toBe(400);
    expect(badIndex.text).toBe('Unable to parse index: strconv.Atoi: parsing "abc": invalid syntax');
    const badTopic = await call(env.fake.address, 'GET', '/v1/event/stream?topic=Job:a:b');
    expect(badTopic.text).toBe('Invalid topic query: error parsing topics: Invalid key value pair for topic, topic: Job:a:b');
  });
});
