/**
 * Recovery: a Warden restarted over a live cluster rebuilds every environment and runner from the
 * jobs and allocations and reaches the same pool state as one that never stopped. A scripted pool
 * history is played once without a stop (the reference, its state taken after each step), then
 * once per step with a restart right after that step (once everything of it is done, and once in
 * the middle of it): the state after the restart is the reference's at that step, and after the
 * rest of the history the reference's final one.
 */
import { settle } from '../../src/clock/index.js';
import type { Job } from '../../src/nomad/types.js';
import type { RunnerPools } from '../../src/runners/pools.js';
import { startPoolHarness, type PoolHarness } from './support/poolHarness.js';

interface History {
  /** Claim labels → runner IDs (claimed runners keep their IDs across a restart). */
  claims: Map<string, string>;
}

type Step = { name: string; run(h: PoolHarness, history: History): Promise<void> };

const configMeta = (job: Job | undefined): Record<string, string> => job?.TaskGroups?.find((g) => g.Name === 'config')?.Meta ?? {};

const STEPS: Step[] = [
  { name: 'create environment 20 (pool 2)', run: async (h) => void (await h.settled(h.pools.putEnvironment({ id: 20, prewarmingPoolSize: 2, driver: 'raw_exec' }))) },
  { name: 'create environment 21 (pool 1)', run: async (h) => void (await h.settled(h.pools.putEnvironment({ id: 21, prewarmingPoolSize: 1, driver: 'raw_exec' }))) },
  {
    name: 'claim A in 20 (600 s)',
    run: async (h, history) => {
      await h.driveUntil(() => h.pools.environment(20)?.idleRunners === 2);
      history.claims.set('A', h.pools.claim(20, { inactivityTimeoutS: 600 }).id);
    },
  },
  {
    name: 'claim B in 20 (no timeout)',
    run: async (h, history) => {
      await h.driveUntil(() => (h.pools.environment(20)?.idleRunners ?? 0) >= 1);
      history.claims.set('B', h.pools.claim(20, { inactivityTimeoutS: 0 }).id);
    },
  },
  { name: 'grow 20 to 3', run: async (h) => void (await h.settled(h.pools.putEnvironment({ id: 20, prewarmingPoolSize: 3, driver: 'raw_exec' }))) },
  {
    name: "lose an idle runner's allocation in 20",
    run: async (h) => {
      await h.driveUntil(() => h.pools.environment(20)?.idleRunners === 3);
      const idle = h.pools.environment(20)!.runners.filter((r) => r.state === 'idle').sort((a, b) => a.id.localeCompare(b.id))[0]!;
      h.fake.acting!.lose(idle.allocationId!);
    },
  },
  { name: 'destroy A', run: async (h, history) => void (await h.settled(h.pools.requireRunner(history.claims.get('A')!).destroy())) },
  {
    name: 'change the template of 20 (idle runners replaced, B left alone)',
    run: async (h) => void (await h.settled(h.pools.putEnvironment({ id: 20, prewarmingPoolSize: 3, driver: 'raw_exec', cpuLimit: 60 }))),
  },
  { name: 'shrink 21 to 0', run: async (h) => void (await h.settled(h.pools.putEnvironment({ id: 21, prewarmingPoolSize: 0, driver: 'raw_exec' }))) },
  { name: 'delete environment 21', run: async (h) => void (await h.settled(h.pools.deleteEnvironment(21))) },
];

/** The pool state that must agree: runner IDs only where they are meant to survive (claims). */
function poolState(pools: RunnerPools, h: PoolHarness, history: History): unknown {
  const label = new Map([...history.claims].map(([name, id]) => [id, name]));
  return pools.environments().map((environment) => {
    const onCluster = h.fake.cluster.listJobs({ prefix: `${environment.id}-` }).map((stub) => String(stub.ID)).sort();
    return {
      id: environment.id,
      state: environment.state,
      poolSize: environment.spec.prewarmingPoolSize,
      cpu: environment.spec.cpuLimit,
      template: configMeta(h.fake.cluster.job(`template-${environment.id}`)),
      idle: environment.idleRunners,
      provisioning: environment.provisioningRunners,
      used: environment.runners
        .filter((r) => r.state === 'used')
        .map((r) => ({ claim: label.get(r.id) ?? r.id, timeoutS: r.inactivityTimeoutS, meta: configMeta(h.fake.cluster.job(r.id)) }))
        .sort((a, b) => a.claim.localeCompare(b.claim)),
      // Every runner job on the cluster is one of the pool's runners, and the other way round.
      jobsAreRunners: onCluster.join() === environment.runners.map((r) => r.id).sort().join(),
      idleOnCurrentTemplate: environment.runners.filter((r) => r.state === 'idle').every((r) => h.fake.cluster.job(r.id)?.TaskGroups?.[0]?.Tasks[0]?.Resources?.CPU === environment.spec.cpuLimit),
    };
  });
}

/** Lets every write, evaluation and allocation in flight finish. */
async function quiesce(h: PoolHarness): Promise<void> {
  await h.drive(3_000);
  await h.driveUntil(() => h.pools.environments().every((e) => e.provisioningRunners === 0 && e.runners.every((r) => r.state !== 'stopping')), 20_000);
  await h.drive(1_000);
}

