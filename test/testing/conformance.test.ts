/**
 * Conformance with the recorded Nomad 1.1.2 agent: for each exchange in api/*.json, the same request
 * to FakeNomad (its cluster prepared from the scenario recordings, or scripted where no recording
 * holds the objects) answers with the same status, content type, header set and a body of the same
 * shape: same keys, same JSON types, recursively; error texts are compared exactly. Where the fake
 * differs on purpose, the case says so in `differs`.
 */
import { join } from 'node:path';
import { request } from 'undici';
import { settle } from '../../src/clock/index.js';
import type { FakeNomad } from '../../src/testing/fakeNomad.js';
import { parseLossless } from '../../src/testing/losslessJson.js';
import { readApiExchanges, readScenario, readStreamRecording, type ApiExchange } from '../../src/testing/recording.js';
import { FIXTURES, call, useFake, type Answer } from './helpers.js';

/**
 * Where `ours` differs in shape from `recorded` (undefined when alike): objects need the same keys,
 * scalars the same JSON type; every element of one of our arrays must have the shape of some
 * recorded element (a list holds different objects in the two clusters, so it is not compared
 * element for element), and an array is empty in both or in neither.
 */
function shapeDifference(ours: unknown, recorded: unknown, path = '$'): string | undefined {
  const kind = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v === 'bigint' ? 'number' : typeof v);
  if (kind(ours) !== kind(recorded)) return `${path}: ${kind(ours)} where Nomad has ${kind(recorded)}`;
  if (Array.isArray(ours) && Array.isArray(recorded)) {
    if ((ours.length === 0) !== (recorded.length === 0)) return `${path}: ${ours.length} elements where Nomad has ${recorded.length}`;
    for (const [i, element] of ours.entries()) {
      const differences = recorded.map((r) => shapeDifference(element, r, `${path}[${i}]`));
      if (!differences.includes(undefined)) return differences[0];
    }
    return undefined;
  }
  if (kind(ours) === 'object') {
    const a = ours as Record<string, unknown>;
    const b = recorded as Record<string, unknown>;
    // Computed node classes ("v1:<hash>") name the node; the fake's node is not the recorded one.
    const keys = (o: object): string => Object.keys(o).map((k) => k.replace(/^v1:\d+$/, 'v1:<class>')).sort().join(',');
    if (keys(a) !== keys(b)) return `${path}: keys {${keys(a)}} where Nomad has {${keys(b)}}`;
    const recordedValues = Object.values(b);
    for (const [i, key] of Object.keys(a).entries()) {
      const difference = shapeDifference(a[key], key in b ? b[key] : recordedValues[i], `${path}.${key}`);
      if (difference) return difference;
    }
  }
  return undefined;
}

/**
 * Headers left out of the comparison: Date varies by moment, and Node's HTTP server always writes
 * Connection (and Keep-Alive) where Go's writes neither: the fake differs there on purpose, since
 * clients must not depend on connection headers.
 */
const VOLATILE_HEADERS = new Set(['date', 'connection', 'keep-alive']);

function headerSet(headers: Record<string, string>): string[] {
  return Object.keys(headers).map((h) => h.toLowerCase()).filter((h) => !VOLATILE_HEADERS.has(h)).sort();
}

const exchanges = new Map(readApiExchanges(join(FIXTURES, 'api')).map((e) => [e.name, e]));

function exchange(name: string): ApiExchange {
  const found = exchanges.get(name);
  if (!found) throw new Error(`no exchange ${name}`);
  return found;
}

function queryString(e: ApiExchange): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(e.request.query)) for (const v of [value].flat()) params.append(key, v);
  const text = params.toString();
  return text === '' ? '' : `?${text}`;
}

/** The cluster as the scenario's recording left it when expected.json was collected. */
function replayScenarioUntilCapture(fake: FakeNomad, name: string): void {
  const scenario = readScenario(join(FIXTURES, 'scenarios', name));
  const capturedAt = (scenario.expected as { captured_at_stream_t: number }).captured_at_stream_t;
  fake.replay(scenario.stream.filter((line) => line.t <= capturedAt), { immediate: true });
}

/** A canary deployment with its one canary healthy, waiting for promotion (no scenario recorded one). */
function scriptCanaryAwaitingPromotion(fake: FakeNomad): string {
  const spec = {
    ID: 'canary', Datacenters: ['dc1'], Type: 'service',
    Update: { Canary: 1, HealthCheck: 'task_states', MinHealthyTime: 2e9, HealthyDeadline: 20e9, ProgressDeadline: 30e9 },
    TaskGroups: [{ Name: 'app', Count: 2, Tasks: [{ Name: 'main', Driver: 'raw_exec', Config: { command: '/bin/sh' } }] }],
  };
  fake.cluster.registerJob(spec);
  fake.cluster.placeAllocations('canary', { count: 2 });
  fake.cluster.registerJob({ ...spec, Meta: { version: '2' } });
  const [canary] = fake.cluster.placeAllocations('canary', { count: 1, canary: true });
  fake.cluster.receiveAllocation(canary!.ID);
  fake.cluster.startTask(canary!.ID);
  fake.cluster.setAllocHealth(canary!.ID, true);
  return canary!.DeploymentID!;
}

