/**
 * Poseidon's semantics that CodeOcean and an operator depend on, through the API over pools on an
 * acting FakeNomad the test can script (issue 20 items 2, 3): /health and POST /runners naming
 * Nomad's reason, the exact OOM error text, a re-PUT that pulls the image again, `fetch=true`
 * refreshing and removing environments, and a start with Nomad not answering yet.
 */
import { request } from 'undici';
import WebSocket from 'ws';
import { PoseidonApi } from '../../src/api/api.js';
import { startApiServer, type ApiServer } from '../../src/api/server.js';
import type { Job } from '../../src/nomad/types.js';
import { checkEnvironmentSpec, templateJob } from '../../src/runners/poseidonFormat.js';
import type { RunnerPoolsOptions } from '../../src/runners/pools.js';
import { startPoolHarness, type PoolHarness } from '../runners/support/poolHarness.js';

interface ApiHarness {
  h: PoolHarness;
  server: ApiServer;
  call(method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown; text: string }>;
  close(): Promise<void>;
}

async function startApi(pools: RunnerPoolsOptions = {}, refuseAtStart = false): Promise<ApiHarness> {
  const h = await startPoolHarness({ pools, ...(refuseAtStart ? { refuseAtStart } : {}) });
  const server = await startApiServer(new PoseidonApi({ pools: h.pools, clock: h.clock, environmentDefaults: { driver: 'raw_exec' } }), { listen: { host: '127.0.0.1', port: 0 }, clock: h.clock });
  const call: ApiHarness['call'] = async (method, path, body) => {
    const answer = await request(`${server.url}/api/v1${path}`, {
      method: method as 'GET',
      ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
    });
    const text = await answer.body.text();
    return { status: answer.statusCode, text, json: text === '' ? undefined : (JSON.parse(text) as unknown) };
  };
  return {
    h,
    server,
    call,
    close: async () => {
      await server.close();
      await h.close();
    },
  };
}

const environment = { prewarmingPoolSize: 1, cpuLimit: 20, memoryLimit: 0, image: 'local', networkAccess: false, exposedPorts: [] };

async function put(a: ApiHarness, id: number, extra: Record<string, unknown> = {}): Promise<number> {
  return (await a.h.settled(a.call('PUT', `/execution-environments/${id}`, { ...environment, ...extra }))).status;
}

