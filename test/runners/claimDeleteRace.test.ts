/**
 * Issue 19's claim/delete race: a runner destroyed while the used mark of its claim is on its way.
 * Nomad checks a register's EnforceIndex before it applies it (racingRegister.ts plays that order on
 * FakeNomad), so a purge sent beside the mark could be applied first and the mark then re-create the
 * job. The writes to one runner job go out in order, and a runner job re-created behind Warden's
 * back (a write that raced a purge some other way) is found on the event stream and at recovery,
 * purged and reported.
 */
import { configMeta } from '../../src/runners/poseidonFormat.js';
import type { Job } from '../../src/nomad/types.js';
import { racingRegister, type RacingRegister } from './support/racingRegister.js';
import { startPoolHarness, type PoolHarness } from './support/poolHarness.js';

const ENVIRONMENT = 40;

async function warmPool(h: PoolHarness, size = 1): Promise<void> {
  await h.settled(h.pools.putEnvironment({ id: ENVIRONMENT, prewarmingPoolSize: size, driver: 'raw_exec' }));
  await h.driveUntil(() => h.pools.environment(ENVIRONMENT)?.idleRunners === size);
}

/** A copy of a runner job as a used mark that landed after its purge leaves it: used, at version 0. */
function recreated(job: Job): Job {
  const { Version: _version, JobModifyIndex: _modify, ModifyIndex: _index, CreateIndex: _create, ...spec } = job;
  return {
    ...spec,
    TaskGroups: (job.TaskGroups ?? []).map((group) => (group.Name === 'config' ? { ...group, Meta: { ...group.Meta, used: 'true', timeout: '0' } } : group)),
  };
}

/** A runner claimed, its used mark in Nomad, then destroyed: its job as the mark left it. */
async function markedThenDestroyed(h: PoolHarness): Promise<{ id: string; job: Job }> {
  await warmPool(h);
  const runner = h.pools.claim(ENVIRONMENT, { inactivityTimeoutS: 0 });
  await h.driveUntil(() => configMeta(h.fake.cluster.job(runner.id) ?? { ID: runner.id }).used === 'true');
  const job = h.fake.cluster.job(runner.id)!;
  await h.settled(runner.destroy());
  return { id: runner.id, job };
}

const recreatedProblems = (h: PoolHarness): (string | undefined)[] => h.problems.filter((p) => p.kind === 'recreated-runner').map((p) => p.jobId);

describe('claim then destroy at once', () => {
  jest.setTimeout(60_000);

  it('the purge waits for the used mark on its way: the job is not re-created', async () => {
    let race: RacingRegister | undefined;
    const h = await startPoolHarness({ wire: (fake) => (race = racingRegister(fake)).layer });
    try {
      await warmPool(h);
      const idle = h.pools.environment(ENVIRONMENT)!.runners[0]!.id;
      const hold = race!.holdNext(idle);
      const runner = h.pools.claim(ENVIRONMENT, { inactivityTimeoutS: 0 });
      expect(runner.id).toBe(idle);
      await h.settled(hold.held);
      // The client's DELETE right after its claim, with the mark checked by Nomad but not applied yet.
      const destroyed = runner.destroy();
      await h.drive(1_000);
      expect(h.fake.cluster.job(idle)).toBeDefined();
      hold.release();
      await h.settled(destroyed);
      await h.drive(3_000);
      expect(h.fake.cluster.job(idle)).toBeUndefined();
      expect(recreatedProblems(h)).toEqual([]);
      // The pool is whole again, and every runner job on the cluster is one of its runners.
      await h.driveUntil(() => h.pools.environment(ENVIRONMENT)?.idleRunners === 1);
      const runnerJobs = h.fake.cluster.listJobs({}).map((job) => String(job.ID)).filter((id) => id.startsWith(`${ENVIRONMENT}-`));
      expect(runnerJobs).toEqual(h.pools.environment(ENVIRONMENT)!.runners.map((r) => r.id));
    } finally {
      await h.close();
    }
  });

  it('a purged runner job written again is found on the event stream and purged', async () => {
    const h = await startPoolHarness();
    try {
      const { id, job } = await markedThenDestroyed(h);
      // The mark of a claim (or any write Warden sent before its purge) landing after it.
      h.fake.cluster.registerJob({ ...job, TaskGroups: job.TaskGroups });
      await h.driveUntil(() => h.fake.cluster.job(id) === undefined, 5_000);
      expect(recreatedProblems(h)).toEqual([id]);
      expect(h.problems.find((p) => p.kind === 'recreated-runner')?.message).toMatch(/written again after Warden purged it.*purged$/);
      expect(h.pools.statistics()[String(ENVIRONMENT)]).toMatchObject({ usedRunners: 0 });
    } finally {
      await h.close();
    }
  });

  it('after a restart, a runner job used at version 0 is purged, not adopted as a used runner', async () => {
    const h = await startPoolHarness();
    try {
      const { id, job } = await markedThenDestroyed(h);
      // Re-created while no Warden ran (its purge not remembered by the next one).
      await h.supervisor.stop();
      h.fake.cluster.registerJob(recreated(job));
      expect(h.fake.cluster.job(id)).toMatchObject({ Version: 0 });
      await h.restart();
      await h.drive(3_000);
      expect(h.fake.cluster.job(id)).toBeUndefined();
      expect(h.pools.runner(id)).toBeUndefined();
      expect(recreatedProblems(h)).toEqual([id]);
      expect(h.pools.statistics()[String(ENVIRONMENT)]).toMatchObject({ usedRunners: 0, idleRunners: 1 });
    } finally {
      await h.close();
    }
  });

  it('a runner job of a known environment that is not Warden\'s is reported once and left alone', async () => {
    const h = await startPoolHarness();
    try {
      await warmPool(h);
      const template = h.fake.cluster.job(h.pools.environment(ENVIRONMENT)!.runners[0]!.id)!;
      const stranger = `${ENVIRONMENT}-0b6c4b0e-9f1c-4f3c-8c1e-7a0e8d2f4c11`;
      h.fake.cluster.registerJob({ ...recreated(template), ID: stranger, Name: stranger, TaskGroups: template.TaskGroups });
      await h.drive(2_000);
      h.fake.cluster.registerJob({ ...h.fake.cluster.job(stranger)!, Meta: { touched: 'yes' } });
      await h.drive(2_000);
      expect(h.problems.filter((p) => p.jobId === stranger).map((p) => p.kind)).toEqual(['unknown-runner']);
      expect(h.fake.cluster.job(stranger)?.Stop).toBe(false);
    } finally {
      await h.close();
    }
  });
});
