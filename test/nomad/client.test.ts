import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VirtualClock } from '../../src/clock/index.js';
import { NomadClient } from '../../src/nomad/client.js';
import { nomadConfigFromEnv } from '../../src/nomad/config.js';
import { NomadHttpError, NomadTimeoutError } from '../../src/nomad/errors.js';
import { watchQuery } from '../../src/nomad/blockingQuery.js';
import type { AllocationListStub } from '../../src/nomad/types.js';
import type { NomadResponse } from '../../src/nomad/transport.js';
import { UnixNanos } from '../../src/nomad/unixNanos.js';
import { FakeNomad } from '../../src/testing/fakeNomad.js';
import { fixtures, resolveWhile, scenarioJob, until } from './support.js';

describe('NomadClient against FakeNomad over loopback', () => {
  let clock: VirtualClock;
  let fake: FakeNomad;
  let client: NomadClient;

  beforeEach(async () => {
    clock = new VirtualClock({ start: 1_795_971_900_000 });
    fake = await FakeNomad.start({ clock });
    client = new NomadClient({ address: fake.address }, { clock });
  });

  afterEach(async () => {
    await client.close();
    await fake.close();
  });

  it('registers, reads, lists, places and deregisters a job with Nomad-shaped answers', async () => {
    const job = scenarioJob('healthy_task_states');
    const registered = await client.registerJob({ ...job, Version: undefined, CreateIndex: undefined, ModifyIndex: undefined, JobModifyIndex: undefined });
    expect(registered.EvalID).toMatch(/^[0-9a-f-]{36}$/);
    expect(registered.Warnings).toBe('');

    const { body: read, meta } = await client.getJob(job.ID);
    expect(read.ID).toBe(job.ID);
    expect(read.Version).toBe(0);
    expect(read.SubmitTime).toBeInstanceOf(UnixNanos);
    expect(meta.lastIndex).toBeGreaterThan(0);
    expect(meta.knownLeader).toBe(true);

    expect((await client.listJobs(job.ID.slice(0, 4))).body.map((stub) => stub.ID)).toEqual([job.ID]);
    expect((await client.listJobs('no-such-prefix')).body).toEqual([]);

    fake.cluster.placeAllocations(job.ID);
    const allocations = (await client.jobAllocations(job.ID)).body;
    expect(allocations.length).toBe(job.TaskGroups![0]!.Count);
    const full = (await client.getAllocation(allocations[0]!.ID)).body;
    expect(full.Job?.ID).toBe(job.ID);
    expect((await client.getEvaluation(registered.EvalID)).body.ID).toBe(registered.EvalID);
    const deployment = (await client.getDeployment(full.DeploymentID!)).body;
    expect(deployment.JobID).toBe(job.ID);

    const stopped = await client.deregisterJob(job.ID, { purge: true });
    expect(stopped.EvalID).toMatch(/^[0-9a-f-]{36}$/);
    await expect(client.getJob(job.ID)).rejects.toMatchObject({ status: 404, body: 'job not found' });
  });

  it('parses HCL through /v1/jobs/parse into the job Nomad would register', async () => {
    const hcl = readFileSync(join(fixtures, 'scenarios', 'healthy_task_states', 'job.hcl'), 'utf8');
    const parsed = await client.parseJob(hcl, { canonicalize: true });
    expect(parsed.ID).toBe(scenarioJob('healthy_task_states').ID);
    expect(parsed.TaskGroups?.[0]?.Tasks.length).toBeGreaterThan(0);
    await expect(client.parseJob('')).rejects.toMatchObject({ status: 400, body: 'Job spec is empty', method: 'POST', path: '/v1/jobs/parse' });
  });

  it('keeps every version and finds one by number', async () => {
    const job = scenarioJob('rolling_update');
    const v1 = scenarioJob('rolling_update', 'job.v1.json');
    await client.registerJob(job);
    await client.registerJob(v1);
    const versions = (await client.getJobVersions(job.ID)).body.Versions.map((j) => j.Version).sort();
    expect(versions).toEqual([0, 1]);
    expect((await client.getJobVersion(job.ID, 0))?.Version).toBe(0);
    expect((await client.getJobVersion(job.ID, 1))?.Version).toBe(1);
    expect(await client.getJobVersion(job.ID, 7)).toBeUndefined();
  });

  it('honours EnforceIndex: create-only and compare-and-set, with a recognisable conflict', async () => {
    const job = scenarioJob('failed_task');
    const first = await client.registerJob(job, { enforceIndex: 0 });
    const again = client.registerJob(job, { enforceIndex: 0 });
    await expect(again).rejects.toBeInstanceOf(NomadHttpError);
    const conflict = (await again.catch((e: unknown) => e)) as NomadHttpError;
    expect(conflict.isEnforceIndexConflict).toBe(true);
    expect(conflict.method).toBe('PUT');
    expect(conflict.path).toBe('/v1/jobs');
    const changed = { ...job, Meta: { change: '1' } };
    const second = await client.registerJob(changed, { enforceIndex: first.JobModifyIndex });
    expect(second.JobModifyIndex).toBeGreaterThan(first.JobModifyIndex);
  });

  it('reports Nomad errors with status, method, path and the plain-text body', async () => {
    const error = (await client.getAllocation('f0f0f0f0-0000-0000-0000-000000000000').catch((e: unknown) => e)) as NomadHttpError;
    expect(error).toBeInstanceOf(NomadHttpError);
    expect(error).toMatchObject({ status: 404, method: 'GET', path: '/v1/allocation/f0f0f0f0-0000-0000-0000-000000000000', body: 'alloc not found' });
    expect(error.message).toBe('Nomad GET /v1/allocation/f0f0f0f0-0000-0000-0000-000000000000: 404 (alloc not found)');
    const bad = (await client.registerJob({ ID: '' }).catch((e: unknown) => e)) as NomadHttpError;
    expect(bad.status).toBeGreaterThanOrEqual(400);
    fake.faults.failRequests({ status: 503, body: 'No cluster leader', path: '/v1/jobs' });
    await expect(client.listJobs()).rejects.toMatchObject({ status: 503, body: 'No cluster leader' });
  });

  it('promotes a canary deployment, repeating the ID in the body as Nomad requires', async () => {
    const job = scenarioJob('rolling_update');
    await client.registerJob(job);
    const [canary] = fake.cluster.placeAllocations(job.ID, { canary: true, count: 1 });
    const promoted = await client.promoteDeployment(canary!.DeploymentID!);
    expect(promoted.EvalID).toMatch(/^[0-9a-f-]{36}$/);
    expect(promoted.DeploymentModifyIndex).toBeGreaterThan(0);
  });

  it('blocks on an index until the data changes, and waits out Nomad\'s wait without a new emission', async () => {
    const job = scenarioJob('batch_job');
    await client.registerJob(job);
    const seen: NomadResponse<AllocationListStub[]>[] = [];
    const subscription = watchQuery<AllocationListStub[]>((index, signal) => client.jobAllocations(job.ID, { index, waitMs: 5_000, signal }), { clock }).subscribe((r) => seen.push(r));
    try {
      await until(clock, () => seen.length === 1, 'first answer');
      expect(seen[0]!.body).toEqual([]);
      clock.advance(20_000); // several waits time out with the same index: no emission
      await until(clock, () => true, 'settle');
      expect(seen).toHaveLength(1);
      fake.cluster.placeAllocations(job.ID);
      await until(clock, () => seen.length === 2, 'answer after the placement');
      expect(seen[1]!.body.length).toBeGreaterThan(0);
      expect(seen[1]!.meta.lastIndex).toBeGreaterThan(seen[0]!.meta.lastIndex);
    } finally {
      subscription.unsubscribe();
    }
  });

  it('times out on the injected clock and aborts through an AbortSignal', async () => {
    const job = scenarioJob('batch_job');
    await client.registerJob(job);
    const { meta } = await client.getJob(job.ID);
    const slow = client.getJob(job.ID, { index: meta.lastIndex, waitMs: 60_000, timeoutMs: 1_000 });
    await expect(resolveWhile(clock, slow, 'timeout')).rejects.toBeInstanceOf(NomadTimeoutError);

    const controller = new AbortController();
    const aborted = client.getJob(job.ID, { index: meta.lastIndex, waitMs: 60_000, signal: controller.signal });
    controller.abort(new Error('caller gave up'));
    await expect(aborted).rejects.toThrow('caller gave up');
  });
});