describe('recovery from a live cluster', () => {
  jest.setTimeout(120_000);

  it('a restart after every step of a pool history reaches the state of a Warden that never stopped', async () => {
    const reference: unknown[] = [];
    const referenceRun = await startPoolHarness();
    const history: History = { claims: new Map() };
    try {
      for (const step of STEPS) {
        await step.run(referenceRun, history);
        await quiesce(referenceRun);
        reference.push(poolState(referenceRun.pools, referenceRun, history));
      }
    } finally {
      await referenceRun.close();
    }
    const final = reference.at(-1);

    // Restarted once everything of the step is done, and once in the middle of it: right after the
    // writes it issued were answered, with the cluster's own work (placements, kills) still to come.
    for (const settledFirst of [true, false]) {
      for (let at = 0; at < STEPS.length; at++) {
        const h = await startPoolHarness();
        const restarted: History = { claims: new Map() };
        const when = `${settledFirst ? 'settled' : 'mid-flight'} restart after ${STEPS[at]!.name}`;
        try {
          for (const step of STEPS.slice(0, at)) {
            await step.run(h, restarted);
            await quiesce(h);
          }
          await STEPS[at]!.run(h, restarted);
          if (settledFirst) await quiesce(h);
          else await settle(20);
          await h.restart();
          await quiesce(h);
          expect({ when, state: poolState(h.pools, h, restarted) }).toEqual({ when, state: reference[at] });
          for (const step of STEPS.slice(at + 1)) {
            await step.run(h, restarted);
            await quiesce(h);
          }
          expect({ when, final: poolState(h.pools, h, restarted) }).toEqual({ when, final });
        } finally {
          await h.close();
        }
      }
    }
  });

  it('used runners keep their state and timeout; jobs of unknown environments are reported, not deleted', async () => {
    const h = await startPoolHarness();
    try {
      await h.settled(h.pools.putEnvironment({ id: 30, prewarmingPoolSize: 1, driver: 'raw_exec' }));
      await h.driveUntil(() => h.pools.environment(30)?.idleRunners === 1);
      const claimed = h.pools.claim(30, { inactivityTimeoutS: 20 });
      await h.driveUntil(() => configMeta(h.fake.cluster.job(claimed.id)).used === 'true');
      const orphan = { ...h.fake.cluster.job(claimed.id)!, ID: '31-0b6c4b0e-9f1c-4f3c-8c1e-7a0e8d2f4c11', Name: '31-0b6c4b0e-9f1c-4f3c-8c1e-7a0e8d2f4c11' };
      h.fake.cluster.registerJob(orphan);
      await h.drive(2_000);
      await h.restart();
      await quiesce(h);
      const runner = h.pools.requireRunner(claimed.id);
      expect(runner.info()).toMatchObject({ state: 'used', inactivityTimeoutS: 20 });
      expect(h.problems.filter((p) => p.kind === 'orphan-runner').map((p) => p.jobId)).toContain(orphan.ID);
      expect(h.fake.cluster.job(orphan.ID)?.Stop).toBe(false);
      // Its timeout counts from the restart, as Poseidon's recovery does.
      await h.drive(15_000);
      expect(runner.state).toBe('used');
      await h.driveUntil(() => runner.state === 'destroyed', 10_000);
      expect(h.fake.cluster.job(claimed.id)).toBeUndefined();
    } finally {
      await h.close();
    }
  });

  it('idle runners of an older template, and more idle runners than the pool size, are replaced or retired on recovery', async () => {
    const h = await startPoolHarness();
    try {
      await h.settled(h.pools.putEnvironment({ id: 40, prewarmingPoolSize: 3, driver: 'raw_exec' }));
      await h.driveUntil(() => h.pools.environment(40)?.idleRunners === 3);
      const before = h.pools.environment(40)!.runners.map((r) => r.id);
      // As if Warden stopped right after writing a new template (cpu 70, pool 2): its runners not replaced yet.
      await h.supervisor.stop();
      const template = h.fake.cluster.job('template-40')!;
      h.fake.cluster.registerJob({
        ...template,
        TaskGroups: template.TaskGroups!.map((g) =>
          g.Name === 'config' ? { ...g, Meta: { ...g.Meta, prewarmingPoolSize: '2' } } : { ...g, Tasks: g.Tasks.map((t) => ({ ...t, Resources: { ...t.Resources, CPU: 70 } })) },
        ),
      });
      await h.restart();
      await quiesce(h);
      const after = h.pools.environment(40)!;
      expect(after).toMatchObject({ idleRunners: 2, provisioningRunners: 0 });
      expect(after.runners.some((r) => before.includes(r.id))).toBe(false);
      for (const runner of after.runners) expect(h.fake.cluster.job(runner.id)?.TaskGroups?.[0]?.Tasks[0]?.Resources?.CPU).toBe(70);
      for (const id of before) expect(h.fake.cluster.job(id)).toBeUndefined();
    } finally {
      await h.close();
    }
  });
});
