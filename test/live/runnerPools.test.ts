/**
 * A raw_exec environment end to end against the live agent. Waits are on the pools' own changes,
 * bounded by Jest's timeout.
 */
import { randomInt } from 'node:crypto';
import { nomadConfigFromEnv } from '../../src/nomad/config.js';
import { NomadHttpError } from '../../src/nomad/errors.js';
import { createRunnerPools, type RunnerPools } from '../../src/runners/pools.js';
import { createSupervisor } from '../../src/supervisor/index.js';
import type { Supervisor } from '../../src/supervisor/supervisor.js';
import { collect } from '../runners/support/poolHarness.js';
import { liveNamespace } from './support/namespace.js';
import { until } from './support/pools.js';

describe('runner pools against a real Nomad', () => {
  let supervisor: Supervisor;
  let pools: RunnerPools;
  const id = randomInt(900_000, 999_999);
  const namespace = liveNamespace('warden-pools');

  beforeAll(async () => {
    await namespace.create();
    supervisor = createSupervisor({ nomad: nomadConfigFromEnv(namespace.liveEnv()) });
    pools = createRunnerPools(supervisor, { shell: '/bin/sh' });
    await pools.ready;
  });
  afterAll(async () => {
    await pools.deleteEnvironment(id).catch(() => undefined);
    await supervisor.stop();
    await namespace.remove();
  });

  it('a raw_exec environment: warm pool, claim, command, files, destroy, delete', async () => {
    expect(await pools.putEnvironment({ id, prewarmingPoolSize: 2, driver: 'raw_exec', cpuLimit: 20 })).toEqual({ created: true });
    await until(pools, () => pools.environment(id)?.idleRunners === 2);
    const runner = pools.claim(id, { inactivityTimeoutS: 120 });
    expect(runner.id).toMatch(new RegExp(`^${id}-[0-9a-f-]{36}$`));

    const execution = runner.execute({ command: 'echo "hi $WHO"; echo err >&2; exit 4', env: { WHO: 'nomad' }, privileged: true, timeLimitS: 30 });
    const [stdout, stderr, outcome] = await Promise.all([collect(execution.stdout), collect(execution.stderr), execution.outcome]);
    expect({ stdout, stderr, outcome }).toEqual({ stdout: 'hi nomad\n', stderr: 'err\n', outcome: { status: 'exited', exitCode: 4 } });

    await runner.updateFiles({ copy: [{ path: 'work/main.sh', content: 'echo from file\n' }] });
    const files = await runner.listFiles({ privileged: true });
    expect(files.find((f) => f.name === './work/main.sh')).toMatchObject({ entryType: '-', size: 15, permissions: 'rwxr--r--' });
    const file = await runner.readFile('work/main.sh', { privileged: true });
    expect(await collect(file.content)).toBe('echo from file\n');
    const ran = runner.execute({ command: 'sh work/main.sh', privileged: true });
    expect(await collect(ran.stdout)).toBe('from file\n');

    const timedOut = runner.execute({ command: 'sleep 60', timeLimitS: 2, privileged: true });
    expect(await timedOut.outcome).toEqual({ status: 'timeout', reason: 'time-limit' });

    // The used mark is in the job's meta (an in-place update: the same allocation runs on).
    const allocation = runner.info()?.allocationId;
    const nomad = namespace.client();
    try {
      const job = (await nomad.getJob(runner.id)).body;
      expect(job.TaskGroups?.find((g) => g.Name === 'config')?.Meta).toMatchObject({ used: 'true', timeout: '120' });
      const allocations = (await nomad.jobAllocations(runner.id)).body.filter((a) => a.ClientStatus === 'running');
      expect(allocations.map((a) => a.ID)).toEqual([allocation]);

      await runner.destroy();
      await expect(nomad.getJob(runner.id)).rejects.toBeInstanceOf(NomadHttpError);
      await until(pools, () => pools.environment(id)?.idleRunners === 2);
      expect(await pools.deleteEnvironment(id)).toBe(true);
      await expect(nomad.getJob(`template-${id}`)).rejects.toBeInstanceOf(NomadHttpError);
      expect((await nomad.listJobs(`${id}-`)).body).toEqual([]);
    } finally {
      await nomad.close();
    }
  });
});
