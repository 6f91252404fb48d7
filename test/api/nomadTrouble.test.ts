/**
 * The API over pools whose Nomad misbehaves (the pool harness's FakeNomad, faults injected):
 * answers in Poseidon's codes instead of a request that hangs or a stack trace.
 */
import { request } from 'undici';
import { PoseidonApi } from '../../src/api/api.js';
import { DESTROY_WAIT_MS } from '../../src/api/runners.js';
import { startApiServer, type ApiServer } from '../../src/api/server.js';
import { startPoolHarness, type PoolHarness } from '../runners/support/poolHarness.js';

describe('the API when Nomad fails', () => {
  let h: PoolHarness;
  let server: ApiServer;
  beforeEach(async () => {
    h = await startPoolHarness();
    server = await startApiServer(new PoseidonApi({ pools: h.pools, clock: h.clock, environmentDefaults: { driver: 'raw_exec' } }), { listen: { host: '127.0.0.1', port: 0 }, clock: h.clock });
  });
  afterEach(async () => {
    await server.close();
    await h.close();
  });

  const call = async (method: 'GET' | 'PUT' | 'POST' | 'DELETE', path: string, body?: unknown) => {
    const answer = await request(`${server.url}/api/v1${path}`, { method, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await answer.body.text();
    return { status: answer.statusCode, json: text === '' ? undefined : (JSON.parse(text) as unknown) };
  };

  it('DELETE of a runner whose purge Nomad refuses: 500 NOMAD_INTERNAL_SERVER_ERROR after a while, the runner gone for the API, purged once Nomad takes it', async () => {
    await h.settled(call('PUT', '/execution-environments/1', { prewarmingPoolSize: 1, cpuLimit: 100, memoryLimit: 0, image: 'local', networkAccess: false, exposedPorts: [] }));
    await h.driveUntil(() => h.pools.environment(1)?.idleRunners === 1);
    const claim = await call('POST', '/runners', { executionEnvironmentId: 1 });
    const { runnerId } = claim.json as { runnerId: string };
    await h.driveUntil(() => h.fake.cluster.job(runnerId)?.TaskGroups?.find((g) => g.Name === 'config')?.Meta?.used === 'true');
    h.fake.faults.failRequests({ path: `/v1/job/${runnerId}`, times: Infinity, status: 500, body: 'rpc error: raft is unhappy' });
    const answer = await h.settled(call('DELETE', `/runners/${runnerId}`), DESTROY_WAIT_MS + 5_000);
    expect(answer).toEqual({ status: 500, json: { message: expect.stringContaining('has not confirmed its purge yet'), errorCode: 'NOMAD_INTERNAL_SERVER_ERROR' } });
    expect((await call('GET', `/runners/${runnerId}/files`)).status).toBe(410);
    h.fake.faults.clear();
    await h.driveUntil(() => h.fake.cluster.job(runnerId) === undefined || h.fake.cluster.job(runnerId)?.Status === 'dead', 60_000);
  });

  it("a template Nomad refuses to register: 500 UNKNOWN (Poseidon's code for a failed create) with Nomad's words, nothing created", async () => {
    h.fake.faults.failRequests({ path: '/v1/job', times: 5, status: 500, body: 'rpc error: no leader' });
    const answer = await h.settled(call('PUT', '/execution-environments/2', { prewarmingPoolSize: 1, cpuLimit: 100, memoryLimit: 0, image: 'local', networkAccess: false, exposedPorts: [] }));
    expect(answer.status).toBe(500);
    expect(answer.json).toMatchObject({ errorCode: 'UNKNOWN', message: expect.stringContaining('no leader') });
    expect((await call('GET', '/execution-environments/2')).status).toBe(404);
  });
});
