/**
 * Poseidon's end-to-end behaviours of health and execution environments (tests/e2e/health_test.go,
 * environments_test.go), rewritten against `warden serve --dev`: the template job in Nomad follows
 * each create / update (limits, network), environments another writer registered appear with
 * `fetch`, a delete removes the template job from Nomad.
 */
import type { Job } from '../../src/nomad/types.js';
import { checkEnvironmentSpec, templateJob } from '../../src/runners/poseidonFormat.js';
import { startServe, type ServeHarness } from './support/serveHarness.js';

const ENVIRONMENT = 10;
const ANOTHER = 20;

describe('warden serve: health and execution environments (Poseidon e2e)', () => {
  let h: ServeHarness;
  beforeAll(async () => {
    h = await startServe();
    await h.environment(ENVIRONMENT, 1);
  });
  afterAll(async () => {
    expect(await h.stop()).toBe(0);
  });

  const path = (id: number): string => `/api/v1/execution-environments/${id}`;
  const request = { prewarmingPoolSize: 1, cpuLimit: 100, memoryLimit: 100, image: 'local', networkAccess: false, exposedPorts: null };
  const template = async (id: number): Promise<Job> => (await h.nomad.getJob(`template-${id}`)).body;
  const runnerTask = (job: Job) => job.TaskGroups?.[0]?.Tasks[0];

  async function putReturnsEmpty(id: number, body: unknown, status: number): Promise<void> {
    const answer = await h.settled(h.call('PUT', path(id), { body }));
    expect(answer.status).toBe(status);
    expect(answer.headers['content-length']).toBe('0');
    expect(answer.text).toBe('');
  }

  it('GET /health answers 204 No Content', async () => {
    const answer = await h.call('GET', '/api/v1/health');
    expect(answer).toMatchObject({ status: 204, text: '' });
  });

  it('GET /version answers the release as a JSON string', async () => {
    const answer = await h.call('GET', '/api/v1/version');
    expect(answer.status).toBe(200);
    expect(answer.json).toMatch(/^\d+\.\d+\.\d+/);
  });

  describe('create or update', () => {
    afterAll(async () => {
      await h.settled(h.call('DELETE', path(ANOTHER)));
    });

    it('returns bad request with an empty body', async () => {
      expect((await h.call('PUT', path(ANOTHER), { raw: '' })).status).toBe(400);
    });

    it('creates the environment in Nomad: 201, its template job with the limits', async () => {
      await putReturnsEmpty(ANOTHER, request, 201);
      const job = await template(ANOTHER);
      expect(job.Type).toBe('batch');
      expect(job.TaskGroups?.map((group) => group.Name)).toEqual(['default-group', 'config']);
      expect(runnerTask(job)?.Resources).toMatchObject({ CPU: 100, MemoryMaxMB: 100 });
      expect(job.TaskGroups?.[0]?.Networks ?? []).toEqual([]);
      expect(job.TaskGroups?.[1]?.Meta).toMatchObject({ prewarmingPoolSize: '1' });
    });

    it('updates the limits in Nomad: 204', async () => {
      await putReturnsEmpty(ANOTHER, { ...request, cpuLimit: 150, memoryLimit: 142 }, 204);
      expect(runnerTask(await template(ANOTHER))?.Resources).toMatchObject({ CPU: 150, MemoryMaxMB: 142 });
    });

    it('adds network access with exposed ports, then removes it', async () => {
      await putReturnsEmpty(ANOTHER, { ...request, networkAccess: true, exposedPorts: [42, 1337] }, 204);
      const ports = (await template(ANOTHER)).TaskGroups?.[0]?.Networks?.[0]?.DynamicPorts?.map((port) => port.To);
      expect(ports).toEqual([42, 1337]);
      await putReturnsEmpty(ANOTHER, request, 204);
      expect((await template(ANOTHER)).TaskGroups?.[0]?.Networks ?? []).toEqual([]);
    });

    it('a runner of an environment with exposed ports gets them mapped to host addresses', async () => {
      await putReturnsEmpty(ANOTHER, { ...request, networkAccess: true, exposedPorts: [8080] }, 204);
      // The pool is replaced with runners of the new template: claim until one of them comes.
      let runner: { runnerId: string; mappedPorts: { exposedPort: number; hostAddress: string }[] } | undefined;
      for (let attempt = 0; attempt < 50 && (runner?.mappedPorts.length ?? 0) === 0; attempt++) {
        const answer = await h.call('POST', '/api/v1/runners', { body: { executionEnvironmentId: ANOTHER } });
        if (answer.status === 200) runner = answer.json as typeof runner;
        else await h.drive(200);
      }
      expect(runner!.mappedPorts).toEqual([{ exposedPort: 8080, hostAddress: expect.stringMatching(/^127\.0\.0\.1:\d+$/) }]);
    });
  });

  describe('list', () => {
    const list = async (query = ''): Promise<number[]> => {
      const answer = await h.settled(h.call('GET', `/api/v1/execution-environments${query}`));
      expect(answer.status).toBe(200);
      return (answer.json as { executionEnvironments: { id: number }[] }).executionEnvironments.map((e) => e.id);
    };

    it('returns every environment, with all of its fields', async () => {
      expect(await list()).toEqual([ENVIRONMENT]);
      const answer = await h.call('GET', '/api/v1/execution-environments');
      expect((answer.json as { executionEnvironments: unknown[] }).executionEnvironments[0]).toEqual({
        id: ENVIRONMENT,
        image: 'local',
        prewarmingPoolSize: 1,
        cpuLimit: 100,
        memoryLimit: 256,
        networkAccess: false,
        exposedPorts: [],
      });
    });

    it('added environments can be retrieved without fetch', async () => {
      await putReturnsEmpty(ANOTHER, request, 201);
      expect(await list()).toEqual([ENVIRONMENT, ANOTHER]);
      await h.settled(h.call('DELETE', path(ANOTHER)));
      expect(await list()).toEqual([ENVIRONMENT]);
    });

    it('environments registered in Nomad by someone else appear with fetch=true only', async () => {
      await h.settled(h.nomad.registerJob(templateJob(checkEnvironmentSpec({ id: ANOTHER, prewarmingPoolSize: 1, driver: 'raw_exec' }))));
      await h.drive(500);
      expect(await list()).toEqual([ENVIRONMENT]);
      expect(await list('?fetch=true')).toEqual([ENVIRONMENT, ANOTHER]);
      await h.settled(h.call('DELETE', path(ANOTHER)));
    });
  });

  describe('get', () => {
    it('returns the environment', async () => {
      const answer = await h.call('GET', path(ENVIRONMENT));
      expect(answer.status).toBe(200);
      expect(Object.keys(answer.json as object).sort()).toEqual(['cpuLimit', 'exposedPorts', 'id', 'image', 'memoryLimit', 'networkAccess', 'prewarmingPoolSize']);
      expect(answer.json).toMatchObject({ id: ENVIRONMENT });
    });

    it('an environment registered by someone else: 404 without fetch, 200 with it', async () => {
      await h.settled(h.nomad.registerJob(templateJob(checkEnvironmentSpec({ id: ANOTHER, prewarmingPoolSize: 0, driver: 'raw_exec', cpuLimit: 70 }))));
      await h.drive(500);
      const before = await h.call('GET', path(ANOTHER));
      expect(before).toMatchObject({ status: 404, text: '' });
      const after = await h.settled(h.call('GET', `${path(ANOTHER)}?fetch=true`));
      expect(after.status).toBe(200);
      expect(after.json).toMatchObject({ id: ANOTHER, cpuLimit: 70, prewarmingPoolSize: 0 });
      await h.settled(h.call('DELETE', path(ANOTHER)));
    });
  });

  describe('delete', () => {
    it('removes the environment and its template job in Nomad', async () => {
      await putReturnsEmpty(ANOTHER, request, 201);
      expect((await template(ANOTHER)).ID).toBe(`template-${ANOTHER}`);
      const answer = await h.settled(h.call('DELETE', path(ANOTHER)));
      expect(answer).toMatchObject({ status: 204, text: '' });
      await expect(h.nomad.getJob(`template-${ANOTHER}`)).rejects.toMatchObject({ status: 404 });
      expect((await h.call('GET', path(ANOTHER))).status).toBe(404);
    });

    it('deleting an unknown environment is 404 with no body', async () => {
      expect(await h.settled(h.call('DELETE', path(4242)))).toMatchObject({ status: 404, text: '' });
    });
  });

  it('statistics: pool size, idle and used runners per environment', async () => {
    const runner = await h.runner(ENVIRONMENT);
    const answer = await h.call('GET', '/api/v1/statistics/execution-environments');
    expect(answer.status).toBe(200);
    expect((answer.json as Record<string, unknown>)[String(ENVIRONMENT)]).toEqual({ id: ENVIRONMENT, prewarmingPoolSize: 1, idleRunners: expect.any(Number), usedRunners: 1 });
    await h.settled(h.call('DELETE', `/api/v1/runners/${runner}`));
  });
});
