/**
 * Opt-in (NOMAD_ADDR set): a raw_exec environment end to end against a real Nomad agent (its client
 * needs the raw_exec driver, as `nomad agent -dev` with raw_exec enabled has). Without NOMAD_ADDR
 * this suite does not exist. Waits are on the pools' own changes, bounded by Jest's timeout.
 */
import { randomInt } from 'node:crypto';
import { nomadConfigFromEnv } from '../../src/nomad/config.js';
import { NomadHttpError } from '../../src/nomad/errors.js';
import { createRunnerPools, type RunnerPools } from '../../src/runners/pools.js';
import { createSupervisor } from '../../src/supervisor/index.js';
import type { Supervisor } from '../../src/supervisor/supervisor.js';
import { checkEnvironmentSpec, runnerJob, templateJob } from '../../src/runners/poseidonFormat.js';
import { describeLive, liveClient } from '../cli/support/liveNomad.js';
import { collect } from './support/poolHarness.js';
import { useFake } from '../testing/helpers.js';

function until(pools: RunnerPools, done: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    if (done()) return resolve();
    const subscription = pools.changes$.subscribe(() => {
      if (done()) {
        subscription.unsubscribe();
        resolve();
      }
    });
  });
}

describeLive('runner pools against a real Nomad (NOMAD_ADDR)', () => {
  jest.setTimeout(180_000);
  let supervisor: Supervisor;
  let pools: RunnerPools;
  const id = randomInt(900_000, 999_999);

  beforeAll(async () => {
    supervisor = createSupervisor({ nomad: nomadConfigFromEnv(process.env) });
    pools = createRunnerPools(supervisor, { shell: '/bin/sh' });
    await pools.ready;
  });
  afterAll(async () => {
    await pools.deleteEnvironment(id).catch(() => undefined);
    await supervisor.stop();
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
    const nomad = liveClient();
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

describe('the jobs the live suite registers, offline', () => {
  const env = useFake();

  it('the raw_exec template and runner jobs pass Nomad 1.1.2 job validation (FakeNomad checks them as the agent does)', () => {
    const spec = checkEnvironmentSpec({ id: 900_001, prewarmingPoolSize: 2, driver: 'raw_exec', cpuLimit: 20 });
    const template = env.fake.cluster.registerJob(templateJob(spec)).job;
    const runner = env.fake.cluster.registerJob(runnerJob(spec, '900001-0b6c4b0e-9f1c-4f3c-8c1e-7a0e8d2f4c11')).job;
    for (const job of [template, runner]) {
      expect(job.Type).toBe('batch');
      expect(job.TaskGroups?.map((g) => [g.Name, g.Count, g.Tasks.map((t) => t.Driver)])).toEqual([['default-group', 1, ['raw_exec']], ['config', 0, ['raw_exec']]]);
    }
    expect(template.TaskGroups?.[1]?.Meta).toEqual({ used: 'false', prewarmingPoolSize: '2' });
    expect(runner.TaskGroups?.[1]?.Meta).toEqual({ used: 'false' });
  });
});
