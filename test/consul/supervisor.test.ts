/**
 * The supervisor over FakeNomad + FakeConsul on one VirtualClock: groups with health_check =
 * "checks" are judged from Consul's checks, in Nomad's words, through one blocking query.
 */
import { SETTLE_MS, driveTo } from '../supervisor/support/harness.js';
import { checkedJob, startConsulHarness } from './harness.js';
import { createSupervisor } from '../../src/supervisor/index.js';
import { NomadClient } from '../../src/nomad/client.js';
import type { VerdictRecord } from '../../src/supervisor/types.js';

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
      await driveTo(h.clock, START + 7_999 + SETTLE_MS);
      expect(h.verdicts).toEqual([]);
      await driveTo(h.clock, START + 8_500 + SETTLE_MS);
      expect(h.verdicts.map((v) => v.outcome)).toEqual([{ healthy: true, at: START + 8_000, reasons: {} }]);
      h.nomad.cluster.setDeploymentStatus(alloc!.DeploymentID!, 'successful');
      await expect(h.supervisor.waitForDeployment('web')).resolves.toMatchObject({ ok: true, healthy: [alloc!.ID] });
    } finally {
      await h.close();
    }
  });
});

describe('a watch started after Nomad decided', () => {
  test("checks keep no past: Nomad's recorded verdict, at its time, not min_healthy_time after the first look", async () => {
    const h = await startConsulHarness(START);
    const nomad = new NomadClient({ address: h.nomad.address }, { clock: h.clock, gzip: false });
    let late: ReturnType<typeof createSupervisor> | undefined;
    try {
      h.nomad.cluster.registerJob(checkedJob('web', [{ name: 'web', checks: [{ name: 'alive' }] }]));
      const [alloc] = h.nomad.cluster.placeAllocations('web');
      const { checkIds } = h.consul.registerService({ allocId: alloc!.ID, task: 'main', service: 'web', checks: [{ name: 'alive' }] });
      h.nomad.cluster.startTask(alloc!.ID);
      h.consul.setStatus(checkIds[0]!, 'passing');
      // Nomad's client: healthy min_healthy_time after the check passed (and 3 ms of its own lag).
      await driveTo(h.clock, START + 2_003);
      h.nomad.cluster.setAllocHealth(alloc!.ID, true);
      await driveTo(h.clock, START + 10_000);
      late = createSupervisor({ nomad, clock: h.clock, consul: h.client });
      const verdicts: VerdictRecord[] = [];
      late.verdicts$.subscribe((record) => verdicts.push(record));
      await driveTo(h.clock, START + 10_500);
      // Watched from the start: its own verdict (from its looks at the checks). Started late: Nomad's, marked as such.
      expect(h.verdicts.map((v) => v.outcome)).toEqual([{ healthy: true, at: expect.any(Number), reasons: {} }]);
      expect(verdicts.map((v) => v.outcome)).toEqual([{ healthy: true, at: START + 2_003, reasons: {}, basis: 'nomad' }]);
    } finally {
      await late?.stop();
      await nomad.close();
      await h.close();
    }
  });
});

