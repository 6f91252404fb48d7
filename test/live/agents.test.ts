/**
 * The tier itself: the agents it started are the ones a user runs (Nomad with raw_exec, registering
 * with Consul), on loopback, and a job placed on them runs and is cleaned away.
 */
import { request } from 'undici';
import { liveAgents, uniqueJobId, useLiveJobs, waitFor } from './support/live.js';
import { serviceJob } from '../testing/helpers.js';
import type { Job } from '../../src/nomad/types.js';

describe('the live tier', () => {
  const jobs = useLiveJobs();

  test('Nomad and Consul dev agents on loopback, Nomad registered in Consul', async () => {
    const { nomad, consul } = liveAgents();
    expect([new URL(nomad).hostname, new URL(consul).hostname]).toEqual(['127.0.0.1', '127.0.0.1']);
    const services = (await (await request(`${consul}/v1/catalog/services`)).body.json()) as Record<string, unknown>;
    expect(Object.keys(services)).toEqual(expect.arrayContaining(['consul', 'nomad', 'nomad-client']));
  });

  test('a raw_exec service job runs, and Nomad marks its allocations healthy', async () => {
    const id = jobs.track(uniqueJobId('tier'));
    const spec = serviceJob(id);
    (spec.TaskGroups as { Tasks: { Config: Record<string, unknown> }[] }[])[0]!.Tasks[0]!.Config = { command: '/bin/sleep', args: ['300'] };
    await jobs.client.registerJob(spec as unknown as Job);
    const allocations = await waitFor(
      'two allocations Nomad counts healthy',
      (index, waitMs) => jobs.client.jobAllocations(id, { index, waitMs }),
      (list) => list.length === 2 && list.every((a) => a.ClientStatus === 'running' && a.DeploymentStatus?.Healthy === true),
    );
    expect(allocations).toHaveLength(2);
  });
});
