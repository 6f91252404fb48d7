/**
 * The supervisor over a cluster scripted through FakeNomad (not a recording): several namespaces,
 * a task that fails, a stop before health, and allocations that become healthy on the clock.
 */
import { serviceJob } from '../testing/helpers.js';
import { RELEASES, SETTLE_MS, driveTo, notRunningByDeadline, startHarness as startOn, type Harness } from './support/harness.js';

const START = Date.UTC(2026, 10, 29, 18);

function outcomes(harness: Harness): Record<string, string> {
  return Object.fromEntries(
    harness.verdicts.map((v) => [
      `${v.alloc.namespace}/${v.alloc.name}`,
      !('healthy' in v.outcome) ? 'stopped' : v.outcome.healthy ? 'healthy' : `unhealthy ${JSON.stringify(v.outcome.reasons)}`,
    ]),
  );
}

describe.each(RELEASES)('the supervisor over a scripted cluster (Nomad %s)', (version) => {
  const startHarness = (start: number, options: Parameters<typeof startOn>[1] = {}): Promise<Harness> => startOn(start, options, undefined, { version });

  test('two namespaces watched, a third ignored; healthy after min_healthy_time, a failed task at once, a stop unjudged once known', async () => {
    const harness = await startHarness(START, { scope: { namespaces: ['default', 'prod'] } });
    const { cluster } = harness.fake;
    try {
      cluster.registerJob(serviceJob('web'));
      cluster.registerJob(serviceJob('api', { Namespace: 'prod' }), { namespace: 'prod' });
      cluster.registerJob(serviceJob('batchy', { Namespace: 'staging' }), { namespace: 'staging' });
      const web = cluster.placeAllocations('web');
      const api = cluster.placeAllocations('api', { namespace: 'prod' });
      cluster.placeAllocations('batchy', { namespace: 'staging' });
      await driveTo(harness.clock, START + 500);
      for (const alloc of [...web, ...api]) cluster.startTask(alloc.ID);
      await driveTo(harness.clock, START + 1_000);
      cluster.failTask(api[1]!.ID, 'main', { exitCode: 2 });
      cluster.setDesiredStatus(web[1]!.ID, 'stop');
      // The failure is in the data: at once. The stop waits for the client's reaction, or for the
      // settle window to pass without one (its client never reacts in this script).
      await driveTo(harness.clock, START + 1_100);
      expect(outcomes(harness)).toEqual({ 'prod/api.app[1]': 'unhealthy {"main":"Unhealthy because of failed task"}' });
      await driveTo(harness.clock, START + 1_100 + SETTLE_MS);
      expect(outcomes(harness)).toEqual({
        'prod/api.app[1]': 'unhealthy {"main":"Unhealthy because of failed task"}',
        'default/web.app[1]': 'stopped',
      });
      // min_healthy_time is 2 s from the start at +0.5 s: healthy then, said once the window has passed.
      await driveTo(harness.clock, START + 2_499 + SETTLE_MS);
      expect(Object.keys(outcomes(harness))).toHaveLength(2);
      await driveTo(harness.clock, START + 2_600 + SETTLE_MS);
      expect(outcomes(harness)).toMatchObject({ 'default/web.app[0]': 'healthy', 'prod/api.app[0]': 'healthy' });
      const healthyAt = harness.verdicts.filter((v) => 'healthy' in v.outcome && v.outcome.healthy).map((v) => v.outcome.at);
      expect(healthyAt).toEqual([START + 2_500, START + 2_500]);
      expect(harness.verdicts.every((v) => v.alloc.namespace !== 'staging')).toBe(true);
      expect(harness.problems).toEqual([]);
    } finally {
      await harness.close();
    }
  });

  test('a service allocation outside any deployment is judged as Nomad\'s client does: with the migrate block (min_healthy_time 10s)', async () => {
    const harness = await startHarness(START);
    const { cluster } = harness.fake;
    try {
      // max_parallel = 0: the job has no deployments.
      cluster.registerJob(serviceJob('plain', { Update: { MaxParallel: 0 } }));
      const [alloc] = cluster.placeAllocations('plain', { count: 1 });
      expect(alloc!.DeploymentID ?? '').toBe('');
      cluster.startTask(alloc!.ID);
      await driveTo(harness.clock, START + 9_999 + SETTLE_MS);
      expect(harness.verdicts).toEqual([]);
      await driveTo(harness.clock, START + 10_100 + SETTLE_MS);
      expect(harness.verdicts.map((v) => v.outcome)).toEqual([{ healthy: true, at: START + 10_000, reasons: {} }]);
    } finally {
      await harness.close();
    }
  });

  test('a group judged by Consul service checks is left unjudged, with the reason, rather than called unhealthy', async () => {
    const harness = await startHarness(START);
    const { cluster } = harness.fake;
    try {
      const base = serviceJob('checked');
      const group = { ...(base.TaskGroups as object[])[0], Services: [{ Name: 'web', PortLabel: 'http', Checks: [{ Name: 'alive', Type: 'tcp', Interval: 1e9, Timeout: 1e9 }] }] };
      cluster.registerJob({ ...base, Update: { ...(base.Update as object), HealthCheck: 'checks' }, TaskGroups: [group] });
      const [alloc] = cluster.placeAllocations('checked', { count: 1 });
      cluster.startTask(alloc!.ID);
      const verdict = harness.supervisor.verdict(alloc!.ID).catch((error: unknown) => error);
      const deployment = harness.supervisor.waitForDeployment('checked');
      await driveTo(harness.clock, START + 30_000);
      const reason = 'group app is judged by its service checks (health_check = "checks"), which need a Consul source this supervisor does not have';
      expect(await verdict).toMatchObject({ name: 'AllocationNotJudgedError', reason });
      // Nomad's own deployment watcher (which has Consul) still ends the deployment: the gate follows it.
      cluster.setDeploymentStatus(alloc!.DeploymentID!, 'successful');
      await driveTo(harness.clock, START + 30_100);
      await expect(deployment).resolves.toMatchObject({ ok: true, healthy: [] });
      expect(harness.verdicts).toEqual([]);
    } finally {
      await harness.close();
    }
  });

  test('a task not running by healthy_deadline: unhealthy at the deadline counted from when its client received it, in Nomad\'s words', async () => {
    const harness = await startHarness(START);
    const { cluster } = harness.fake;
    try {
      cluster.registerJob(serviceJob('slow', { TaskGroups: [{ ...(serviceJob('x').TaskGroups as object[])[0], Count: 1 }] }));
      const [alloc] = cluster.placeAllocations('slow');
      await driveTo(harness.clock, START + 300);
      cluster.receiveAllocation(alloc!.ID);
      await driveTo(harness.clock, START + 20_299 + SETTLE_MS);
      expect(harness.verdicts).toEqual([]);
      await driveTo(harness.clock, START + 20_400 + SETTLE_MS);
      expect(harness.verdicts.map((v) => v.outcome)).toEqual([
        { healthy: false, at: START + 20_300, reasons: { main: notRunningByDeadline(version, 20_000) } },
      ]);
    } finally {
      await harness.close();
    }
  });

  test('an allocation no client ever received is not judged: Nomad never watches it', async () => {
    const harness = await startHarness(START);
    const { cluster } = harness.fake;
    try {
      cluster.registerJob(serviceJob('orphan', { TaskGroups: [{ ...(serviceJob('x').TaskGroups as object[])[0], Count: 1 }] }));
      const [alloc] = cluster.placeAllocations('orphan');
      await driveTo(harness.clock, START + 60_000);
      expect(harness.verdicts).toEqual([]);
      cluster.setDesiredStatus(alloc!.ID, 'stop');
      await driveTo(harness.clock, START + 61_000);
      await expect(harness.supervisor.verdict(alloc!.ID)).rejects.toMatchObject({ name: 'AllocationNotJudgedError', reason: expect.stringMatching(/before its client ever reported it/) });
    } finally {
      await harness.close();
    }
  });
});
