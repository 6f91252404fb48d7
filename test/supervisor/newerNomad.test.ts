/**
 * The supervisor against newer Nomads (nomad-protocol §10; Nomad's own service checks, 1.4+, are
 * test/nomadChecks'): a deployment that is `initializing` (1.5+) is not an end; allocations on a disconnected client
 * (ClientStatus unknown, 1.3+) are judged from their tasks as Nomad's tracker does.
 */
import { DeploymentWatch } from '../../src/deployments/deploymentWatch.js';
import type { Deployment } from '../../src/nomad/types.js';
import { serviceJob } from '../testing/helpers.js';
import { SETTLE_MS, driveTo, startHarness } from './support/harness.js';

const START = Date.UTC(2026, 10, 29, 19);

test('an allocation whose client disconnects (ClientStatus unknown) while min_healthy_time runs is still judged healthy on time', async () => {
  const h = await startHarness(START);
  try {
    h.fake.cluster.registerJob(serviceJob('web'));
    const [alloc] = h.fake.cluster.placeAllocations('web', { count: 1 });
    await driveTo(h.clock, START + 500);
    h.fake.cluster.startTask(alloc!.ID);
    await driveTo(h.clock, START + 1_000);
    h.fake.cluster.patchAllocation(alloc!.ID, { ClientStatus: 'unknown' });
    await driveTo(h.clock, START + 3_000 + SETTLE_MS);
    expect(h.verdicts.map((v) => v.outcome)).toEqual([{ healthy: true, at: START + 2_500, reasons: {} }]);
    expect(h.problems).toEqual([]);
  } finally {
    await h.close();
  }
});

describe('a deployment that is initializing (Nomad 1.5+)', () => {
  const deployment = (status: string, modifyIndex: number): Deployment =>
    ({
      ID: 'd1', Namespace: 'default', JobID: 'web', JobVersion: 0, Status: status, StatusDescription: `Deployment is ${status}`,
      TaskGroups: status === 'initializing' ? {} : { app: { DesiredTotal: 1, PlacedAllocs: 0, HealthyAllocs: 0, UnhealthyAllocs: 0, DesiredCanaries: 0, Promoted: false, RequireProgressBy: null } },
      CreateIndex: 5, ModifyIndex: modifyIndex,
    }) as unknown as Deployment;

  it('is not an end: the watch follows the deployment through it to Nomad\'s own end', () => {
    const watch = new DeploymentWatch('web', 'default', 0);
    watch.onDeployment(deployment('initializing', 5));
    expect(watch.ended).toBe(false);
    watch.onDeployment(deployment('running', 6));
    watch.onVerdict('a1', 'd1', 'web.app[0]', { healthy: true, at: START, reasons: {} });
    expect(watch.result(0)).toBeUndefined();
    watch.onDeployment(deployment('successful', 7));
    expect(watch.result(0)).toMatchObject({ ok: true, deploymentId: 'd1', healthy: ['a1'] });
  });
});
