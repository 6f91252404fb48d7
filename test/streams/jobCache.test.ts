import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { firstValueFrom, from, toArray } from 'rxjs';
import { VirtualClock } from '../../src/clock/index.js';
import { NomadClient } from '../../src/nomad/client.js';
import type { EventBatch } from '../../src/nomad/eventStream.js';
import { isDeploymentEvent } from '../../src/nomad/eventFrames.js';
import type { Allocation, Job } from '../../src/nomad/types.js';
import { JobCache, JobUnavailableError } from '../../src/streams/jobCache.js';
import { joinJobs } from '../../src/streams/joinJobs.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { scenarioJob } from '../nomad/support.js';
import { replayThroughStream, scenario } from './replayHarness.js';

/** Paths of the HTTP requests undici sends, read from its diagnostics channel (the real wire). */
function recordRequests(): { paths: string[]; stop: () => void } {
  const paths: string[] = [];
  const listener = (message: unknown): void => void paths.push((message as { request: { path: string } }).request.path);
  subscribe('undici:request:create', listener);
  return { paths, stop: () => unsubscribe('undici:request:create', listener) };
}

/** An allocation as the event stream carries it: no Job. */
function asStreamed(allocation: Allocation): Allocation {
  const { Job: _job, ...rest } = allocation;
  return rest as Allocation;
}

describe('JobCache', () => {
  let clock: VirtualClock;
  let fake: FakeNomad;
  let client: NomadClient;
  let requests: ReturnType<typeof recordRequests>;

  beforeEach(async () => {
    clock = new VirtualClock({ start: 1_795_971_900_000 });
    fake = await FakeNomad.start({ clock });
    client = new NomadClient({ address: fake.address }, { clock });
    requests = recordRequests();
  });
  afterEach(async () => {
    requests.stop();
    await client.close();
    await fake.close();
  });

  function placed(job: Job, count: number): Allocation[] {
    fake.cluster.registerJob(job);
    return fake.cluster.placeAllocations(job.ID, { count }).map(asStreamed);
  }

  it('serves 60 concurrent allocations of one version with one request for the job (and one for its deployment)', async () => {
    const job = scenarioJob('many_allocs');
    const allocations = placed(job, 60);
    const cache = new JobCache(client, { clock });
    const jobs = await Promise.all(allocations.map((a) => cache.jobFor(a)));
    expect(new Set(jobs.map((j) => `${j.ID}@${j.Version}`))).toEqual(new Set([`${job.ID}@0`]));
    const jobRequests = requests.paths.filter((p) => p.startsWith('/v1/job/'));
    const deploymentRequests = requests.paths.filter((p) => p.startsWith('/v1/deployment/'));
    expect(jobRequests).toHaveLength(1);
    expect(deploymentRequests.length).toBeLessThanOrEqual(1);

    // Later allocations of the same version: no request at all.
    await Promise.all(allocations.map((a) => cache.jobFor(a)));
    expect(requests.paths.filter((p) => p.startsWith('/v1/job/'))).toHaveLength(1);
  });

  it('needs no request for a version a Job event already carried', async () => {
    const job = scenarioJob('healthy_task_states');
    const allocations = placed(job, 3);
    const cache = new JobCache(client, { clock });
    const current = fake.cluster.job(job.ID)!;
    const deployment = fake.cluster.deployment(allocations[0]!.DeploymentID!)!;
    cache.observe({ Topic: 'Job', Type: 'JobRegistered', Key: job.ID, Namespace: 'default', FilterKeys: null, Index: 1, Payload: { Job: current } });
    cache.observe({ Topic: 'Deployment', Type: 'PlanResult', Key: deployment.ID, Namespace: 'default', FilterKeys: [job.ID], Index: 1, Payload: { Deployment: deployment } });
    const jobs = await Promise.all(allocations.map((a) => cache.jobFor(a)));
    expect(jobs.every((j) => j === current)).toBe(true);
    expect(requests.paths).toEqual([]);
  });

  it('reports an allocation whose job is gone, remembers the failure for its TTL, then asks again', async () => {
    const job = scenarioJob('failed_task');
    const allocations = placed(job, 2);
    fake.cluster.deregisterJob(job.ID, { purge: true });
    const cache = new JobCache(client, { clock, failureTtlMs: 10_000 });
    const outcomes = await Promise.allSettled(allocations.map((a) => cache.jobFor({ ...a, DeploymentID: '' })));
    for (const outcome of outcomes) {
      expect(outcome.status).toBe('rejected');
      expect((outcome as PromiseRejectedResult).reason).toBeInstanceOf(JobUnavailableError);
    }
    const count = (): number => requests.paths.filter((p) => p.startsWith('/v1/job/')).length;
    expect(count()).toBe(1);
    await expect(cache.jobFor({ ...allocations[0]!, DeploymentID: '' })).rejects.toBeInstanceOf(JobUnavailableError);
    expect(count()).toBe(1);
    clock.advance(10_001);
    await expect(cache.jobFor({ ...allocations[0]!, DeploymentID: '' })).rejects.toBeInstanceOf(JobUnavailableError);
    expect(count()).toBe(2);
  });

  it('joinJobs delivers an allocation without its job with the reason instead of failing the stream', async () => {
    const job = scenarioJob('failed_task');
    const [allocation] = placed(job, 1);
    fake.cluster.deregisterJob(job.ID, { purge: true });
    const batch: EventBatch = {
      index: 9,
      resync: false,
      events: [{ Topic: 'Allocation', Type: 'PlanResult', Key: allocation!.ID, Namespace: 'default', FilterKeys: [job.ID, ''], Index: 9, Payload: { Allocation: { ...allocation!, DeploymentID: '' } } }],
    };
    const joined = await firstValueFrom(from([batch]).pipe(joinJobs(new JobCache(client, { clock })), toArray()));
    expect(joined).toHaveLength(1);
    expect(joined[0]!.job).toBeUndefined();
    expect(joined[0]!.jobError).toBeInstanceOf(JobUnavailableError);
    expect(joined[0]!.jobError!.message).toContain(job.ID);
  });
});

describe('joinJobs over a replayed rolling update', () => {
  it('joins every allocation with the job version of its deployment, without a request per allocation', async () => {
    const recorded = scenario('rolling_update');
    const run = await replayThroughStream(recorded);
    const clock = new VirtualClock();
    const fake = await FakeNomad.start({ clock });
    const client = new NomadClient({ address: fake.address }, { clock });
    const requests = recordRequests();
    try {
      const joined = await firstValueFrom(from(run.batches).pipe(joinJobs(new JobCache(client, { clock })), toArray()));
      expect(joined.length).toBeGreaterThan(6);
      expect(joined.every((j) => j.job !== undefined)).toBe(true);
      const deploymentVersions = new Map<string, number>();
      for (const batch of run.batches) {
        for (const event of batch.events) if (isDeploymentEvent(event)) deploymentVersions.set(event.Key, event.Payload.Deployment.JobVersion);
      }
      for (const { allocation, job } of joined) {
        expect(job!.Version).toBe(deploymentVersions.get(allocation.DeploymentID!));
      }
      expect(new Set(joined.map((j) => j.job!.Version))).toEqual(new Set([0, 1]));
      // Job and Deployment events of the stream carried everything: no request was needed.
      expect(requests.paths).toEqual([]);
    } finally {
      requests.stop();
      await client.close();
      await fake.close();
    }
  });
});
