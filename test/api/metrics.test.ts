/**
 * `warden serve` serves Prometheus metrics at /metrics beside the API: the supervisor's own (event
 * stream, evaluations, exec sessions, Node's) and the pools' and API's: runners per environment and
 * state, pool sizes, claims by outcome, runner startup durations, executions by outcome with their
 * durations, execution bytes, request durations by route and status code.
 */
import { sample } from '../metrics/support/sample.js';
import { startServe, type ServeHarness } from './support/serveHarness.js';

describe('warden serve: /metrics', () => {
  let h: ServeHarness;
  beforeAll(async () => {
    h = await startServe();
    await h.environment(3, 2);
  });
  afterAll(async () => {
    expect(await h.stop()).toBe(0);
  });

  const scrape = async (): Promise<string> => {
    const answer = await h.call('GET', '/metrics');
    expect(answer.status).toBe(200);
    expect(answer.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    return answer.text;
  };

  it('pools, claims, startups, executions, bytes and requests', async () => {
    const runner = await h.runner(3, 60);
    await h.call('POST', '/api/v1/runners', { body: { executionEnvironmentId: 99 } });
    await h.run(runner, { command: 'printf abc; printf de >&2; exit 1' });
    const bytes = await scrape();
    expect(sample(bytes, 'warden_execution_bytes_total{stream="stdout"}')).toBe(3);
    expect(sample(bytes, 'warden_execution_bytes_total{stream="stderr"}')).toBe(2);
    const slow = await h.connect(await h.execute(runner, { command: 'sleep 10', timeLimit: 1 }));
    await slow.next('start');
    await h.drive(1_100);
    await slow.closed;
    const text = await scrape();
    expect(sample(text, 'warden_runners{environment="3",state="used"}')).toBe(1);
    expect(sample(text, 'warden_runners{environment="3",state="idle"}')! + sample(text, 'warden_runners{environment="3",state="provisioning"}')!).toBe(2);
    expect(sample(text, 'warden_prewarming_pool_size{environment="3"}')).toBe(2);
    expect(sample(text, 'warden_runner_claims_total{environment="3",outcome="claimed"}')).toBe(1);
    expect(sample(text, 'warden_runner_claims_total{environment="99",outcome="unknown_environment"}')).toBe(1);
    expect(sample(text, 'warden_runner_startup_duration_seconds_count{environment="3"}')).toBeGreaterThanOrEqual(2);
    // The acting FakeNomad starts a task 400 ms after it was received: startups are at least that.
    expect(sample(text, 'warden_runner_startup_duration_seconds_bucket{le="0.25",environment="3"}')).toBe(0);
    expect(sample(text, 'warden_execution_duration_seconds_count{environment="3",outcome="exited"}')).toBe(1);
    expect(sample(text, 'warden_execution_duration_seconds_count{environment="3",outcome="timeout"}')).toBe(1);
    expect(sample(text, 'warden_execution_duration_seconds_sum{environment="3",outcome="timeout"}')).toBeCloseTo(1, 1);
    expect(sample(text, 'warden_api_request_duration_seconds_count{route="/api/v1/runners",method="POST",code="200"}')).toBe(1);
    expect(sample(text, 'warden_api_request_duration_seconds_count{route="/api/v1/runners",method="POST",code="404"}')).toBe(1);
    expect(sample(text, 'warden_api_request_duration_seconds_count{route="/api/v1/execution-environments/{executionEnvironmentId}",method="PUT",code="201"}')).toBe(1);
    expect(sample(text, 'warden_api_request_duration_seconds_count{route="/api/v1/runners/{runnerId}/websocket",method="GET",code="101"}')).toBe(2);
    // Routes are patterns: no runner id in a label.
    expect(text).not.toContain(runner);
  });

  it("the supervisor's own metrics are on the same page", async () => {
    const text = await scrape();
    for (const name of ['warden_event_stream_connection', 'warden_evaluations_total', 'warden_exec_sessions_total', 'warden_exec_bytes_total', 'nodejs_heap_size_used_bytes']) {
      expect(text).toMatch(new RegExp(`^${name}`, 'm'));
    }
    expect(sample(text, 'warden_event_stream_connection{state="streaming"}')).toBe(1);
  });

  it('HEAD and GET only; /metrics needs no token', async () => {
    expect((await h.call('POST', '/metrics')).status).toBe(405);
  });
});
