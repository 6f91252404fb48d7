/**
 * A supervisor scoped to some jobs reads, when it lists the cluster (at its start, after a
 * reconnect), only those jobs' allocations in full, and a gate only its job's events: on the real
 * agent, a gate on one job of a cluster with hundreds of allocations ended seconds after Nomad's
 * deployment, fetching every allocation and parsing every event of the cluster first.
 */
import { gate } from '../../src/cli/gateCommand.js';
import { VirtualClock } from '../../src/clock/index.js';
import { NomadClient } from '../../src/nomad/client.js';
import { createSupervisor } from '../../src/supervisor/index.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { serviceJob } from '../testing/helpers.js';
import { driveTo } from './support/harness.js';

test('scoped to one job of a busy cluster, it fetches that job\'s allocations in full, not the cluster\'s', async () => {
  const clock = new VirtualClock({ start: Date.UTC(2026, 11, 1, 10) });
  const fake = await FakeNomad.start({ clock });
  const reads: string[] = [];
  fake.server.on('request', (req: { url?: string }) => {
    if (req.url?.startsWith('/v1/allocation/')) reads.push(req.url);
  });
  for (let i = 0; i < 15; i++) {
    fake.cluster.registerJob(serviceJob(`other-${i}`));
    for (const alloc of fake.cluster.placeAllocations(`other-${i}`)) fake.cluster.startTask(alloc.ID);
  }
  fake.cluster.registerJob(serviceJob('web'));
  const web = fake.cluster.placeAllocations('web');
  for (const alloc of web) fake.cluster.startTask(alloc.ID);
  const nomad = new NomadClient({ address: fake.address }, { clock, gzip: false });
  const supervisor = createSupervisor({ nomad, clock, scope: { jobPrefixes: ['web'] } });
  try {
    await driveTo(clock, clock.now() + 500);
    expect(reads.map((url) => url.split('?')[0]).sort()).toEqual(web.map((alloc) => `/v1/allocation/${alloc.ID}`).sort());
    await driveTo(clock, clock.now() + 3_000);
    expect(supervisor.supervised).toBe(0);
  } finally {
    await supervisor.stop();
    await nomad.close();
    await fake.close();
  }
});

test("a gate asks Nomad for its own job's events only (topics keyed by the job), and reaches its verdict from them", async () => {
  const clock = new VirtualClock({ start: Date.UTC(2026, 11, 1, 11) });
  const fake = await FakeNomad.start({ clock });
  const streams: string[] = [];
  fake.server.on('request', (req: { url?: string }) => {
    if (req.url?.startsWith('/v1/event/stream')) streams.push(decodeURIComponent(req.url));
  });
  fake.cluster.registerJob(serviceJob('web'));
  fake.cluster.registerJob(serviceJob('web-2'));
  const lines: string[] = [];
  let code: number | undefined;
  void gate('web', {}, { env: { NOMAD_ADDR: fake.address }, write: (line) => lines.push(line), clock, transport: { gzip: false } }).then((c) => (code = c));
  try {
    await driveTo(clock, clock.now() + 500);
    for (const job of ['web', 'web-2']) {
      for (const alloc of fake.cluster.placeAllocations(job)) fake.cluster.startTask(alloc.ID);
    }
    await driveTo(clock, clock.now() + 2_500);
    for (const deployment of fake.cluster.listDeployments({ jobId: 'web' })) fake.cluster.setDeploymentStatus(deployment.ID, 'successful');
    for (let i = 0; i < 10 && code === undefined; i++) await driveTo(clock, clock.now() + 1_000);
    expect(streams).toHaveLength(1);
    expect(new URLSearchParams(streams[0]!.split('?')[1]).getAll('topic')).toEqual(['Job:web', 'Evaluation:web', 'Allocation:web', 'Deployment:web']);
    expect([code, lines]).toEqual([0, ['✔ web version 0: deployment healthy, 2 allocation(s) healthy']]);
  } finally {
    await fake.close();
  }
});
