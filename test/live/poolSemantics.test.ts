/**
 * Poseidon's semantics on the real agent (issue 20 items 2, 3): a runner that cannot start says
 * Nomad's own reason in the log, in /health and in POST /runners; a re-PUT replaces the idle runners
 * (the used one stays) and, for docker, the runner jobs Nomad stores pull their image again
 * (force_pull); the agent has no Docker, so those runners then fail with Nomad's "missing drivers".
 * Waits are on the pools' changes and problems, bounded by Jest's timeout.
 */
import { randomInt } from 'node:crypto';
import { request } from 'undici';
import { PoseidonApi } from '../../src/api/api.js';
import { startApiServer, type ApiServer } from '../../src/api/server.js';
import { nomadConfigFromEnv } from '../../src/nomad/config.js';
import type { Job } from '../../src/nomad/types.js';
import { createRunnerPools, type PoolProblem, type RunnerPools } from '../../src/runners/pools.js';
import { createSupervisor } from '../../src/supervisor/index.js';
import type { Supervisor } from '../../src/supervisor/supervisor.js';
import { recordFigure } from './support/figures.js';
import { liveNamespace } from './support/namespace.js';
import { until } from './support/pools.js';

describe("Poseidon's pool semantics on a real Nomad", () => {
  let supervisor: Supervisor;
  let pools: RunnerPools;
  let server: ApiServer;
  const problems: PoolProblem[] = [];
  const registered: Job[] = [];
  const namespace = liveNamespace('warden-pool-semantics');
  const nomad = namespace.client();
  const ids = [randomInt(700_000, 749_999), randomInt(750_000, 799_999)];

  const call = async (method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown }> => {
    const answer = await request(`${server.url}/api/v1${path}`, { method: method as 'GET', ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    const text = await answer.body.text();
    return { status: answer.statusCode, json: text === '' ? undefined : (JSON.parse(text) as unknown) };
  };
  const problem = (kind: PoolProblem['kind'], environmentId: number, match: RegExp): Promise<PoolProblem> =>
    new Promise((resolve) => {
      const found = (): PoolProblem | undefined => problems.find((p) => p.kind === kind && p.environmentId === environmentId && match.test(p.message));
      const check = (): void => {
        const hit = found();
        if (hit) {
          subscription.unsubscribe();
          resolve(hit);
        }
      };
      const subscription = pools.problems$.subscribe(() => setImmediate(check));
      check();
    });

  beforeAll(async () => {
    await namespace.create();
    supervisor = createSupervisor({ nomad: nomadConfigFromEnv(namespace.liveEnv()) });
    pools = createRunnerPools(supervisor, { shell: '/bin/sh', backoff: { initialMs: 2_000, maxMs: 8_000 } });
    pools.problems$.subscribe((p) => problems.push(p));
    // The runner jobs as Nomad stores them, from its own event stream.
    supervisor.followJobs({ handle: (job, deleted) => void (deleted || registered.push(job)) });
    await pools.ready;
    server = await startApiServer(new PoseidonApi({ pools, environmentDefaults: { driver: 'raw_exec' } }), { listen: { host: '127.0.0.1', port: 0 } });
  });
  afterAll(async () => {
    await server.close();
    for (const id of ids) await pools.deleteEnvironment(id).catch(() => undefined);
    await supervisor.stop();
    await nomad.close();
    await namespace.remove();
  });

  it("a runner that cannot start: Nomad's reason in the problem (the log), /health and POST /runners", async () => {
    const [id] = ids as [number];
    const began = performance.now();
    // raw_exec refuses a config key it does not know when the task starts: Nomad's "Failed Validation".
    await pools.putEnvironment({ id, prewarmingPoolSize: 1, driver: 'raw_exec', cpuLimit: 20, driverConfig: { no_such_option: true } });
    const failed = await problem('runner-failed', id, /no_such_option/);
    recordFigure({ name: 'runner start failure: reason reported after (ms)', value: performance.now() - began, where: 'poolSemantics' });
    expect(failed.message).toMatch(new RegExp(`^environment ${id}: runner ${id}-[0-9a-f-]+: the allocation failed: default-task: Failed Validation: .*No argument or block type is named "no_such_option".*; trying again in 2 s$`));
    const health = await call('GET', '/health');
    expect(health).toEqual({ status: 503, json: { message: expect.stringMatching(new RegExp(`environment ${id}: .*Failed Validation.*no_such_option`)), errorCode: 'PREWARMING_POOL_DEPLETING' } });
    const claim = await call('POST', '/runners', { executionEnvironmentId: id, inactivityTimeout: 60 });
    expect(claim).toEqual({ status: 500, json: { message: expect.stringMatching(/^no runners available for this execution environment: .*no_such_option/), errorCode: 'NOMAD_OVERLOAD' } });
    expect(await pools.deleteEnvironment(id)).toBe(true);
    expect((await call('GET', '/health')).status).toBe(204);
  });

  it('a re-PUT replaces the idle runners, keeps the used one; docker runners it starts pull their image (force_pull in the job Nomad stores)', async () => {
    const [, id] = ids as [number, number];
    await pools.putEnvironment({ id, prewarmingPoolSize: 2, driver: 'raw_exec', cpuLimit: 20 });
    await until(pools, () => pools.environment(id)?.idleRunners === 2);
    const used = pools.claim(id, { inactivityTimeoutS: 0 });
    await until(pools, () => pools.environment(id)?.idleRunners === 2);
    const idleBefore = pools.environment(id)!.runners.filter((r) => r.state === 'idle').map((r) => r.id);
    // The same spec again, as CodeOcean re-syncs on every save.
    expect(await pools.putEnvironment({ id, prewarmingPoolSize: 2, driver: 'raw_exec', cpuLimit: 20 })).toEqual({ created: false });
    await until(pools, () => {
      const idle = pools.environment(id)?.runners.filter((r) => r.state === 'idle').map((r) => r.id) ?? [];
      return idle.length === 2 && idle.every((r) => !idleBefore.includes(r));
    });
    for (const runner of idleBefore) await expect(nomad.getJob(runner)).rejects.toThrow();
    expect(used.state).toBe('used');
    expect((await nomad.getJob(used.id)).body.TaskGroups?.find((g) => g.Name === 'config')?.Meta).toMatchObject({ used: 'true' });

    // Now as docker: the template update stands (its own placement only reported), the replacements pull.
    const since = registered.length;
    await pools.putEnvironment({ id, prewarmingPoolSize: 2, driver: 'docker', image: 'busybox:latest', cpuLimit: 20 });
    const missing = await problem('runner-failed', id, /missing drivers/);
    expect(missing.message).toMatch(/Task Group "default-group" \(failed to place 1 allocation\): \* Nodes evaluated: 1, filtered: 1, exhausted: 0 \* Constraint "missing drivers": 1 nodes excluded by filter/);
    const dockerRunners = registered.slice(since).filter((job) => job.ID.startsWith(`${id}-`) && job.TaskGroups?.[0]?.Tasks[0]?.Driver === 'docker');
    expect(dockerRunners.length).toBeGreaterThanOrEqual(2);
    // The two a PUT starts pull their image; a refill after a failure does not.
    expect(dockerRunners.slice(0, 2).map((job) => job.TaskGroups?.[0]?.Tasks[0]?.Config)).toEqual([
      expect.objectContaining({ image: 'busybox:latest', force_pull: true }),
      expect.objectContaining({ image: 'busybox:latest', force_pull: true }),
    ]);
    const template = registered.slice(since).find((job) => job.ID === `template-${id}`);
    expect(template?.TaskGroups?.[0]?.Tasks[0]?.Config).toMatchObject({ image: 'busybox:latest', force_pull: true });
    expect(used.state).toBe('used');
    await used.destroy();
  });
});
