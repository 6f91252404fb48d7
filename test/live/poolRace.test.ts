/**
 * Issue 19's claim/delete race on the real agent: a runner claimed and destroyed at once, many
 * times. The used mark written behind a claim must never re-create a runner job its destroy purged
 * (Nomad checks EnforceIndex before the raft apply, so a register sent beside a purge can land
 * after it). Counts the runner jobs left on the agent that the pools do not know: must be 0.
 * Waits are on the pools' changes and on Nomad's blocking queries, bounded.
 */
import { randomInt } from 'node:crypto';
import { request } from 'undici';
import { PoseidonApi } from '../../src/api/api.js';
import { startApiServer, type ApiServer } from '../../src/api/server.js';
import { nomadConfigFromEnv } from '../../src/nomad/config.js';
import { createRunnerPools, type PoolProblem, type RunnerPools } from '../../src/runners/pools.js';
import { createSupervisor } from '../../src/supervisor/index.js';
import type { Supervisor } from '../../src/supervisor/supervisor.js';
import { recordFigure } from './support/figures.js';
import { waitFor } from './support/live.js';
import { liveNamespace } from './support/namespace.js';
import { until } from './support/pools.js';

/** WARDEN_LIVE_RACE_ITERATIONS runs a longer loop by hand. */
const ITERATIONS = Number(process.env.WARDEN_LIVE_RACE_ITERATIONS ?? 40);
const POOL_SIZE = 4;

describe('claim then delete at once, on a real Nomad', () => {
  let supervisor: Supervisor;
  let pools: RunnerPools;
  let server: ApiServer;
  const problems: PoolProblem[] = [];
  const id = randomInt(800_000, 899_999);
  const namespace = liveNamespace('warden-race');
  const nomad = namespace.client();

  beforeAll(async () => {
    await namespace.create();
    supervisor = createSupervisor({ nomad: nomadConfigFromEnv(namespace.liveEnv()) });
    pools = createRunnerPools(supervisor, { shell: '/bin/sh' });
    pools.problems$.subscribe((problem) => problems.push(problem));
    await pools.ready;
    server = await startApiServer(new PoseidonApi({ pools }), { listen: { host: '127.0.0.1', port: 0 } });
  });
  afterAll(async () => {
    await server.close();
    await pools.deleteEnvironment(id).catch(() => undefined);
    await supervisor.stop();
    for (const job of (await nomad.listJobs(`${id}-`)).body) await nomad.deregisterJob(job.ID, { purge: true }).catch(() => undefined);
    await nomad.close();
    await namespace.remove();
  });

  it(`${ITERATIONS} claims each destroyed at once leave no runner job behind`, async () => {
    const began = performance.now();
    await pools.putEnvironment({ id, prewarmingPoolSize: POOL_SIZE, driver: 'raw_exec', cpuLimit: 20 });
    await until(pools, () => pools.environment(id)?.idleRunners === POOL_SIZE);
    const destroyed: string[] = [];
    for (let i = 0; i < ITERATIONS; i++) {
      await until(pools, () => (pools.environment(id)?.idleRunners ?? 0) > 0);
      const claim = await request(`${server.url}/api/v1/runners`, { method: 'POST', body: JSON.stringify({ executionEnvironmentId: id, inactivityTimeout: 0 }) });
      const { runnerId } = (await claim.body.json()) as { runnerId: string };
      destroyed.push(runnerId);
      // The DELETE of a client that gave up at once.
      const deleted = await request(`${server.url}/api/v1/runners/${runnerId}`, { method: 'DELETE' });
      await deleted.body.dump();
      expect(deleted.statusCode).toBe(204);
    }
    // The pool refilled, and Nomad's job list quiet for a whole blocking query: nothing more in flight.
    await until(pools, () => pools.environment(id)?.idleRunners === POOL_SIZE);
    let quietAt = 0;
    await waitFor(
      'the job list to stay unchanged for a blocking query',
      async (index, waitMs) => {
        const answer = await nomad.listJobs(`${id}-`, { index, waitMs: Math.max(waitMs, 1_500) });
        quietAt = index > 0 && answer.meta.lastIndex === index ? index : 0;
        return answer;
      },
      () => quietAt > 0,
      60_000,
    );
    const known = new Set(pools.environment(id)?.runners.map((r) => r.id));
    const left = (await nomad.listJobs(`${id}-`)).body.filter((job) => !known.has(job.ID));
    const resurrected = problems.filter((p) => p.kind === 'recreated-runner').length;
    recordFigure({ name: 'claim/delete race: iterations', value: ITERATIONS, where: 'poolRace' });
    recordFigure({ name: 'claim/delete race: leaked runner jobs', value: left.length, where: 'poolRace' });
    recordFigure({ name: 'claim/delete race: re-created jobs found and purged', value: resurrected, where: 'poolRace' });
    recordFigure({ name: 'claim/delete race: loop time (s)', value: (performance.now() - began) / 1000, where: 'poolRace' });
    expect({ left: left.map((job) => `${job.ID} (${job.Status})`), stillThere: destroyed.filter((r) => left.some((job) => job.ID === r)).length }).toEqual({ left: [], stillThere: 0 });
  });
});
