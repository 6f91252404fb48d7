import { join } from 'node:path';
import { parseLossless } from '../../src/testing/losslessJson.js';
import { listScenarios, readScenario } from '../../src/testing/recording.js';
import { parseJobHcl } from '../../src/testing/nomad/hcl.js';
import { FIXTURES, call, serviceJob, useFake } from './helpers.js';

const SCENARIOS = join(FIXTURES, 'scenarios');
/** Fields the agent sets at registration time: indexes, submit time, status. */
const VOLATILE = ['CreateIndex', 'ModifyIndex', 'JobModifyIndex', 'SubmitTime', 'Status'];

function withoutVolatile(job: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(job).filter(([key]) => !VOLATILE.includes(key)));
}

describe('FakeNomad jobs', () => {
  const env = useFake();

  it.each(listScenarios(SCENARIOS))('%s: job.hcl through /v1/jobs/parse and PUT /v1/jobs is stored as Nomad stored it', async (name) => {
    const scenario = readScenario(join(SCENARIOS, name));
    const parsed = await call(env.fake.address, 'POST', '/v1/jobs/parse', { JobHCL: scenario.hcl });
    expect(parsed.status).toBe(200);
    const registered = await call(env.fake.address, 'PUT', '/v1/jobs', `{"Job":${parsed.text}}`);
    expect(registered.status).toBe(200);
    const stored = await call(env.fake.address, 'GET', `/v1/job/${scenario.meta.job_id}`);
    expect(withoutVolatile(parseLossless(stored.text) as Record<string, unknown>)).toEqual(withoutVolatile(scenario.job as Record<string, unknown>));
  });

  it('parses the HCL subset and names the line of what it cannot parse', () => {
    const job = parseJobHcl(`
      # comment
      job "x" {
        datacenters = ["dc1", "dc2"] // trailing
        meta { owner = "team-a" }
        group "g" {
          count = 3
          restart { attempts = 1
            delay = "1m30s" }
          task "t" {
            driver = "docker"
            env {
              GREETING = "say \\"hi\\""
              LITERAL  = "$\${NOMAD_ALLOC_DIR} and \${NOMAD_TASK_DIR}"
            }
            config {
              args = [
                "a", "b",
              ]
              script = <<-EOT
                echo one
                echo two
              EOT
            }
          }
        }
      }`);
    const group = (job.TaskGroups as Record<string, unknown>[])[0]!;
    const task = (group.Tasks as Record<string, unknown>[])[0]!;
    expect(job.Datacenters).toEqual(['dc1', 'dc2']);
    expect(job.Meta).toEqual({ owner: 'team-a' });
    expect(group.Count).toBe(3);
    expect(group.RestartPolicy).toEqual({ Attempts: 1, Delay: 90e9 });
    expect(task.Env).toEqual({ GREETING: 'say "hi"', LITERAL: '${NOMAD_ALLOC_DIR} and ${NOMAD_TASK_DIR}' });
    expect(task.Config).toEqual({ args: ['a', 'b'], script: 'echo one\necho two\n' });
    expect(() => parseJobHcl('job "x" {\n  count = var.n\n}')).toThrow(/^input\.hcl:2,11: expressions/);
  });

  it('answers an unparsable or empty spec with 400', async () => {
    expect(await call(env.fake.address, 'POST', '/v1/jobs/parse', { JobHCL: '' })).toMatchObject({ status: 400, text: 'Job spec is empty' });
    const broken = await call(env.fake.address, 'POST', '/v1/jobs/parse', { JobHCL: 'job "x" {' });
    expect(broken.status).toBe(400);
    expect(broken.text).toMatch(/^input\.hcl:1,\d+: /);
  });

  it('keeps versions, bumps one only when the spec changes, and honours EnforceIndex', async () => {
    const first = env.fake.cluster.registerJob(serviceJob('web'));
    // The same spec again writes no job, only an evaluation (Job.Register skips the job's raft write).
    const same = env.fake.cluster.registerJob(serviceJob('web'));
    expect(same.job.Version).toBe(0);
    expect(same.job.JobModifyIndex).toBe(first.job.JobModifyIndex);
    expect(same.index).toBeGreaterThan(first.index);
    const changed = env.fake.cluster.registerJob(serviceJob('web', { Meta: { v: '2' } }));
    expect(changed.job.Version).toBe(1);
    const versions = parseLossless((await call(env.fake.address, 'GET', '/v1/job/web/versions')).text) as { Versions: { Version: number }[] };
    expect(versions.Versions.map((v) => v.Version)).toEqual([1, 0]);
    const v0 = parseLossless((await call(env.fake.address, 'GET', '/v1/job/web?version=0')).text) as { Version: number };
    expect(v0.Version).toBe(0);

    const stale = await call(env.fake.address, 'PUT', '/v1/jobs', { Job: serviceJob('web'), EnforceIndex: true, JobModifyIndex: first.job.JobModifyIndex });
    expect(stale.status).toBe(500);
    expect(stale.text).toBe(`Enforcing job modify index ${String(first.job.JobModifyIndex)}: job exists with conflicting job modify index: ${String(changed.job.JobModifyIndex)}`);
    const create = await call(env.fake.address, 'PUT', '/v1/jobs', { Job: serviceJob('web'), EnforceIndex: true, JobModifyIndex: 0 });
    expect(create.text).toBe('Enforcing job modify index 0: job already exists');
    const ok = await call(env.fake.address, 'PUT', '/v1/jobs', { Job: serviceJob('web', { Meta: { v: '3' } }), EnforceIndex: true, JobModifyIndex: changed.job.JobModifyIndex });
    expect(ok.status).toBe(200);
    expect(ok.headers['x-nomad-index']).toBe(String((JSON.parse(ok.text) as { Index: number }).Index));
  });

  it('refuses bad specs with Nomad texts and keeps its state', async () => {
    env.fake.cluster.registerJob(serviceJob('web'));
    const before = env.fake.cluster.index;
    expect(await call(env.fake.address, 'PUT', '/v1/jobs', '{"Job": {"ID": "broken", ')).toMatchObject({ status: 400, text: 'unexpected EOF' });
    expect(await call(env.fake.address, 'PUT', '/v1/jobs', '')).toMatchObject({ status: 400, text: 'Request body is empty' });
    expect(await call(env.fake.address, 'PUT', '/v1/jobs', ' ')).toMatchObject({ status: 400, text: 'EOF' });
    expect(await call(env.fake.address, 'PUT', '/v1/jobs', { Job: { ID: 'x', Datacenters: 'dc1' } })).toMatchObject({
      status: 400, text: 'json: cannot unmarshal string into Go struct field Job.Job.Datacenters of type []string',
    });
    const invalid = await call(env.fake.address, 'PUT', '/v1/jobs', { Job: serviceJob('bad', { Datacenters: [], TaskGroups: [] }) });
    expect(invalid).toMatchObject({ status: 500, text: '2 errors occurred:\n\t* Missing job datacenters\n\t* Missing job task groups\n\n' });
    expect(await call(env.fake.address, 'PUT', '/v1/job/other', { Job: serviceJob('web') })).toMatchObject({ status: 400, text: 'Job ID does not match name' });
    expect(await call(env.fake.address, 'PATCH', '/v1/jobs')).toMatchObject({ status: 405, text: 'Invalid method' });
    expect(await call(env.fake.address, 'GET', '/v1/nothing')).toMatchObject({ status: 404, text: '' });
    expect(await call(env.fake.address, 'GET', '/v1/job/%zz')).toMatchObject({ status: 400, text: 'invalid URL escape "%zz"' });
    expect(await call(env.fake.address, 'PUT', '/v1/jobs', '[1]')).toMatchObject({ status: 400, text: 'json: cannot unmarshal array into Go value of type api.JobRegisterRequest' });
    expect(await call(env.fake.address, 'POST', '/v1/jobs/parse', '"x"')).toMatchObject({ status: 400, text: 'json: cannot unmarshal string into Go value of type api.JobsParseRequest' });
    expect(env.fake.cluster.index).toBe(before);
    expect(env.fake.cluster.job('web')?.ID).toBe('web');
  });

  it('stops a job with a Job event, purges it without one', async () => {
    env.fake.cluster.registerJob(serviceJob('web'));
    const [alloc] = env.fake.cluster.placeAllocations('web');
    const start = env.fake.cluster.index;
    const stopped = await call(env.fake.address, 'DELETE', '/v1/job/web');
    expect(stopped.status).toBe(200);
    expect(env.fake.cluster.job('web')?.Stop).toBe(true);
    expect(env.fake.cluster.allocation(alloc!.ID)?.DesiredStatus).toBe('stop');
    const stopEvents = env.fake.broker.buffered().filter((b) => b.Index > start).flatMap((b) => b.Events);
    expect(stopEvents.find((e) => e.Topic === 'Job')?.Type).toBe('JobDeregistered');
    expect(env.fake.cluster.deployment(alloc!.DeploymentID!)?.Status).toBe('cancelled');

    env.fake.cluster.registerJob(serviceJob('api'));
    const beforePurge = env.fake.cluster.index;
    expect((await call(env.fake.address, 'DELETE', '/v1/job/api?purge=true')).status).toBe(200);
    const purgeEvents = env.fake.broker.buffered().filter((b) => b.Index > beforePurge).flatMap((b) => b.Events);
    expect(purgeEvents.some((e) => e.Topic === 'Job')).toBe(false);
    expect(purgeEvents.find((e) => e.Topic === 'Evaluation')?.Type).toBe('JobDeregistered');
    expect(await call(env.fake.address, 'GET', '/v1/job/api')).toMatchObject({ status: 404, text: 'job not found' });
    // Nomad deregisters a job it does not have all the same: a job-deregister evaluation, completed.
    const again = await call(env.fake.address, 'DELETE', '/v1/job/api');
    expect(again.status).toBe(200);
    expect(env.fake.cluster.evaluation((JSON.parse(again.text) as { EvalID: string }).EvalID)).toMatchObject({ JobID: 'api', TriggeredBy: 'job-deregister', Status: 'complete' });
  });
});
