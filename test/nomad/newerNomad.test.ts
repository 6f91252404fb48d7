/**
 * Nomad 2.x event stream wire (nomad-protocol §2.3, §10): close-delimited, never compressed, and a
 * refused subscription answered 200 then closed before the first byte; older Nomads' refusals as
 * a 403 or a 500 `Permission denied`. FakeNomad plays either version.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { concatMap, firstValueFrom, filter, toArray, take, type Subscription } from 'rxjs';
import { VirtualClock } from '../../src/clock/index.js';
import { NomadClient } from '../../src/nomad/client.js';
import { NomadHttpError, NomadStreamError } from '../../src/nomad/errors.js';
import { EMPTY_CLOSES_SUSPECTED_REFUSAL, nomadEventStream, type EventBatch, type StreamState } from '../../src/nomad/eventStream.js';
import { nomadSource } from '../../src/supervisor/nomadSource.js';
import { eachInput, type SupervisorInput } from '../../src/supervisor/inputs.js';
import { resolveScope } from '../../src/intake/scope.js';
import { FakeNomad, type FakeNomadOptions } from '../../src/testing/fakeNomad.js';
import { serviceJob } from '../testing/helpers.js';
import { until } from './support.js';

const TOPICS = ['Job', 'Evaluation', 'Allocation', 'Deployment'];
const noJitter = { random: () => 0 };

async function setUp(options: FakeNomadOptions, token?: string) {
  const clock = new VirtualClock();
  const fake = await FakeNomad.start({ ...options, clock, exec: false });
  const client = new NomadClient({ address: fake.address, ...(token === undefined ? {} : { token }) }, { clock });
  const close = async () => {
    await client.close();
    await fake.close();
  };
  return { clock, fake, client, close };
}

/** Subscribes to the stream, recording its batches and states. */
function follow(client: NomadClient, clock: VirtualClock, gzip = false) {
  const stream = nomadEventStream(client, { topics: TOPICS, clock, backoff: noJitter, gzip });
  const batches: EventBatch[] = [];
  const states: StreamState[] = [];
  const subscriptions: Subscription[] = [stream.state.subscribe((s) => states.push(s))];
  let error: unknown;
  subscriptions.push(stream.batches.subscribe({ next: (b) => batches.push(b), error: (e: unknown) => (error = e) }));
  return {
    batches,
    states,
    get error() {
      return error;
    },
    stop: () => subscriptions.forEach((s) => s.unsubscribe()),
  };
}

/**
 * A scripted Nomad 2.x: the event stream is the status line and headers (as written after the
 * hijack), then `body` (`{}` and frames; none at all is a refusal) and, for a refusal, the close.
 * It lists no allocations.
 */