describe('failures that say why, over the API', () => {
  jest.setTimeout(60_000);

  it('a runner that cannot be placed: /health 503 and POST /runners name the environment and Nomad\'s reason', async () => {
    const a = await startApi();
    try {
      expect((await a.call('GET', '/health')).status).toBe(204);
      a.h.fake.acting!.failPlacements({ jobId: /^61-/, times: Infinity, dimension: 'cpu' });
      expect(await put(a, 61)).toBe(201);
      await a.h.driveUntil(() => a.h.pools.environmentSummary(61)?.failure != null);
      const health = await a.call('GET', '/health');
      expect(health.status).toBe(503);
      expect(health.json).toEqual({
        message: expect.stringMatching(/^the prewarming pool is depleting: environments 61; environment 61: runner 61-[0-9a-f-]+: job 61-.*Dimension "cpu" exhausted on 1 nodes/),
        errorCode: 'PREWARMING_POOL_DEPLETING',
      });
      const claim = await a.call('POST', '/runners', { executionEnvironmentId: 61, inactivityTimeout: 60 });
      expect(claim.status).toBe(500);
      expect(claim.json).toEqual({ message: expect.stringMatching(/^no runners available for this execution environment: runner 61-.*Dimension "cpu" exhausted/), errorCode: 'NOMAD_OVERLOAD' });
      a.h.fake.acting!.clearFailures();
      await a.h.driveUntil(() => a.h.pools.environment(61)?.idleRunners === 1, 60_000);
      expect((await a.call('GET', '/health')).status).toBe(204);
    } finally {
      await a.close();
    }
  });

  it("an OOM kill: the execution's WebSocket ends with Poseidon's exact error text", async () => {
    const a = await startApi();
    try {
      await put(a, 62);
      await a.h.driveUntil(() => a.h.pools.environment(62)?.idleRunners === 1);
      const { runnerId } = (await a.call('POST', '/runners', { executionEnvironmentId: 62, inactivityTimeout: 60 })).json as { runnerId: string };
      const { websocketUrl } = (await a.call('POST', `/runners/${runnerId}/execute`, { command: 'sleep 30', timeLimit: 0, privilegedExecution: true })).json as { websocketUrl: string };
      const ws = new WebSocket(websocketUrl);
      const messages: { type: string; data?: unknown }[] = [];
      ws.on('message', (data) => messages.push(JSON.parse(String(data)) as { type: string }));
      const closed = new Promise<number>((resolve) => ws.on('close', (code) => resolve(code)));
      await a.h.driveUntil(() => messages.length > 0);
      await a.h.drive(200);
      a.h.fake.oomKill(a.h.pools.runner(runnerId)!.info()!.allocationId!);
      expect(await a.h.settled(closed)).toBe(1000);
      expect(messages.at(-1)).toEqual({ type: 'error', data: 'the allocation was OOM Killed' });
      expect((await a.call('DELETE', `/runners/${runnerId}`)).status).toBe(410);
    } finally {
      await a.close();
    }
  });

  it('Nomad not answering at the start: /health and the pools\' routes answer 503 with why, until Nomad answers', async () => {
    const a = await startApi({}, true);
    try {
      await a.h.driveUntil(() => a.h.problems.some((p) => p.kind === 'recovery-failed'));
      expect(a.h.pools.recovered).toBe(false);
      const health = await a.call('GET', '/health');
      expect(health.status).toBe(503);
      expect(health.json).toEqual({ message: expect.stringMatching(/^the runner pools are not recovered from Nomad yet: /), errorCode: 'NOMAD_UNREACHABLE' });
      expect((await a.call('GET', '/execution-environments')).status).toBe(503);
      // Tried again, waiting longer each time (1 s, 2 s, 4 s …) on the clock.
      await a.h.drive(4_000);
      const waits = a.h.problems.filter((p) => p.kind === 'recovery-failed').map((p) => /retrying in (\d+) s/.exec(p.message)?.[1]);
      expect(waits.slice(0, 3)).toEqual(['1', '2', '4']);
      a.h.fake.faults.clear();
      await a.h.settled(a.h.pools.ready, 60_000);
      expect(a.h.pools.recovered).toBe(true);
      expect((await a.call('GET', '/health')).status).toBe(204);
      expect(await put(a, 63)).toBe(201);
    } finally {
      await a.close();
    }
  });
});

/** The runner task's force_pull in a job. */
const forcePull = (job: Job | undefined): unknown => job?.TaskGroups?.find((g) => g.Name === 'default-group')?.Tasks[0]?.Config?.force_pull;

describe('a re-PUT pulls the image again', () => {
  jest.setTimeout(60_000);
  const docker = { driver: 'docker', image: 'openhpi/co_execenv_python:3.8', prewarmingPoolSize: 2 };

  async function dockerPool(pools: RunnerPoolsOptions = {}): Promise<ApiHarness> {
    const a = await startApi(pools);
    await a.h.settled(a.h.pools.putEnvironment({ id: 64, ...docker } as never));
    await a.h.driveUntil(() => a.h.pools.environment(64)?.idleRunners === 2);
    return a;
  }
  const idle = (a: ApiHarness): string[] => a.h.pools.environment(64)!.runners.filter((r) => r.state === 'idle').map((r) => r.id);

  it('the template and the runners a PUT starts pull; refills do not; a re-PUT of the same spec replaces idle runners, leaves used ones', async () => {
    const a = await dockerPool();
    try {
      expect(forcePull(a.h.fake.cluster.job('template-64'))).toBe(true);
      for (const id of idle(a)) expect(forcePull(a.h.fake.cluster.job(id))).toBe(true);
      const used = a.h.pools.claim(64, { inactivityTimeoutS: 0 });
      await a.h.driveUntil(() => idle(a).length === 2);
      const refill = idle(a).find((id) => id !== used.id && forcePull(a.h.fake.cluster.job(id)) === false);
      expect(refill).toBeDefined();
      const before = idle(a);
      await a.h.settled(a.h.pools.putEnvironment({ id: 64, ...docker } as never));
      await a.h.driveUntil(() => idle(a).length === 2 && idle(a).every((id) => !before.includes(id)));
      for (const id of idle(a)) expect(forcePull(a.h.fake.cluster.job(id))).toBe(true);
      expect(used.state).toBe('used');
      expect(a.h.fake.cluster.job(used.id)).toBeDefined();
    } finally {
      await a.close();
    }
  });

  it('with force pulls off (nomad.disableforcepull): nothing pulls, and a re-PUT of the same spec changes nothing', async () => {
    const a = await dockerPool({ disableForcePull: true });
    try {
      expect(forcePull(a.h.fake.cluster.job('template-64'))).toBe(false);
      const before = idle(a);
      for (const id of before) expect(forcePull(a.h.fake.cluster.job(id))).toBe(false);
      await a.h.settled(a.h.pools.putEnvironment({ id: 64, ...docker } as never));
      await a.h.drive(2_000);
      expect(idle(a)).toEqual(before);
    } finally {
      await a.close();
    }
  });
});

