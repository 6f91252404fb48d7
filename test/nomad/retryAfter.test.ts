/**
 * Retry-After: a 429 or 503 that says when to come back is not asked again sooner, on the event
 * stream's reconnect and on retried queries (Nomad's blocking queries, Consul's), in both of the
 * header's forms, on the injected clock, and never longer than the back-off's maximum.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { VirtualClock } from '../../src/clock/index.js';
import { ConsulClient } from '../../src/consul/client.js';
import { ConsulHttpError } from '../../src/consul/errors.js';
import { backoffDelay, parseRetryAfter, retryDelay } from '../../src/nomad/backoff.js';
import { watchQuery } from '../../src/nomad/blockingQuery.js';
import { NomadClient } from '../../src/nomad/client.js';
import { NomadHttpError } from '../../src/nomad/errors.js';
import { nomadEventStream, type StreamState } from '../../src/nomad/eventStream.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { until } from './support.js';

/** A whole second, so an HTTP-date (second precision) says exactly what the test means. */
const START = Date.UTC(2026, 10, 29, 17, 0, 0);

describe('parseRetryAfter', () => {
  it('reads delta-seconds', () => {
    expect(parseRetryAfter('30', START)).toBe(30_000);
    expect(parseRetryAfter(' 0 ', START)).toBe(0);
  });

  it('reads the three HTTP-date forms against the clock it is given, GMT whatever the local zone', () => {
    const in20s = START + 20_000;
    expect(parseRetryAfter(new Date(in20s).toUTCString(), START)).toBe(20_000);
    expect(parseRetryAfter('Sunday, 29-Nov-26 17:00:20 GMT', START)).toBe(20_000);
    // asctime has no zone: it is GMT, not this process's local time.
    const zone = process.env.TZ;
    process.env.TZ = 'America/New_York';
    try {
      expect(parseRetryAfter('Sun Nov 29 17:00:20 2026', START)).toBe(20_000);
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
    // A date already past: come back now.
    expect(parseRetryAfter(new Date(START - 5_000).toUTCString(), START)).toBe(0);
  });

  it('is undefined when absent or neither form', () => {
    for (const value of [undefined, '', 'soon', '-5', '1.5', '30s']) expect(parseRetryAfter(value, START)).toBeUndefined();
  });
});

describe('retryDelay', () => {
  const error = (retryAfterMs: number | undefined) => new NomadHttpError(429, 'GET', '/v1/jobs', 'rate limited', { retryAfterMs });
  const options = { random: () => 0.5 };

  it('is the back-off delay when the server did not say, or asked for less', () => {
    expect(retryDelay(3, error(undefined), options)).toBe(backoffDelay(3, options));
    expect(retryDelay(3, error(100), options)).toBe(backoffDelay(3, options));
    expect(retryDelay(3, new Error('no hint'), options)).toBe(backoffDelay(3, options));
  });

  it("is the server's wait when longer, capped at the back-off's maximum", () => {
    expect(retryDelay(1, error(12_000), options)).toBe(12_000);
    expect(retryDelay(1, error(3_600_000), options)).toBe(30_000);
    expect(retryDelay(1, error(3_600_000), { ...options, maxMs: 5_000 })).toBe(5_000);
  });
});

describe('the event stream reconnects when Retry-After says', () => {
  /** The stream's first connection answered `status` with this Retry-After: the wait it planned, and the one it made. */
  async function reconnectAfter(retryAfter: string, { status = 429, maxMs }: { status?: number; maxMs?: number } = {}) {
    const clock = new VirtualClock({ start: START });
    const fake = await FakeNomad.start({ clock });
    const client = new NomadClient({ address: fake.address }, { clock, gzip: false });
    fake.faults.failRequests({ status, body: 'Too many requests', path: '/v1/event/stream', headers: { 'Retry-After': retryAfter } });
    const stream = nomadEventStream(client, { topics: ['Job'], clock, backoff: { random: () => 0.99, ...(maxMs === undefined ? {} : { maxMs }) } });
    const states: (StreamState & { at: number })[] = [];
    const s1 = stream.state.subscribe((s) => states.push({ ...s, at: clock.now() }));
    const s2 = stream.batches.subscribe();
    try {
      await until(clock, () => states.filter((s) => s.status === 'connecting').length >= 2 && states.at(-1)?.status === 'streaming', 'the second connection', { stepMs: 250, maxMs: 120_000 });
      const failedAt = states.find((s) => s.status === 'backingOff')!;
      const reconnectedAt = states.filter((s) => s.status === 'connecting')[1]!;
      return { planned: failedAt.retryAt! - failedAt.at, waited: reconnectedAt.at - failedAt.at, error: failedAt.error };
    } finally {
      s1.unsubscribe();
      s2.unsubscribe();
      await client.close();
      await fake.close();
    }
  }

  it('429 with Retry-After: 30 (delta-seconds): 30 s, not the first back-off step (under 500 ms)', async () => {
    const { planned, waited, error } = await reconnectAfter('30');
    expect(planned).toBe(30_000);
    expect(waited).toBeGreaterThanOrEqual(30_000);
    expect(waited).toBeLessThan(30_500);
    expect(error).toMatchObject({ status: 429, retryAfterMs: 30_000 });
  });

  it('503 with an HTTP-date 20 s ahead of the clock: 20 s', async () => {
    const { planned, waited } = await reconnectAfter(new Date(START + 20_000).toUTCString(), { status: 503 });
    expect(planned).toBe(20_000);
    expect(waited).toBeGreaterThanOrEqual(20_000);
    expect(waited).toBeLessThan(20_500);
  });

  it("an hour is capped at the back-off's maximum", async () => {
    expect((await reconnectAfter('3600')).planned).toBe(30_000);
    expect((await reconnectAfter('3600', { maxMs: 10_000 })).planned).toBe(10_000);
  });
});

describe('retried queries wait as Retry-After says', () => {
  it('a Nomad blocking query answered 429 with Retry-After: 12 asks again 12 s later', async () => {
    const clock = new VirtualClock({ start: START });
    const fake = await FakeNomad.start({ clock });
    const client = new NomadClient({ address: fake.address }, { clock, gzip: false });
    const asked: number[] = [];
    fake.server.on('request', (req: { url?: string }) => void (req.url?.startsWith('/v1/jobs') && asked.push(clock.now())));
    fake.faults.failRequests({ status: 429, body: 'rate limited', path: '/v1/jobs', headers: { 'Retry-After': '12' }, times: 2 });
    const answers: number[] = [];
    const subscription = watchQuery((index, signal) => client.listJobs(undefined, { index, signal }), { clock, backoff: { random: () => 0 } }).subscribe((r) => answers.push(r.meta.lastIndex));
    try {
      await until(clock, () => answers.length > 0, 'an answer', { stepMs: 250, maxMs: 60_000 });
      expect(asked.slice(0, 3).map((t) => t - START)).toEqual([0, 12_000, 24_000]);
    } finally {
      subscription.unsubscribe();
      await client.close();
      await fake.close();
    }
  });

  it('a Consul health query answered 503 with Retry-After: 7 keeps that pace (the back-off takes over once longer)', async () => {
    const clock = new VirtualClock({ start: START });
    const asked: number[] = [];
    const server: Server = createServer((_req, res) => {
      asked.push(clock.now());
      res.writeHead(503, { 'Retry-After': '7', 'Content-Type': 'text/plain' }).end('No cluster leader');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const consul = new ConsulClient({ address: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }, { clock, gzip: false });
    const errors: unknown[] = [];
    const subscription = consul.watchHealthChecks({ backoff: { random: () => 0 }, onError: (error) => errors.push(error) }).subscribe();
    try {
      await until(clock, () => asked.length >= 7, 'seven attempts', { stepMs: 250, maxMs: 120_000 });
      // Back-off alone: 250, 500, 1000, 2000, 4000, 8000 ms.
      expect(asked.slice(1, 7).map((t, i) => t - asked[i]!)).toEqual([7_000, 7_000, 7_000, 7_000, 7_000, 8_000]);
      expect(errors[0]).toBeInstanceOf(ConsulHttpError);
      expect(errors[0]).toMatchObject({ status: 503, retryAfterMs: 7_000 });
    } finally {
      subscription.unsubscribe();
      await consul.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
