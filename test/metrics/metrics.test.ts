/**
 * Prometheus metrics of a supervisor, scraped over loopback as Prometheus would: verdicts and their
 * lag, allocations by state, the event stream (state, reconnects, lag, skipped input), problems,
 * evaluations, exec sessions and bytes, and the Node.js process.
 */
import { request } from 'undici';
import { watch } from '../../src/cli/watchCommand.js';
import { VirtualClock } from '../../src/clock/index.js';
import { WardenMetrics } from '../../src/metrics/wardenMetrics.js';
import { parseListenAddress, serveMetrics } from '../../src/metrics/server.js';
import { EXEC_TARGET_JOB, collect } from '../exec/harness.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { driveTo, flush, loadScenario, requestedIndex, startHarness, stripNomadVerdict, type Harness } from '../supervisor/support/harness.js';
import { sample } from './support/sample.js';


async function scrape(url: string): Promise<{ status: number; type: string; text: string }> {
  const response = await request(url);
  return { status: response.statusCode, type: String(response.headers['content-type']), text: await response.body.text() };
}

interface Observed extends Harness {
  text(): Promise<string>;
}

/** The harness's supervisor with its metrics served on loopback, on the harness's clock. */
async function observed(start: number, prepare?: (fake: FakeNomad) => void): Promise<Observed> {
  let metrics: WardenMetrics | undefined;
  const harness = await startHarness(
    start,
    (clock) => {
      metrics = new WardenMetrics({ clock });
      return { streamMonitor: metrics.streamMonitor };
    },
    prepare,
  );
  const served = metrics as WardenMetrics;
  served.observe(harness.supervisor);
  const server = await serveMetrics(served, parseListenAddress('127.0.0.1:0'));
  return {
    ...harness,
    text: async () => (await scrape(server.url)).text,
    close: async () => {
      await server.close();
      served.close();
      await harness.close();
    },
  };
}

describe('the metrics of a supervisor following a rolling update', () => {
  test('verdicts by outcome with their lag, allocations by state while judged, the stream and the process', async () => {
    const scenario = loadScenario('rolling_update');
    const o = await observed(scenario.opened);
    try {
      o.fake.replay(scenario.stream, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario) });
      let sawWaiting = false;
      while (o.clock.now() < scenario.closed + 1_000) {
        await driveTo(o.clock, o.clock.now() + 1_000);
        const text = await o.text();
        if ((sample(text, 'warden_allocations_supervised{state="minHealthyWait"}') ?? 0) > 0) sawWaiting = true;
      }
      const text = await o.text();
      const healthy = o.verdicts.filter((v) => 'healthy' in v.outcome && v.outcome.healthy).length;
      expect(healthy).toBeGreaterThan(0);
      expect(sample(text, 'warden_verdicts_total{outcome="healthy"}')).toBe(healthy);
      expect(sample(text, 'warden_verdict_lag_seconds_count{outcome="healthy"}')).toBe(healthy);
      expect(sawWaiting).toBe(true);
      expect(sample(text, 'warden_allocations_supervised{state="pending"}')).toBe(o.supervisor.supervisedAllocations().filter((a) => a.state === 'pending').length);
      expect(sample(text, 'warden_event_stream_connection{state="streaming"}')).toBe(1);
      expect(sample(text, 'warden_event_stream_connection{state="backingOff"}')).toBe(0);
      expect(sample(text, 'warden_event_stream_events_total{topic="Allocation"}')).toBeGreaterThan(0);
      expect(sample(text, 'warden_event_stream_lag_seconds_count')).toBeGreaterThan(0);
      expect(sample(text, 'warden_event_stream_index')).toBeGreaterThan(0);
      expect(sample(text, 'warden_event_stream_reconnects_total')).toBe(0);
      expect(sample(text, 'nodejs_heap_size_used_bytes')).toBeGreaterThan(0);
    } finally {
      await o.close();
    }
  });

  test('a cut stream counts a reconnect and a listing; a corrupt batch counts as a skipped batch and a problem', async () => {
    const scenario = loadScenario('rolling_update');
    const o = await observed(scenario.opened, (fake) => fake.faults.stream({ cutAfterEvents: 5 }, 1));
    try {
      o.fake.replay(scenario.stream, {
        transform: stripNomadVerdict,
        fromIndex: requestedIndex(scenario),
        rewriteLine: (line, index) => (index === 143 ? `${line.slice(0, 500)}\u0007<<garbage>>${line.slice(500)}` : line),
      });
      await driveTo(o.clock, scenario.closed + 1_000);
      const text = await o.text();
      expect(sample(text, 'warden_event_stream_reconnects_total')).toBeGreaterThanOrEqual(1);
      // One listing at the start, one after the reconnect.
      expect(sample(text, 'warden_event_stream_resyncs_total')).toBeGreaterThanOrEqual(2);
      expect(sample(text, 'warden_event_stream_skipped_total{what="batch"}')).toBe(1);
      expect(sample(text, 'warden_problems_total{kind="bad-payload"}')).toBe(1);
    } finally {
      await o.close();
    }
  });
});

