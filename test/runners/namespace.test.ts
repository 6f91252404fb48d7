/**
 * Pools in a Nomad namespace (NOMAD_NAMESPACE): the template and runner jobs are registered in it —
 * Nomad files a job under its own Namespace whatever the request's ?namespace= says, so before the
 * client set it every job landed in `default` and the pool never saw its runners (measured on Nomad
 * 1.1.2) — and a restart recovers them from it; the default namespace holds nothing.
 */
import { startPoolHarness, type PoolHarness } from './support/poolHarness.js';

describe('runner pools in a namespace', () => {
  let h: PoolHarness;
  beforeAll(async () => {
    h = await startPoolHarness({ namespace: 'team' });
  });
  afterAll(() => h.close());

  it('registers, fills, claims and recovers in its namespace, nothing in default', async () => {
    await h.settled(h.pools.putEnvironment({ id: 4, prewarmingPoolSize: 2, driver: 'raw_exec' }));
    await h.driveUntil(() => h.pools.environment(4)?.idleRunners === 2);
    const jobs = (namespace: string): string[] => h.fake.cluster.listJobs({ namespace }).map((job) => String(job.ID)).sort();
    expect(jobs('team')).toHaveLength(3);
    expect(jobs('team')).toContain('template-4');
    expect(jobs('default')).toEqual([]);
    const runner = h.pools.claim(4);
    // The used mark written behind the claim, in the namespace.
    await h.driveUntil(() => h.fake.cluster.job(runner.id, { namespace: 'team' })?.TaskGroups?.find((g) => g.Name === 'config')?.Meta?.used === 'true');
    await h.restart();
    await h.driveUntil(() => h.pools.environment(4)?.idleRunners === 2);
    expect(h.pools.runner(runner.id)?.state).toBe('used');
    expect(h.pools.environment(4)?.usedRunners).toBe(1);
  });
});