describe('GET /execution-environments?fetch=true', () => {
  jest.setTimeout(60_000);

  it('adopts new environments, refreshes changed ones, and removes those deleted from Nomad', async () => {
    const a = await startApi();
    try {
      await put(a, 65);
      await put(a, 66);
      await a.h.driveUntil(() => a.h.pools.environment(65)?.idleRunners === 1 && a.h.pools.environment(66)?.idleRunners === 1);
      const oldIdle = a.h.pools.environment(65)!.runners[0]!.id;
      const used66 = a.h.pools.claim(66, { inactivityTimeoutS: 0 });
      // Someone else (another Warden, a Poseidon): 65 changed, 66 deleted, 67 new.
      a.h.fake.cluster.registerJob(templateJob(checkEnvironmentSpec({ id: 65, prewarmingPoolSize: 2, driver: 'raw_exec', cpuLimit: 70 })));
      a.h.fake.cluster.deregisterJob('template-66', { purge: true });
      a.h.fake.cluster.registerJob(templateJob(checkEnvironmentSpec({ id: 67, prewarmingPoolSize: 1, driver: 'raw_exec' })));
      await a.h.drive(500);
      const listed = await a.h.settled(a.call('GET', '/execution-environments?fetch=true'));
      expect((listed.json as { executionEnvironments: { id: number; cpuLimit: number; prewarmingPoolSize: number }[] }).executionEnvironments.map((e) => [e.id, e.cpuLimit, e.prewarmingPoolSize])).toEqual([
        [65, 70, 2],
        [67, 40, 1],
      ]);
      await a.h.driveUntil(() => a.h.pools.environment(65)?.idleRunners === 2 && a.h.pools.environment(66) === undefined && a.h.pools.environment(67)?.idleRunners === 1);
      // 65's runners of the old template replaced; 66's runners (the used one too) purged; 66's template stays gone.
      expect(a.h.pools.environment(65)!.runners.map((r) => r.id)).not.toContain(oldIdle);
      expect(a.h.fake.cluster.job(oldIdle)).toBeUndefined();
      expect(used66.state).toBe('destroyed');
      expect(a.h.fake.cluster.listJobs({ prefix: '66-' })).toEqual([]);
      expect(a.h.fake.cluster.job('template-66')).toBeUndefined();
      expect((await a.call('GET', '/execution-environments/66')).status).toBe(404);
      // Nothing else changed: another fetch changes nothing.
      expect(await a.h.settled(a.h.pools.fetchEnvironments())).toEqual({ adopted: [], refreshed: [], removed: [] });
    } finally {
      await a.close();
    }
  });

  it('a pool size changed by someone else is taken without replacing runners', async () => {
    const a = await startApi();
    try {
      await put(a, 68);
      await a.h.driveUntil(() => a.h.pools.environment(68)?.idleRunners === 1);
      const runner = a.h.pools.environment(68)!.runners[0]!.id;
      a.h.fake.cluster.registerJob(templateJob(checkEnvironmentSpec({ ...a.h.pools.environment(68)!.spec, prewarmingPoolSize: 3 })));
      expect(await a.h.settled(a.h.pools.fetchEnvironments())).toEqual({ adopted: [], refreshed: [68], removed: [] });
      await a.h.driveUntil(() => a.h.pools.environment(68)?.idleRunners === 3);
      expect(a.h.pools.environment(68)!.runners.map((r) => r.id)).toContain(runner);
    } finally {
      await a.close();
    }
  });
});
