/** The jobs test/live/runnerPools.test.ts registers on the real agent, checked offline as FakeNomad validates them. */
import { checkEnvironmentSpec, runnerJob, templateJob } from '../../src/runners/poseidonFormat.js';
import { useFake } from '../testing/helpers.js';

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