async function scriptedNomad(body = '') {
  let streamBody = body;
  const server = createServer((req, res) => {
    if (req.url?.startsWith('/v1/event/stream')) {
      res.useChunkedEncodingByDefault = false;
      res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache', Connection: 'close' });
      if (streamBody === '') res.end();
      else res.write(streamBody);
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json', 'X-Nomad-Index': '1' }).end('[]');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    allow: () => void (streamBody = '{}\n'),
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('Nomad 2.x event stream transport', () => {
  it('is close-delimited with Connection: close and never gzipped, even when asked', async () => {
    const env = await setUp({ version: '2.0' });
    const response = await request(`${env.fake.address}/v1/event/stream`, { headers: { 'accept-encoding': 'gzip' } });
    expect(response.statusCode).toBe(200);
    expect(response.headers.connection).toBe('close');
    expect(response.headers['transfer-encoding']).toBeUndefined();
    expect(response.headers['content-length']).toBeUndefined();
    expect(response.headers['content-encoding']).toBeUndefined();
    response.body.destroy();
    await env.close();
  });

  it.each([false, true])('the client reads it, resumes after the close, and loses nothing (gzip asked: %s)', async (gzip) => {
    const env = await setUp({ version: '2.0' });
    env.fake.cluster.registerJob(serviceJob('web'));
    const run = follow(env.client, env.clock, gzip);
    await until(env.clock, () => run.batches.some((b) => b.events.some((e) => e.Topic === 'Job')), 'job registered');
    // The server ends the stream (restart, leader change): the body ends at the TCP close.
    env.fake.endStreams();
    await until(env.clock, () => run.states.some((s) => s.status === 'backingOff'), 'close seen');
    env.fake.cluster.placeAllocations('web');
    await until(env.clock, () => run.batches.some((b) => b.events.some((e) => e.Topic === 'Allocation')), 'placement after resume');
    const closed = run.states.find((s) => s.status === 'backingOff');
    // A stream that had sent bytes and then closed is an ordinary close, not a refusal.
    expect(closed?.error).toMatchObject({ reason: 'closed' });
    expect(closed?.emptyCloses).toBe(0);
    expect(run.error).toBeUndefined();
    run.stop();
    await env.close();
  });
});

describe('a refused subscription', () => {
  it('Nomad 2.x answers a refused subscription with 200 and an empty close (FakeNomad 2.0)', async () => {
    const env = await setUp({ version: '2.0', token: 'right' });
    const raw = await request(`${env.fake.address}/v1/event/stream`, { headers: { 'x-nomad-token': 'wrong' } });
    expect([raw.statusCode, raw.headers.connection, await raw.body.text()]).toEqual([200, 'close', '']);
    await env.close();
  });

  it('an empty close is retried with back-off (failures keep counting), called a likely permission problem from the 2nd in a row, and forgotten once bytes arrive', async () => {
    const server = await scriptedNomad();
    const clock = new VirtualClock();
    const client = new NomadClient({ address: server.address, token: 'secret-token' }, { clock });
    const run = follow(client, clock);
    await until(clock, () => run.states.filter((s) => s.status === 'backingOff').length >= 3, 'three refusals');
    const refusals = run.states.filter((s) => s.status === 'backingOff');
    expect(refusals.map((s) => s.emptyCloses)).toEqual([1, 2, 3]);
    expect(refusals.map((s) => s.failures)).toEqual([1, 2, 3]);
    for (const state of refusals) expect(state.error).toBeInstanceOf(NomadStreamError);
    expect(refusals[0]?.error).toMatchObject({ reason: 'empty', message: expect.stringMatching(/before sending anything/) as unknown });
    expect(refusals[0]?.error?.message).not.toMatch(/permission/);
    expect(refusals[EMPTY_CLOSES_SUSPECTED_REFUSAL - 1]?.error?.message).toMatch(/likely a permission problem/);
    expect(refusals[2]?.error?.message).toMatch(/3 times in a row/);
    expect(run.error).toBeUndefined();
    expect(run.states.some((s) => s.status === 'failed')).toBe(false);
    for (const state of run.states) expect(state.error?.message ?? '').not.toContain('secret-token');

    server.allow();
    await until(clock, () => run.states.at(-1)?.status === 'streaming' && run.states.at(-1)?.emptyCloses === 0, 'streaming again');
    run.stop();
    await client.close();
    await server.close();
  });

  it('Nomad 2.x: once the token is right, the count of empty closes goes back to 0', async () => {
    const env = await setUp({ version: '2.0', token: 'right' }, 'right');
    env.fake.cluster.registerJob(serviceJob('web'));
    const run = follow(env.client, env.clock);
    await until(env.clock, () => run.batches.length > 0, 'streaming with the right token');
    expect(run.states.every((s) => s.emptyCloses === 0)).toBe(true);
    run.stop();
    await env.close();
  });

  it.each([
    ['1.1.2: 500 Permission denied (no token)', undefined, 500],
    ['403 ACL token not found', 'wrong', 403],
  ] as const)('%s: the stream gives up at once with a permission error', async (_name, token, status) => {
    const env = await setUp({ token: 'right' }, token);
    const run = follow(env.client, env.clock);
    await until(env.clock, () => run.error !== undefined, 'gave up');
    expect(run.error).toBeInstanceOf(NomadHttpError);
    expect(run.error).toMatchObject({ status, isPermissionDenied: true });
    expect(run.states.at(-1)?.status).toBe('failed');
    expect(run.states.some((s) => s.status === 'backingOff')).toBe(false);
    await env.close();
  });

  it('a 500 that is not about the token is still retried', () => {
    expect(new NomadHttpError(500, 'GET', '/v1/event/stream', 'rpc error: No cluster leader').isPermissionDenied).toBe(false);
    expect(new NomadHttpError(500, 'GET', '/v1/event/stream', 'Permission denied').isPermissionDenied).toBe(true);
  });

  it('the supervisor source reports the refusal once per run as a stream-refused problem, the connection state says why each time', async () => {
    const server = await scriptedNomad();
    const clock = new VirtualClock();
    const client = new NomadClient({ address: server.address }, { clock });
    const inputs: SupervisorInput[] = [];
    const subscription = nomadSource(client, resolveScope(), clock).subscribe((emitted) => inputs.push(...eachInput(emitted)));
    const backingOff = () => inputs.filter((i) => i.kind === 'connection' && i.state === 'backingOff');
    await until(clock, () => backingOff().length >= 4, 'four refusals');
    const problems = inputs.filter((i) => i.kind === 'problem');
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ problem: 'stream-refused', message: expect.stringMatching(/likely a permission problem/) as unknown });
    const reasons = backingOff().map((i) => (i.kind === 'connection' ? i.reason : ''));
    expect(reasons.slice(1).every((r) => /likely a permission problem/.test(r ?? ''))).toBe(true);
    subscription.unsubscribe();
    await client.close();
    await server.close();
  });

  it('the supervisor source names the topics when the stream gives up on a refused token', async () => {
    const env = await setUp({ token: 'right' }, 'wrong');
    const problem = await firstValueFrom(
      nomadSource(env.client, resolveScope(), env.clock).pipe(
        concatMap(eachInput),
        filter((i) => i.kind === 'problem'),
        take(1),
        toArray(),
      ),
    );
    expect(problem[0]).toMatchObject({ problem: 'stream-failed', message: expect.stringContaining('the token may not read topics Job, Evaluation') as unknown });
    expect(JSON.stringify(problem)).not.toContain('wrong');
    await env.close();
  });
});

describe('FakeNomad 2.0 authentication', () => {
  it('accepts Authorization: Bearer (Nomad 1.4+); 1.1.2 does not', async () => {
    for (const [version, status] of [['2.0', 200], ['1.1.2', 403]] as const) {
      const env = await setUp({ version, token: 'right' });
      const response = await request(`${env.fake.address}/v1/jobs`, { headers: { authorization: 'Bearer right' } });
      await response.body.text();
      expect([version, response.statusCode]).toEqual([version, status]);
      await env.close();
    }
  });
});

describe('topics and payload keys Nomad 1.1.2 did not have', () => {
  const event = (topic: string, type: string, payload: Record<string, unknown>) =>
    ({ Topic: topic, Type: type, Key: 'k', Namespace: 'default', FilterKeys: null, Index: 7, Payload: payload });
  const allocation = { ID: 'a1', JobID: 'web', TaskGroup: 'app', Namespace: 'default', ClientStatus: 'running', DesiredStatus: 'run', ModifyIndex: 7 };
  const frame = {
    Index: 7,
    Events: [
      event('Service', 'ServiceRegistration', { Service: { ID: 'reg', ServiceName: 'web', JobID: 'web', AllocID: 'a1', Port: 8080 } }),
      event('NodePool', 'NodePoolUpserted', { NodePool: { Name: 'gpu' } }),
      event('Node', 'NodeEligibility', { Node: { ID: 'n1' } }),
      event('Variable', 'VariableUpdated', { Metadata: { Path: 'nomad/jobs/web' }, Deleted: false }),
      event('HostVolume', 'HostVolumeRegistered', { Volume: { ID: 'v' } }),
      // v2.0.3+: max_run_duration's keys beside the Allocation.
      event('Allocation', 'AllocationUpdated', { Allocation: allocation, Timeout: true, TimeoutReason: 'allocation exceeded max_run_duration' }),
    ],
  };

  it('are ignored, not errors: the allocation of the same frame reaches the supervisor, nothing is reported', async () => {
    const server = await scriptedNomad(`{}\n${JSON.stringify(frame)}\n`);
    const clock = new VirtualClock();
    const client = new NomadClient({ address: server.address }, { clock });
    const inputs: SupervisorInput[] = [];
    const subscription = nomadSource(client, resolveScope(), clock).subscribe((emitted) => inputs.push(...eachInput(emitted)));
    await until(clock, () => inputs.some((i) => i.kind === 'allocation'), 'allocation input');
    expect(inputs.filter((i) => i.kind === 'problem')).toEqual([]);
    expect(inputs.filter((i) => i.kind === 'allocation').map((i) => (i.kind === 'allocation' ? [i.allocation.ID, i.index] : []))).toEqual([['a1', 7]]);
    subscription.unsubscribe();
    await client.close();
    await server.close();
  });
});
