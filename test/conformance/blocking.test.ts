/**
 * Blocking queries (command/agent/http.go parseWait, nomad/rpc.go blockingRPC): the query meta
 * headers, an answer as soon as the watched index passes the one given, or after `wait` (plus up to
 * wait/16 of jitter) with the data unchanged.
 */
import { register, rawExecJob } from './support/scenario.js';
import { useTarget, type Answer } from './support/target.js';

interface JobBody {
  ModifyIndex: number;
  JobModifyIndex: number;
  Version: number;
  Meta?: Record<string, string> | null;
}

const indexOf = (answer: Answer): number => Number(answer.headers['x-nomad-index']);

describe('blocking queries', () => {
  const target = useTarget();

  test('reads carry X-Nomad-Index, X-Nomad-Knownleader and X-Nomad-Lastcontact; writes only X-Nomad-Index', async () => {
    const id = target.jobId('meta');
    const written = await target.request('PUT', '/v1/jobs', { Job: rawExecJob(id, { type: 'batch', count: 0 }) });
    expect(written.status).toBe(200);
    const body = written.json<{ Index: number; KnownLeader: boolean; LastContact: number; JobModifyIndex: number; EvalCreateIndex: number; Warnings: string }>();
    expect(Object.keys(body).sort()).toEqual(['EvalCreateIndex', 'EvalID', 'Index', 'JobModifyIndex', 'KnownLeader', 'LastContact', 'Warnings']);
    expect(body).toMatchObject({ KnownLeader: false, LastContact: 0, Warnings: '' });
    expect([body.JobModifyIndex, body.EvalCreateIndex]).toEqual([body.Index, body.Index]);
    expect(indexOf(written)).toBe(body.Index);
    expect(written.headers['x-nomad-knownleader']).toBeUndefined();
    expect(written.headers['x-nomad-lastcontact']).toBeUndefined();
    // A list's index is its table's last write: the register wrote the jobs and evaluations tables;
    // the allocations and deployments tables may never have been written on a fresh agent (index 0).
    const reads: [string, number][] = [
      ['/v1/jobs', body.Index], [`/v1/job/${id}`, body.Index], [`/v1/job/${id}/evaluations`, body.Index], ['/v1/evaluations', body.Index],
      [`/v1/job/${id}/allocations`, 0], ['/v1/allocations', 0], ['/v1/deployments', 0],
    ];
    for (const [path, least] of reads) {
      const read = await target.request('GET', path);
      expect([path, read.status, read.headers['x-nomad-knownleader'], read.headers['x-nomad-lastcontact']]).toEqual([path, 200, 'true', '0']);
      expect([path, Number.isInteger(indexOf(read)) && indexOf(read) >= least]).toEqual([path, true]);
    }
    // A single object reports its own ModifyIndex.
    const job = await target.request('GET', `/v1/job/${id}`);
    expect(indexOf(job)).toBe(job.json<JobBody>().ModifyIndex);
  });

  test('a blocking read of a job answers once the job changes, with its new ModifyIndex', async () => {
    const id = target.jobId('block');
    await target.request('PUT', '/v1/jobs', { Job: rawExecJob(id, { type: 'batch', count: 0 }) });
    const before = await target.request('GET', `/v1/job/${id}`);
    const index = indexOf(before);
    const blocked = target.request('GET', `/v1/job/${id}?index=${index}&wait=20s`);
    const changed = await register(target, rawExecJob(id, { type: 'batch', count: 0, meta: { a: '1' } }));
    // The job's status (set once its first evaluation is done) moves its ModifyIndex too, and may land
    // after `before` was read (seen on Nomad 1.1.2): that is a change the read answers with, the same
    // version at a later ModifyIndex; the next read, from its index, brings the new version.
    let answer = await target.within('the blocked read', 25_000, blocked);
    let last = index;
    for (let reads = 1; ; reads++) {
      const body = answer.json<JobBody>();
      expect([answer.status, indexOf(answer) > last, indexOf(answer)]).toEqual([200, true, body.ModifyIndex]);
      if (body.Version === 1 || reads === 3) break;
      expect(body.Version === 0 && body.ModifyIndex > body.JobModifyIndex).toBe(true);
      last = indexOf(answer);
      answer = await target.within('the next blocking read', 25_000, target.request('GET', `/v1/job/${id}?index=${last}&wait=20s`));
    }
    expect(answer.json<JobBody>()).toMatchObject({ Version: 1, JobModifyIndex: changed.JobModifyIndex, Meta: { a: '1' } });
  });

  test('with nothing changing it answers after `wait` (and up to wait/16 of jitter) with the same index and data', async () => {
    const id = target.jobId('wait');
    const written = await register(target, rawExecJob(id, { type: 'batch', count: 0 }));
    // Once its evaluation is done, nothing changes the job any more (the scheduler moved it to dead).
    await target.waitFor<{ Status: string }>('the evaluation done', `/v1/evaluation/${written.EvalID}`, (e) => e.Status === 'complete');
    await target.waitFor<{ Status: string }>('the job dead', `/v1/job/${id}`, (job) => job.Status === 'dead');
    const before = await target.request('GET', `/v1/job/${id}`);
    for (const index of [indexOf(before), indexOf(before) + 1_000_000]) {
      const started = target.now();
      const answer = await target.within('the wait', 5_000, target.request('GET', `/v1/job/${id}?index=${index}&wait=1s`));
      const waited = target.now() - started;
      expect(answer.status).toBe(200);
      expect(indexOf(answer)).toBe(indexOf(before));
      expect(answer.json<JobBody>().ModifyIndex).toBe(before.json<JobBody>().ModifyIndex);
      expect(waited).toBeGreaterThanOrEqual(1_000);
      expect(waited).toBeLessThan(1_000 + 1_000 / 16 + 400);
    }
  });

  test('a list reports its table\'s index, at or above the ModifyIndex of everything in it', async () => {
    const id = target.jobId('list');
    await register(target, rawExecJob(id, { count: 2 }));
    const stubs = await target.waitFor<{ ModifyIndex: number }[]>('two allocations', `/v1/job/${id}/allocations`, (list) => list.length === 2);
    const answer = await target.request('GET', `/v1/job/${id}/allocations`);
    for (const stub of stubs) expect(indexOf(answer)).toBeGreaterThanOrEqual(stub.ModifyIndex);
    const jobs = await target.request('GET', '/v1/jobs');
    expect(indexOf(jobs)).toBeGreaterThanOrEqual(indexOf(await target.request('GET', `/v1/job/${id}`)));
  });

  test('a blocking read of a job not registered yet answers 404s until it is, then the job', async () => {
    const id = target.jobId('later');
    const missing = await target.request('GET', `/v1/job/${id}`);
    expect(missing.status).toBe(404);
    let index = indexOf(missing);
    const reads: Answer[] = [];
    const loop = (async (): Promise<Answer> => {
      for (;;) {
        const answer = await target.request('GET', `/v1/job/${id}?index=${Math.max(index, 1)}&wait=5s`);
        reads.push(answer);
        if (answer.status === 200) return answer;
        index = indexOf(answer);
      }
    })();
    await register(target, rawExecJob(id, { type: 'batch', count: 0 }));
    const found = await target.within('the job to appear', 20_000, loop);
    expect(found.json<JobBody>().Version).toBe(0);
    for (const read of reads.slice(0, -1)) expect([read.status, read.text]).toEqual([404, 'job not found']);
  });
});