interface Case {
  prepare?: (fake: FakeNomad) => string | void;
  /** The request path with the prepared object's ID in place of the recorded one. */
  path?: (e: ApiExchange, id: string) => string;
  body?: (e: ApiExchange, id: string) => string | null;
  differs?: string;
}

const replaceLastSegment = (e: ApiExchange, id: string): string => e.request.path.replace(/[^/]+$/, id);

const CASES: Record<string, Case> = {
  get_job: { prepare: (f) => replayScenarioUntilCapture(f, 'healthy_task_states') },
  get_job_allocations: { prepare: (f) => replayScenarioUntilCapture(f, 'healthy_task_states') },
  get_jobs_prefix: { prepare: (f) => replayScenarioUntilCapture(f, 'healthy_task_states') },
  get_jobs_prefix_nomatch: {},
  get_allocation: { prepare: (f) => replayScenarioUntilCapture(f, 'healthy_task_states') },
  get_deployment: { prepare: (f) => replayScenarioUntilCapture(f, 'healthy_task_states') },
  get_evaluation_complete: { prepare: (f) => replayScenarioUntilCapture(f, 'healthy_task_states') },
  get_evaluation_failed_tg_allocs: { prepare: (f) => replayScenarioUntilCapture(f, 'placement_failure') },
  get_evaluation_blocked: { prepare: (f) => replayScenarioUntilCapture(f, 'placement_failure') },
  get_job_404: {},
  get_allocation_404: {},
  get_evaluation_404: {},
  get_deployment_404: {},
  register_job: {},
  register_job_invalid_update: {},
  register_job_malformed_json: {},
  register_job_missing_job: {},
  register_job_wrong_type: {},
  get_deployment_awaiting_promotion: {
    prepare: scriptCanaryAwaitingPromotion,
    path: replaceLastSegment,
    differs: 'scripted rather than replayed: the canary deployment of the recording is outside every recorded stream',
  },
  deployment_promote: {
    prepare: scriptCanaryAwaitingPromotion,
    path: replaceLastSegment,
    body: (_e, id) => JSON.stringify({ DeploymentID: id, All: true }),
    differs: 'scripted canary deployment, so the path and body carry its ID',
  },
  deployment_promote_missing_id: { prepare: scriptCanaryAwaitingPromotion, path: replaceLastSegment },
};

/** Exchanges with their own tests below (streams, blocking). */
const STREAMING = ['blocking_query_timeout', 'event_stream_bad_index', 'event_stream_bad_topic', 'event_stream_index_1', 'event_stream_index_future', 'event_stream_index_current_plus_1'];

function expectSameAnswer(recorded: ApiExchange, answer: Answer): void {
  expect(answer.status).toBe(recorded.response.status);
  expect(answer.headers['content-type']).toBe(recorded.response.headers['Content-Type']);
  expect(headerSet(answer.headers)).toEqual(headerSet(recorded.response.headers));
  if (String(recorded.response.headers['Content-Type']).startsWith('application/json')) {
    expect(shapeDifference(parseLossless(answer.text), parseLossless(recorded.response.body))).toBeUndefined();
  } else {
    expect(answer.text).toBe(recorded.response.body);
  }
}