describe('verdicts at the deadline, in Nomad\'s words', () => {
  const deadline = START + 20_000;

  test('a critical check: "Services not healthy by deadline"; a missing one: "Only N out of M"; none: "Service checks not registered"', async () => {
    const h = await startConsulHarness(START);
    try {
      h.nomad.cluster.registerJob(checkedJob('web', [{ name: 'web', checks: [{ name: 'alive' }, { name: 'ready' }] }], { count: 3 }));
      const [critical, partial, missing] = h.nomad.cluster.placeAllocations('web');
      for (const alloc of [critical, partial, missing]) h.nomad.cluster.startTask(alloc!.ID);
      const bad = h.consul.registerService({ allocId: critical!.ID, task: 'main', service: 'web', checks: [{ name: 'alive', status: 'passing' }, { name: 'ready', status: 'critical' }] });
      h.consul.registerService({ allocId: partial!.ID, task: 'main', service: 'web', checks: [{ name: 'alive', status: 'passing' }] });
      await driveTo(h.clock, deadline + 500 + SETTLE_MS);
      const reasons = Object.fromEntries(h.verdicts.map((v) => [v.alloc.allocId, v.outcome]));
      expect(reasons[critical!.ID]).toEqual({ healthy: false, at: expect.any(Number), reasons: { main: 'Services not healthy by deadline: web' } });
      expect(reasons[partial!.ID]).toEqual({ healthy: false, at: expect.any(Number), reasons: { main: 'Only 1 out of 2 checks registered and passing' } });
      expect(reasons[missing!.ID]).toEqual({ healthy: false, at: expect.any(Number), reasons: { main: 'Service checks not registered' } });
      expect(bad.checkIds).toHaveLength(2);
    } finally {
      await h.close();
    }
  });

  test('on_update = "ignore_warnings" tolerates a warning but not a critical check', async () => {
    const h = await startConsulHarness(START);
    try {
      h.nomad.cluster.registerJob(checkedJob('web', [{ name: 'web', checks: [{ name: 'alive', onUpdate: 'ignore_warnings' }, { name: 'strict' }] }], { count: 2 }));
      const [warned, failing] = h.nomad.cluster.placeAllocations('web');
      for (const alloc of [warned, failing]) h.nomad.cluster.startTask(alloc!.ID);
      h.consul.registerService({ allocId: warned!.ID, task: 'main', service: 'web', checks: [{ name: 'alive', status: 'warning' }, { name: 'strict', status: 'passing' }] });
      h.consul.registerService({ allocId: failing!.ID, task: 'main', service: 'web', checks: [{ name: 'alive', status: 'critical' }, { name: 'strict', status: 'passing' }] });
      await driveTo(h.clock, deadline + 500 + SETTLE_MS);
      const outcome = (id: string) => h.verdicts.find((v) => v.alloc.allocId === id)?.outcome;
      // Nomad's client first looks at the checks 500 ms after it began watching: they count from then.
      expect(outcome(warned!.ID)).toEqual({ healthy: true, at: START + 2_500, reasons: {} });
      expect(outcome(failing!.ID)).toMatchObject({ healthy: false, reasons: { main: 'Services not healthy by deadline: web' } });
    } finally {
      await h.close();
    }
  });

  test('group services count too; checks of other allocations are not theirs', async () => {
    const h = await startConsulHarness(START);
    try {
      h.nomad.cluster.registerJob(checkedJob('web', [{ name: 'front', checks: [{ name: 'alive' }] }], { group: true, count: 2 }));
      const [mine, other] = h.nomad.cluster.placeAllocations('web');
      for (const alloc of [mine, other]) h.nomad.cluster.startTask(alloc!.ID);
      h.consul.registerService({ allocId: mine!.ID, group: 'app', service: 'front', checks: [{ name: 'alive', status: 'passing' }] });
      await driveTo(h.clock, START + 3_000 + SETTLE_MS);
      expect(h.verdicts.map((v) => [v.alloc.allocId, v.outcome])).toEqual([[mine!.ID, { healthy: true, at: START + 2_500, reasons: {} }]]);
      await driveTo(h.clock, deadline + 500 + SETTLE_MS);
      // A group service's checks have no task to explain them, as in Nomad's tracker.
      expect(h.verdicts.find((v) => v.alloc.allocId === other!.ID)?.outcome).toMatchObject({ healthy: false, reasons: {} });
    } finally {
      await h.close();
    }
  });

  test('without a consul option the group stays unjudged, as before', async () => {
    const h = await startConsulHarness(START, { withoutConsul: true });
    try {
      h.nomad.cluster.registerJob(checkedJob('web', [{ name: 'web', checks: [{ name: 'alive' }] }]));
      const [alloc] = h.nomad.cluster.placeAllocations('web');
      const verdict = h.supervisor.verdict(alloc!.ID).catch((error: unknown) => error);
      await driveTo(h.clock, START + 1_000);
      expect(await verdict).toMatchObject({ name: 'AllocationNotJudgedError' });
      expect(h.consul.stats.requests).toBe(0);
    } finally {
      await h.close();
    }
  });
});

describe('one query for any number of allocations; tokens stay secret', () => {
  test('forty allocations: one blocking query outstanding at a time, about one request per change', async () => {
    const h = await startConsulHarness(START);
    try {
      h.nomad.cluster.registerJob(checkedJob('web', [{ name: 'web', checks: [{ name: 'alive' }] }], { count: 40 }));
      const allocs = h.nomad.cluster.placeAllocations('web');
      for (const alloc of allocs) h.nomad.cluster.startTask(alloc.ID);
      await driveTo(h.clock, START + 500);
      const before = h.consul.stats.requests;
      for (const alloc of allocs) h.consul.registerService({ allocId: alloc.ID, task: 'main', service: 'web', checks: [{ name: 'alive', status: 'passing' }] });
      await driveTo(h.clock, START + 3_000 + SETTLE_MS);
      expect(h.verdicts.filter((v) => 'healthy' in v.outcome && v.outcome.healthy)).toHaveLength(40);
      expect(h.consul.stats.maxInFlight).toBe(1);
      // The forty registrations came in one burst: a handful of answers, not one per allocation.
      expect(h.consul.stats.requests - before).toBeLessThanOrEqual(3);
    } finally {
      await h.close();
    }
  });

  test('a refused Consul token is reported, logged and retried, never written out', async () => {
    const h = await startConsulHarness(START, { token: 'right-token-1234', clientToken: 'wrong-token-9876' });
    try {
      h.nomad.cluster.registerJob(checkedJob('web', [{ name: 'web', checks: [{ name: 'alive' }] }]));
      const [alloc] = h.nomad.cluster.placeAllocations('web');
      h.nomad.cluster.startTask(alloc!.ID);
      await driveTo(h.clock, START + 21_000);
      const refusals = h.logs.filter((line) => line.includes('Consul health query failed') && line.includes('403 (ACL not found)'));
      // Retried with back-off on the clock: several attempts in 21 s, not a hot loop.
      expect(refusals.length).toBeGreaterThan(2);
      expect(refusals.length).toBeLessThan(20);
      expect(h.problems.filter((problem) => problem.kind === 'consul-unavailable')).toHaveLength(refusals.length);
      expect(h.verdicts[0]?.outcome).toMatchObject({ healthy: false, reasons: { main: 'Service checks not registered' } });
      const written = JSON.stringify([h.logs, h.verdicts, h.problems]);
      expect(written).not.toContain('wrong-token-9876');
      expect(written).not.toContain('right-token-1234');
    } finally {
      await h.close();
    }
  });
});