describe('the metrics of evaluations and exec sessions', () => {
  test('an evaluation followed to its end, an exec session by outcome and its bytes by stream', async () => {
    const o = await observed(Date.UTC(2026, 5, 1), (fake) => {
      fake.cluster.registerJob(EXEC_TARGET_JOB);
    });
    try {
      const { fake } = o;
      const evaluation = fake.cluster.listEvaluations({ namespace: 'default' })[0] as { ID: string };
      const [allocation] = fake.cluster.placeAllocations(EXEC_TARGET_JOB.ID);
      fake.cluster.startTask(String(allocation?.ID));
      const outcome = o.supervisor.monitorEvaluation(evaluation.ID);
      await driveTo(o.clock, o.clock.now() + 1_000);
      await expect(outcome).resolves.toEqual(expect.objectContaining({ ok: true }));
      const before = await o.text();
      const session = o.supervisor.exec(String(allocation?.ID), { task: 'main', command: ['/bin/sh', '-c', 'head -c 5; printf 0123456789; printf abc >&2'], stdin: 'pipe' });
      session.stdin.end('hello');
      const [stdout, stderr, code] = await Promise.all([collect(session.stdout), collect(session.stderr), session.exitCode]);
      expect([stdout.toString(), stderr.toString(), code]).toEqual(['hello0123456789', 'abc', 0]);
      await flush();
      const text = await o.text();
      expect(sample(before, 'warden_evaluations_total{outcome="complete"}')).toBe(1);
      expect(sample(text, 'warden_exec_sessions_total{outcome="exited"}')).toBe(1);
      expect(sample(text, 'warden_exec_sessions_active')).toBe(0);
      const bytes = (stream: string): number => (sample(text, `warden_exec_bytes_total{stream="${stream}"}`) ?? 0) - (sample(before, `warden_exec_bytes_total{stream="${stream}"}`) ?? 0);
      expect([bytes('stdin'), bytes('stdout'), bytes('stderr')]).toEqual([5, 15, 3]);
    } finally {
      await o.close();
    }
  });
});

describe('the /metrics endpoint', () => {
  test('Prometheus text format at /metrics, 404 elsewhere, 405 for other methods; HEAD without a body', async () => {
    const metrics = new WardenMetrics({ processMetrics: false });
    const server = await serveMetrics(metrics, { host: '127.0.0.1', port: 0 });
    try {
      const ok = await scrape(server.url);
      expect(ok.status).toBe(200);
      expect(ok.type).toBe('text/plain; version=0.0.4; charset=utf-8');
      expect(ok.text).toContain('# TYPE warden_verdicts_total counter');
      expect(ok.text).not.toContain('nodejs_');
      expect((await scrape(server.url.replace('/metrics', '/other'))).status).toBe(404);
      const post = await request(server.url, { method: 'POST' });
      await post.body.dump();
      expect(post.statusCode).toBe(405);
      const head = await request(server.url, { method: 'HEAD' });
      expect(head.statusCode).toBe(200);
      expect(await head.body.text()).toBe('');
    } finally {
      await server.close();
      metrics.close();
    }
  });

  test('addresses: a port, host:port, [ipv6]:port; anything else refused', () => {
    expect(parseListenAddress('9464')).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(parseListenAddress('0.0.0.0:9100')).toEqual({ host: '0.0.0.0', port: 9100 });
    expect(parseListenAddress('[::1]:0')).toEqual({ host: '::1', port: 0 });
    for (const bad of ['', 'host', 'host:', '1:2:3', '70000', 'a b:1']) expect(() => parseListenAddress(bad)).toThrow(RangeError);
  });
});

describe('warden watch --metrics', () => {
  test('prints the metrics URL and serves the verdicts of what it watches there', async () => {
    const scenario = loadScenario('failed_task');
    const clock = new VirtualClock({ start: scenario.opened });
    const fake = await FakeNomad.start({ clock });
    const lines: string[] = [];
    const stop = new AbortController();
    const running = watch(
      { json: true, metrics: { host: '127.0.0.1', port: 0 } },
      { env: { NOMAD_ADDR: fake.address }, write: (l) => lines.push(l), clock, transport: { gzip: false }, signal: stop.signal },
    );
    await flush();
    fake.replay(scenario.stream, { transform: stripNomadVerdict, fromIndex: requestedIndex(scenario) });
    await driveTo(clock, scenario.closed + 1_000);
    const announced = lines.map((l) => JSON.parse(l) as { type: string; url?: string }).find((l) => l.type === 'metrics');
    expect(announced?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const { text } = await scrape(announced!.url!);
    expect(sample(text, 'warden_verdicts_total{outcome="unhealthy"}')).toBe(1);
    stop.abort();
    expect(await running).toBe(0);
    await fake.close();
    await expect(request(announced!.url!)).rejects.toThrow();
  });
});