describe('NomadClient over a unix:// address', () => {
  it('dials the socket path (Nomad agents can listen on one)', async () => {
    const fake = await FakeNomad.start();
    const dir = mkdtempSync(join(tmpdir(), 'warden-unix-'));
    const socketPath = join(dir, 'nomad.sock');
    const { port } = new URL(fake.address);
    // The agent side of the socket: a byte pipe to FakeNomad's TCP port.
    const bridge = createServer((socket) => socket.pipe(connect(Number(port), '127.0.0.1')).pipe(socket));
    await new Promise<void>((resolve) => bridge.listen(socketPath, resolve));
    const client = new NomadClient(nomadConfigFromEnv({ NOMAD_ADDR: `unix://${socketPath}` }));
    try {
      await client.registerJob(scenarioJob('batch_job'));
      expect((await client.listJobs()).body.map((j) => j.ID)).toEqual([scenarioJob('batch_job').ID]);
    } finally {
      await client.close();
      await new Promise((resolve) => bridge.close(resolve));
      bridge.unref();
      await fake.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('watchQuery when the index goes backwards', () => {
  it('starts again from scratch against a restored cluster instead of blocking on an index it will never reach', async () => {
    const clock = new VirtualClock({ start: 1_795_971_900_000 });
    const before = await FakeNomad.start({ clock, initialIndex: 5_000 });
    const restored = await FakeNomad.start({ clock, initialIndex: 10 });
    const clients = [before, restored].map((fake) => new NomadClient({ address: fake.address }, { clock }));
    const job = scenarioJob('batch_job');
    before.cluster.registerJob(job);
    before.cluster.placeAllocations(job.ID);
    restored.cluster.registerJob(job);
    restored.cluster.placeAllocations(job.ID);
    let target = 0;
    const answers: number[] = [];
    const subscription = watchQuery<AllocationListStub[]>((index, signal) => clients[target]!.jobAllocations(job.ID, { index, waitMs: 10_000, signal }), { clock }).subscribe((r) => answers.push(r.meta.lastIndex));
    try {
      await until(clock, () => answers.length === 1, 'first answer');
      expect(answers[0]).toBeGreaterThanOrEqual(5_000);
      target = 1; // the cluster behind the address was restored from an older snapshot
      await until(clock, () => answers.length >= 2, 'answer from the restored cluster', { maxMs: 60_000 });
      expect(answers[1]).toBeLessThan(answers[0]!);
      // Blocking on the restored cluster's index through several waits: nothing new, nothing repeated.
      const later = clock.now() + 30_000;
      await until(clock, () => clock.now() >= later, '30 s of blocking queries');
      expect(answers).toHaveLength(2);
    } finally {
      subscription.unsubscribe();
      await Promise.all(clients.map((c) => c.close()));
      await before.close();
      await restored.close();
    }
  });
});
