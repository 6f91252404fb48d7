/**
 * The supervisor over FakeNomad + FakeConsul on one VirtualClock: groups with health_check =
 * "checks" are judged from Consul's checks, in Nomad's words, through one blocking query.
 */
import { driveTo } from '../supervisor/support/harness.js';
import { checkedJob, startConsulHarness } from './harness.js';

const START = Date.UTC(2026, 10, 29, 19);

describe('the supervisor judges check-based groups from Consul', () => {
  test('healthy only once the checks have passed for min_healthy_time, at the time they did', async () => {
    const h = await startConsulHarness(START);
    try {
      h.nomad.cluster.registerJob(checkedJob('web', [{ name: 'web', checks: [{ name: 'alive' }, { name: 'ready' }] }]));
      const [alloc] = h.nomad.cluster.placeAllocations('web');
      const { checkIds } = h.consul.registerService({ allocId: alloc!.ID, task: 'main', service: 'web', checks: [{ name: 'alive' }, { name: 'ready' }] });
      h.nomad.cluster.startTask(alloc!.ID);
      await driveTo(h.clock, START + 5_000);
      expect(h.verdicts).toEqual([]);
      h.consul.setStatus(checkIds[0]!, 'passing');
      await driveTo(h.clock, START + 6_000);
      h.consul.setStatus(checkIds[1]!, 'passing');
      await driveTo(h.clock, START + 7_999);
      expect(h.verdicts).toEqual([]);
      await driveTo(h.clock, START + 8_500);
      expect(h.verdicts.map((v) => v.outcome)).toEqual([{ healthy: true, at: START + 8_000, reasons: {} }]);
      await expect(h.supervisor.waitForDeployment('web')).resolves.toMatchObject({ ok: true });
    } finally {
      await h.close();
    }
  });
});
