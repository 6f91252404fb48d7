/**
 * Allocations on a client that stops heartbeating (Nomad 1.3+: ClientStatus `unknown` for the
 * group's max_client_disconnect, 1.8+ disconnect.lost_after), through the whole supervisor over
 * FakeNomad. The client's own tracker goes on while it is away, so nothing time alone decides is
 * said meanwhile; the allocation is reported disconnected; once the client is back, it is judged
 * from the history the client reports, as Nomad's client judged it. The server's disconnect
 * settings decide when it is lost (stopped, no verdict); a replacement is judged on its own.
 */
import { started, notRestarting, exited } from '../../src/testing/nomad/taskEvents.js';
import type { FakeNomadVersion } from '../../src/testing/fakeNomad.js';
import { NomadClient } from '../../src/nomad/client.js';
import { createSupervisor, type VerdictRecord } from '../../src/supervisor/index.js';
import { serviceJob } from '../testing/helpers.js';
import { SETTLE_MS, driveTo, notRunningByDeadline, startHarness, type Harness } from './support/harness.js';

const START = Date.UTC(2026, 10, 29, 20);
/** serviceJob: min_healthy_time 2 s, healthy_deadline 20 s. */
const LOST_AFTER_MS = 300_000;

/** One allocation of a job whose group keeps a disconnected client's allocations for LOST_AFTER_MS. */
function disconnectable(id: string, block: 'max_client_disconnect' | 'disconnect'): Record<string, unknown> {
  const base = serviceJob(id);
  const [group] = base.TaskGroups as Record<string, unknown>[];
  const window = block === 'disconnect' ? { Disconnect: { LostAfter: LOST_AFTER_MS * 1e6 } } : { MaxClientDisconnect: LOST_AFTER_MS * 1e6 };
  return { ...base, TaskGroups: [{ ...group, Count: 1, ...window }] };
}

async function placed(harness: Harness, id: string, block: 'max_client_disconnect' | 'disconnect' = 'disconnect') {
  const { cluster } = harness.fake;
  cluster.registerJob(disconnectable(id, block));
  const [alloc] = cluster.placeAllocations(id);
  await driveTo(harness.clock, START + 300);
  cluster.receiveAllocation(alloc!.ID);
  return alloc!;
}

/** Placed, its task running from START + 300, its client gone at START + 1,000. */
async function awayWhileRunning(harness: Harness, block: 'max_client_disconnect' | 'disconnect') {
  const alloc = await placed(harness, 'web', block);
  harness.fake.cluster.startTask(alloc.ID);
  await driveTo(harness.clock, START + 1_000);
  harness.fake.clients.disconnect(alloc.ID);
  return alloc;
}

const outcomes = (harness: Harness) => harness.verdicts.map((verdict) => verdict.outcome);