describe('FakeNomad answers every recorded Nomad 1.1.2 exchange alike', () => {
  const env = useFake({}, Date.UTC(2026, 10, 29, 17, 5));

  it('has a case for every recorded exchange', () => {
    expect([...exchanges.keys()].sort()).toEqual([...Object.keys(CASES), ...STREAMING].sort());
  });

  it.each(Object.entries(CASES))('%s', async (name, testCase) => {
    const recorded = exchange(name);
    const id = testCase.prepare?.(env.fake) ?? '';
    const path = testCase.path?.(recorded, id) ?? recorded.request.path;
    const body = testCase.body?.(recorded, id) ?? recorded.request.body ?? undefined;
    const answer = await call(env.fake.address, recorded.request.method, `${path}${queryString(recorded)}`, body ?? undefined);
    expectSameAnswer(recorded, answer);
  });

  it.each(['event_stream_bad_index', 'event_stream_bad_topic'])('%s', async (name) => {
    const recorded = exchange(name);
    expectSameAnswer(recorded, await call(env.fake.address, 'GET', `${recorded.request.path}${queryString(recorded)}`));
  });

  it('blocking_query_timeout: answers after wait plus at most wait/16 of jitter, same index, full list', async () => {
    const recorded = exchange('blocking_query_timeout');
    env.fake.replay(readStreamRecording(join(FIXTURES, 'api', 'event_stream_index_1.jsonl')), { immediate: true });
    const index = Number((await call(env.fake.address, 'GET', '/v1/allocations')).headers['x-nomad-index']);
    let answer: Answer | undefined;
    void call(env.fake.address, 'GET', `/v1/allocations?index=${index}&wait=2s`).then((a) => (answer = a));
    await settle(20);
    env.clock.advance(1999);
    await settle(20);
    expect(answer).toBeUndefined();
    env.clock.advance(2000 / 16 + 1);
    await settle(20);
    expect(answer).toBeDefined();
    expectSameAnswer(recorded, answer!);
    expect(Number(answer!.headers['x-nomad-index'])).toBe(index);
  });

  /** Opens the stream, collects the lines present once the fake has written its replay, and closes. */
  async function streamLines(path: string): Promise<{ status: number; headers: Record<string, string>; lines: string[] }> {
    const response = await request(`${env.fake.address}${path}`);
    let text = '';
    response.body.on('data', (chunk: Buffer) => (text += chunk.toString()));
    await settle(50);
    response.body.destroy();
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(response.headers)) if (v !== undefined) headers[k] = String(v);
    return { status: response.statusCode, headers, lines: text.split('\n').filter((l) => l !== '') };
  }

  it.each([
    ['event_stream_index_1', '?index=1'],
    ['event_stream_index_future', '?index=999999999'],
    // The recorded query object kept only the last `topic`; the request carried all four (see its note).
    ['event_stream_index_current_plus_1', '?index=298&topic=Job&topic=Evaluation&topic=Allocation&topic=Deployment'],
  ])('%s: {} first, then the batches Nomad replayed', async (name, query) => {
    const recorded = exchange(name) as ApiExchange & { event_indexes: number[] };
    env.fake.replay(readStreamRecording(join(FIXTURES, 'api', 'event_stream_index_1.jsonl')), { immediate: true });
    const answer = await streamLines(`/v1/event/stream${query}`);
    expect(answer.status).toBe(200);
    expect(headerSet(answer.headers)).toEqual(headerSet(recorded.response.headers));
    expect(answer.lines[0]).toBe('{}');
    const batches = answer.lines.slice(1);
    expect(batches.map((l) => (JSON.parse(l) as { Index: number }).Index)).toEqual(recorded.event_indexes);
    // Compared as JSON values: Nomad writes Go maps (Metrics.Scores) in random order, so even its
    // own two answers differ byte-wise; the fake serves the recorded bytes.
    const recordedBatches = recorded.response.body.split('\n').filter((l) => l !== '').slice(1);
    expect(batches.map(parseLossless)).toEqual(recordedBatches.map(parseLossless));
  });
});

/**
 * The same comparison for objects the scripting API builds (no recording behind them): a client
 * cannot tell a scripted cluster from the recorded agent by the shape of what it reads.
 */
describe('a scripted cluster answers with the recorded shapes', () => {
  const env = useFake({}, Date.UTC(2026, 10, 29, 17, 5));

  /** Registers the recorded job of healthy_task_states through PUT /v1/jobs and runs it to healthy. */
  async function runHealthyScenario(): Promise<{ allocId: string; deploymentId: string; evalId: string }> {
    const registered = await call(env.fake.address, 'PUT', '/v1/jobs', exchange('register_job').request.body!);
    expectSameAnswer(exchange('register_job'), registered);
    const allocs = env.fake.cluster.placeAllocations('healthy-task-states');
    for (const alloc of allocs) {
      env.fake.cluster.receiveAllocation(alloc.ID);
      env.fake.cluster.startTask(alloc.ID);
      env.fake.cluster.setAllocHealth(alloc.ID, true);
    }
    const deploymentId = allocs[0]!.DeploymentID!;
    env.fake.cluster.setDeploymentStatus(deploymentId, 'successful');
    return { allocId: allocs[0]!.ID, deploymentId, evalId: (JSON.parse(registered.text) as { EvalID: string }).EvalID };
  }

  it.each([
    ['get_job', () => '/v1/job/healthy-task-states'],
    ['get_jobs_prefix', () => '/v1/jobs?prefix=healthy'],
    ['get_job_allocations', () => '/v1/job/healthy-task-states/allocations'],
    ['get_allocation', (ids: { allocId: string }) => `/v1/allocation/${ids.allocId}`],
    ['get_deployment', (ids: { deploymentId: string }) => `/v1/deployment/${ids.deploymentId}`],
    ['get_evaluation_complete', (ids: { evalId: string }) => `/v1/evaluation/${ids.evalId}`],
  ] as const)('%s', async (name, path) => {
    const ids = await runHealthyScenario();
    expectSameAnswer(exchange(name), await call(env.fake.address, 'GET', path(ids)));
  });

  it.each(['get_evaluation_failed_tg_allocs', 'get_evaluation_blocked'])('%s', async (name) => {
    env.fake.cluster.registerJob({
      ID: 'placement-failure', Datacenters: ['dc1'],
      Update: { HealthCheck: 'task_states', MinHealthyTime: 2e9, HealthyDeadline: 20e9, ProgressDeadline: 30e9 },
      TaskGroups: [{ Name: 'app', Tasks: [{ Name: 'main', Driver: 'raw_exec', Resources: { CPU: 20, MemoryMB: 1_000_000 } }] }],
    });
    const { evaluation, blocked } = env.fake.cluster.failPlacement('placement-failure');
    const id = name === 'get_evaluation_blocked' ? blocked.ID : evaluation.ID;
    expectSameAnswer(exchange(name), await call(env.fake.address, 'GET', `/v1/evaluation/${id}`));
  });
});
