/**
 * Runner pools end to end over a FakeNomad acting as a cluster: an environment's template and
 * runners in Poseidon's format, the warm pool kept at its size, claims served from it at once and
 * marked used in the job's meta in place, executions and files in the runner's own directory, the
 * inactivity timeout destroying a runner and the pool refilling.
 */
import type { Job } from '../../src/nomad/types.js';
import { NoIdleRunnerError, UnknownEnvironmentError } from '../../src/runners/errors.js';
import { collect, startPoolHarness, type PoolHarness } from './support/poolHarness.js';

describe('runner pools over FakeNomad', () => {
  let h: PoolHarness;
  beforeEach(async () => {
    h = await startPoolHarness();
  });
  afterEach(() => h.close());

  const configMeta = (job: Job | undefined): Record<string, string> | null | undefined => job?.TaskGroups?.find((g) => g.Name === 'config')?.Meta;

  it('creates an environment: template-<id>, a warm pool of <id>-<uuid> runners in Poseidon format', async () => {
    const put = await h.settled(h.pools.putEnvironment({ id: 7, prewarmingPoolSize: 3, driver: 'raw_exec' }));
    expect(put).toEqual({ created: true });
    const template = h.fake.cluster.job('template-7');
    expect(template?.TaskGroups?.map((g) => [g.Name, g.Count])).toEqual([['default-group', 1], ['config', 0]]);
    expect(configMeta(template)).toEqual({ used: 'false', prewarmingPoolSize: '3' });
    await h.driveUntil(() => h.pools.environment(7)?.idleRunners === 3);
    const info = h.pools.environment(7)!;
    expect(info).toMatchObject({ state: 'active', idleRunners: 3, usedRunners: 0, provisioningRunners: 0 });
    for (const runner of info.runners) {
      expect(runner.id).toMatch(/^7-[0-9a-f-]{36}$/);
      const job = h.fake.cluster.job(runner.id);
      expect(job?.TaskGroups?.[0]?.Tasks[0]).toMatchObject({ Name: 'default-task', Driver: 'raw_exec', Config: { command: 'sleep', args: ['infinity'] } });
      expect(configMeta(job)).toEqual({ used: 'false' });
    }
    expect(h.pools.statistics()).toEqual({ '7': { id: 7, prewarmingPoolSize: 3, idleRunners: 3, usedRunners: 0 } });
  });

  it('claims from the warm pool at once, marks the runner used in place, refills the pool', async () => {
    await h.settled(h.pools.putEnvironment({ id: 8, prewarmingPoolSize: 2, driver: 'raw_exec' }));
    await h.driveUntil(() => h.pools.environment(8)?.idleRunners === 2);
    const runner = h.pools.claim(8, { inactivityTimeoutS: 30 });
    expect(runner.state).toBe('used');
    expect(h.pools.environment(8)).toMatchObject({ idleRunners: 1, usedRunners: 1 });
    const allocBefore = h.fake.cluster.listAllocations({ jobId: runner.id })[0]!;
    await h.driveUntil(() => configMeta(h.fake.cluster.job(runner.id))?.used === 'true');
    expect(configMeta(h.fake.cluster.job(runner.id))).toEqual({ used: 'true', timeout: '30' });
    await h.drive(1_000);
    const allocAfter = h.fake.cluster.listAllocations({ jobId: runner.id });
    expect(allocAfter.map((a) => a.ID)).toEqual([allocBefore.ID]);
    expect(allocAfter[0]?.ClientStatus).toBe('running');
    await h.driveUntil(() => h.pools.environment(8)?.idleRunners === 2);
    expect(h.pools.environment(8)?.usedRunners).toBe(1);
  });

  it('runs a command, writes, lists and reads files in the runner', async () => {
    await h.settled(h.pools.putEnvironment({ id: 9, prewarmingPoolSize: 1, driver: 'raw_exec' }));
    await h.driveUntil(() => h.pools.environment(9)?.idleRunners === 1);
    const runner = h.pools.claim(9, { inactivityTimeoutS: 60 });
    const execution = runner.execute({ command: 'echo "hi $NAME"; echo oops >&2; exit 3', env: { NAME: 'there' }, privileged: true });
    const [stdout, stderr, outcome] = await Promise.all([collect(execution.stdout), collect(execution.stderr), execution.outcome]);
    expect({ stdout, stderr, outcome }).toEqual({ stdout: 'hi there\n', stderr: 'oops\n', outcome: { status: 'exited', exitCode: 3 } });
    await (runner.updateFiles({ copy: [{ path: 'src/main.py', content: 'print(1)\n' }, { path: 'empty/' }] }));
    const files = await (runner.listFiles({ privileged: true }));
    expect(files.map((f) => [f.name, f.entryType, f.size, f.permissions])).toEqual(
      expect.arrayContaining([['./empty', 'd', expect.any(Number), 'rwxrwxrwt'], ['./src/main.py', '-', 9, 'rwxr--r--']]),
    );
    const file = await (runner.readFile('src/main.py', { privileged: true }));
    expect(file.header.size).toBe(9);
    expect(await collect(file.content)).toBe('print(1)\n');
    await expect(runner.readFile('missing.txt', { privileged: true })).rejects.toThrow('file not found');
    await (runner.updateFiles({ delete: ['src'] }));
    const after = await (runner.listFiles({ privileged: true }));
    expect(after.map((f) => f.name)).not.toContain('./src/main.py');
  });

  it('destroys a runner at its inactivity timeout, reset by each operation; the pool refills', async () => {
    await h.settled(h.pools.putEnvironment({ id: 10, prewarmingPoolSize: 1, driver: 'raw_exec' }));
    await h.driveUntil(() => h.pools.environment(10)?.idleRunners === 1);
    const runner = h.pools.claim(10, { inactivityTimeoutS: 5 });
    await h.drive(4_000);
    await (runner.listFiles({ privileged: true }));
    await h.drive(4_000);
    expect(runner.state).toBe('used');
    await h.driveUntil(() => runner.state === 'destroyed', 3_000);
    expect(h.fake.cluster.job(runner.id)).toBeUndefined();
    await h.driveUntil(() => h.pools.environment(10)?.idleRunners === 1);
    expect(h.pools.environment(10)?.usedRunners).toBe(0);
  });

  it('claims fail clearly: unknown environment, empty pool', async () => {
    expect(() => h.pools.claim(99)).toThrow(UnknownEnvironmentError);
    await h.settled(h.pools.putEnvironment({ id: 11, prewarmingPoolSize: 1, driver: 'raw_exec' }));
    await h.driveUntil(() => h.pools.environment(11)?.idleRunners === 1);
    h.pools.claim(11);
    expect(() => h.pools.claim(11)).toThrow(NoIdleRunnerError);
  });
});