describe.each<[FakeNomadVersion, 'max_client_disconnect' | 'disconnect']>([
  ['1.6.3', 'max_client_disconnect'],
  ['2.0', 'disconnect'],
])('Nomad %s (%s)', (version, block) => {
  let harness: Harness;
  beforeEach(async () => {
    harness = await startHarness(START, {}, undefined, { version });
  });
  afterEach(() => harness.close());

  test('running when its client goes away: disconnected, no verdict however long; healthy at the time its data gives once the client is back', async () => {
    const alloc = await awayWhileRunning(harness, block);
    await driveTo(harness.clock, START + 1_000 + SETTLE_MS);
    expect(harness.supervisor.supervisedAllocation(alloc.ID)?.state).toBe('disconnected');
    expect(harness.changes.at(-1)).toMatchObject({ to: 'disconnected', at: START + 1_000 });
    // Past min_healthy_time and the deadline: nothing said.
    await driveTo(harness.clock, START + 120_000);
    expect(outcomes(harness)).toEqual([]);
    harness.fake.clients.reconnect(alloc.ID);
    await driveTo(harness.clock, START + 120_000 + SETTLE_MS);
    expect(outcomes(harness)).toEqual([{ healthy: true, at: START + 2_300, reasons: {} }]);
    expect(harness.problems).toEqual([]);
  });

  test('pending when its client goes away, started meanwhile: healthy, not unhealthy at a deadline it met', async () => {
    const alloc = await placed(harness, 'web', block);
    harness.fake.clients.disconnect(alloc.ID);
    await driveTo(harness.clock, START + 3_000);
    harness.fake.clients.whileAway(alloc.ID, { main: started() });
    // The deadline (20 s from Received) passes while the client is away.
    await driveTo(harness.clock, START + 60_000);
    expect(outcomes(harness)).toEqual([]);
    harness.fake.clients.reconnect(alloc.ID);
    await driveTo(harness.clock, START + 60_000 + SETTLE_MS);
    expect(outcomes(harness)).toEqual([{ healthy: true, at: START + 5_000, reasons: {} }]);
  });

  test('still pending when the client comes back after the deadline: unhealthy at the deadline, in Nomad\'s words', async () => {
    const alloc = await placed(harness, 'web', block);
    harness.fake.clients.disconnect(alloc.ID);
    await driveTo(harness.clock, START + 60_000);
    expect(outcomes(harness)).toEqual([]);
    harness.fake.clients.reconnect(alloc.ID);
    await driveTo(harness.clock, START + 60_000 + SETTLE_MS);
    expect(outcomes(harness)).toEqual([{ healthy: false, at: START + 20_300, reasons: { main: notRunningByDeadline(version, 20_000) } }]);
  });

  test('running when its client goes away, failed meanwhile: unhealthy at the failure the client reports', async () => {
    const alloc = await awayWhileRunning(harness, block);
    await driveTo(harness.clock, START + 1_500);
    harness.fake.clients.whileAway(alloc.ID, { main: notRestarting(exited(1)) });
    await driveTo(harness.clock, START + 30_000);
    expect(outcomes(harness)).toEqual([]);
    harness.fake.clients.reconnect(alloc.ID);
    await driveTo(harness.clock, START + 30_000 + SETTLE_MS);
    expect(outcomes(harness)).toEqual([{ healthy: false, at: START + 1_500, reasons: { main: 'Unhealthy because of failed task' } }]);
  });

  test('never back: lost after its group\'s disconnect window, stopped with no verdict; its replacement is judged on its own', async () => {
    await awayWhileRunning(harness, block);
    await driveTo(harness.clock, START + 1_000 + LOST_AFTER_MS - 1);
    expect(outcomes(harness)).toEqual([]);
    await driveTo(harness.clock, START + 1_000 + LOST_AFTER_MS + SETTLE_MS);
    expect(outcomes(harness)).toEqual([{ stopped: true, at: START + 1_000 + LOST_AFTER_MS }]);
    const [replacement] = harness.fake.cluster.placeAllocations('web', { count: 1 });
    const placedAt = harness.clock.now();
    harness.fake.cluster.receiveAllocation(replacement!.ID);
    harness.fake.cluster.startTask(replacement!.ID);
    await driveTo(harness.clock, placedAt + 2_000 + SETTLE_MS);
    expect(harness.verdicts.find((v) => v.alloc.allocId === replacement!.ID)?.outcome).toEqual({ healthy: true, at: placedAt + 2_000, reasons: {} });
  });

  test('a supervisor started while the client is away says the same as one that watched throughout', async () => {
    const alloc = await awayWhileRunning(harness, block);
    await driveTo(harness.clock, START + 40_000);
    const nomad = new NomadClient({ address: harness.fake.address }, { clock: harness.clock, gzip: false });
    const late = createSupervisor({ nomad, clock: harness.clock });
    const lateVerdicts: VerdictRecord[] = [];
    late.verdicts$.subscribe((verdict) => lateVerdicts.push(verdict));
    try {
      await driveTo(harness.clock, START + 40_000 + SETTLE_MS);
      expect(late.supervisedAllocation(alloc.ID)?.state).toBe('disconnected');
      expect(lateVerdicts).toEqual([]);
      harness.fake.clients.reconnect(alloc.ID);
      await driveTo(harness.clock, START + 40_000 + 2 * SETTLE_MS);
      const healthy = { healthy: true, at: START + 2_300, reasons: {} };
      expect(outcomes(harness)).toEqual([healthy]);
      expect(lateVerdicts.map((verdict) => verdict.outcome)).toEqual([healthy]);
    } finally {
      await late.stop();
      await nomad.close();
    }
  });
});

describe('where a client cannot be disconnected', () => {
  test.each<FakeNomadVersion>(['1.1.2', '1.6.3'])('Nomad %s, a group with no disconnect window: lost at once, stopped with no verdict', async (version) => {
    const harness = await startHarness(START, {}, undefined, { version });
    try {
      const { cluster } = harness.fake;
      cluster.registerJob(serviceJob('web', { TaskGroups: [{ ...(serviceJob('x').TaskGroups as object[])[0], Count: 1 }] }));
      const [alloc] = cluster.placeAllocations('web');
      await driveTo(harness.clock, START + 300);
      cluster.receiveAllocation(alloc!.ID);
      cluster.startTask(alloc!.ID);
      await driveTo(harness.clock, START + 1_000);
      harness.fake.clients.disconnect(alloc!.ID);
      await driveTo(harness.clock, START + 1_000 + SETTLE_MS);
      expect(harness.fake.cluster.allocation(alloc!.ID)).toMatchObject({ ClientStatus: 'lost', DesiredStatus: 'stop' });
      expect(outcomes(harness)).toEqual([{ stopped: true, at: START + 1_000 }]);
    } finally {
      await harness.close();
    }
  });
});
