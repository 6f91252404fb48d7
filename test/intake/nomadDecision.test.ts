/**
 * Nomad's own decision about an allocation (its DeploymentStatus, set by its client) as the
 * supervisor uses it, over FakeNomad on a VirtualClock: it confirms at once that nothing earlier is
 * in flight (the verdict is said when the decision arrives, at the data's time), it is where the
 * verdict comes from when Nomad's 10-event cap has erased the history that would decide, and where
 * Warden's own verdict differs, Warden says so and keeps its own.
 */
import { createSupervisor, type Supervisor } from '../../src/supervisor/index.js';
import type { SupervisorProblem, VerdictRecord } from '../../src/supervisor/types.js';
import type { Allocation } from '../../src/nomad/types.js';
import { driveTo, startHarness, type Harness } from '../supervisor/support/harness.js';
import { serviceJob } from '../testing/helpers.js';

const START = Date.UTC(2026, 11, 1, 9);
const MIN_HEALTHY_MS = 2_000;

const harnesses: Harness[] = [];
afterEach(async () => {
  for (const harness of harnesses.splice(0)) await harness.close();
});

/** A supervisor over a FakeNomad, `web` registered (one allocation per group, task_states, min_healthy_time 2 s, deadline 20 s) and placed. */
async function cluster(prepare?: Parameters<typeof startHarness>[2]): Promise<Harness & { allocs: Allocation[] }> {
  let allocs: Allocation[] = [];
  const harness = await startHarness(START, {}, (fake) => {
    fake.cluster.registerJob(serviceJob('web'));
    allocs = fake.cluster.placeAllocations('web');
    prepare?.(fake);
  });
  harnesses.push(harness);
  return Object.assign(harness, { allocs });
}

const outcomeOf = (verdicts: readonly VerdictRecord[], id: string) => verdicts.find((record) => record.alloc.allocId === id)?.outcome;

/** The allocation restarting `times` times, each run shorter than min_healthy_time: its first events fall off Nomad's cap of 10. */
function restartLoop(harness: Pick<Harness, 'fake' | 'clock'>, id: string, times: number): void {
  for (let i = 0; i < times; i++) {
    harness.clock.advance(500);
    harness.fake.cluster.failTask(id, 'main', { restartDelayMs: 200 });
    harness.clock.advance(200);
    harness.fake.cluster.startTask(id);
  }
}

describe("Nomad's decision on the stream", () => {
  test('confirms at once: the verdict is said as the decision arrives, at its due time, not a settle window later', async () => {
    const harness = await cluster();
    const { fake, clock, verdicts, allocs } = harness;
    const [decided, undecided] = allocs as [Allocation, Allocation];
    await driveTo(clock, START + 200);
    fake.cluster.startTask(decided.ID);
    fake.cluster.startTask(undecided.ID);
    const due = clock.now() + MIN_HEALTHY_MS;
    // Nomad's client decides 4 ms after the due time (its own timer), and syncs it.
    await driveTo(clock, due + 4);
    fake.cluster.setAllocHealth(decided.ID, true);
    await driveTo(clock, due + 10);
    expect(outcomeOf(verdicts, decided.ID)).toEqual({ healthy: true, at: due, reasons: {} });
    // The other allocation's client has said nothing: it waits for the settle window (1 s) as before.
    expect(outcomeOf(verdicts, undecided.ID)).toBeUndefined();
    await driveTo(clock, due + 1_500);
    expect(outcomeOf(verdicts, undecided.ID)).toEqual({ healthy: true, at: due, reasons: {} });
    expect(harness.problems).toEqual([]);
  });

  test("where Warden's history says otherwise, Warden's verdict stands and the difference is reported", async () => {
    const harness = await cluster();
    const { fake, clock, verdicts, allocs } = harness;
    const [alloc] = allocs as [Allocation];
    await driveTo(clock, START + 200);
    fake.cluster.startTask(alloc.ID);
    const due = clock.now() + MIN_HEALTHY_MS;
    await driveTo(clock, due + 4);
    // An operator (or a client that saw something else) records it unhealthy.
    fake.cluster.setAllocHealth(alloc.ID, false);
    await driveTo(clock, due + 10);
    expect(outcomeOf(verdicts, alloc.ID)).toEqual({ healthy: true, at: due, reasons: {} });
    expect(harness.problems).toEqual([
      expect.objectContaining<Partial<SupervisorProblem>>({
        kind: 'nomad-disagrees',
        allocId: alloc.ID,
        message: `allocation ${alloc.ID} (web.app[0]): Warden judged it healthy at ${new Date(due).toISOString()} from its history; Nomad's client recorded unhealthy at ${new Date(due + 4).toISOString()}`,
      }),
    ]);
  });
});

describe("Nomad's recorded verdict where the 10-event cap erased the history", () => {
  /** A supervisor started now on the harness's FakeNomad, its verdicts and problems collected. */
  function lateSupervisor(harness: Harness): { supervisor: Supervisor; verdicts: VerdictRecord[]; problems: SupervisorProblem[] } {
    const supervisor = createSupervisor({ nomad: harness.supervisor.nomad, clock: harness.clock });
    const verdicts: VerdictRecord[] = [];
    const problems: SupervisorProblem[] = [];
    supervisor.verdicts$.subscribe((record) => verdicts.push(record));
    supervisor.problems$.subscribe((problem) => problems.push(problem));
    return { supervisor, verdicts, problems };
  }

  test('healthy, then restarting: a late watch says healthy, as Nomad recorded it, not undetermined; the watch from the start at the data\'s time', async () => {
    const harness = await cluster();
    const { fake, clock, allocs } = harness;
    const [alloc] = allocs as [Allocation];
    await driveTo(clock, START + 200);
    fake.cluster.startTask(alloc.ID);
    const due = clock.now() + MIN_HEALTHY_MS;
    await driveTo(clock, due + 4);
    fake.cluster.setAllocHealth(alloc.ID, true);
    await driveTo(clock, due + 1_000);
    restartLoop(harness, alloc.ID, 5);
    await driveTo(clock, clock.now() + 100);
    expect(outcomeOf(harness.verdicts, alloc.ID)).toEqual({ healthy: true, at: due, reasons: {} });

    const late = lateSupervisor(harness);
    try {
      await driveTo(clock, clock.now() + 500);
      expect(outcomeOf(late.verdicts, alloc.ID)).toEqual({ healthy: true, at: due + 4, reasons: {}, basis: 'nomad' });
      expect(late.problems).toEqual([]);
    } finally {
      await late.supervisor.stop();
    }
  });

  test('still restarting and not decided by Nomad: a late watch waits for its decision (a gate too), then says it with Nomad\'s reason', async () => {
    const harness = await cluster();
    const { fake, clock, allocs } = harness;
    const [alloc] = allocs as [Allocation];
    await driveTo(clock, START + 200);
    fake.cluster.startTask(alloc.ID);
    restartLoop(harness, alloc.ID, 8);
    // Restarting again, for a while: pending when the late watch starts.
    clock.advance(500);
    fake.cluster.failTask(alloc.ID, 'main', { restartDelayMs: 60_000 });
    await driveTo(clock, clock.now() + 100);
    const late = lateSupervisor(harness);
    try {
      const deploymentId = String(alloc.DeploymentID);
      await driveTo(clock, clock.now() + 3_000);
      expect(outcomeOf(late.verdicts, alloc.ID)).toBeUndefined();
      // Nomad's deadline: its client records the allocation unhealthy, with its reason (1.1.2's words).
      await driveTo(clock, START + 20_000);
      fake.cluster.batch(() => {
        fake.cluster.addTaskEvents(alloc.ID, 'main', [{ Type: 'Alloc Unhealthy', DisplayMessage: 'Task not running for min_healthy_time of 2s by deadline' }]);
        fake.cluster.setAllocHealth(alloc.ID, false);
      });
      const decidedAt = clock.now();
      await driveTo(clock, decidedAt + 100);
      expect(outcomeOf(late.verdicts, alloc.ID)).toEqual({
        healthy: false,
        at: decidedAt,
        reasons: { main: 'Task not running for min_healthy_time of 2s by deadline' },
        basis: 'nomad',
      });
      fake.cluster.setDeploymentStatus(deploymentId, 'failed', 'Failed due to unhealthy allocations');
      const result = await late.supervisor.waitForDeployment('web', { version: 0 });
      expect(result).toMatchObject({ ok: false, unhealthy: [expect.objectContaining({ allocId: alloc.ID, reasons: { main: 'Task not running for min_healthy_time of 2s by deadline' } })] });
    } finally {
      await late.supervisor.stop();
    }
  });

  test('restarts too short to be healthy, their "Received" event lost: when Nomad\'s deadline came is gone with it, so Nomad\'s recorded verdict decides', async () => {
    const harness = await cluster();
    const { fake, clock, allocs } = harness;
    const [alloc] = allocs as [Allocation];
    await driveTo(clock, START + 100);
    fake.cluster.receiveAllocation(alloc.ID);
    clock.advance(100);
    fake.cluster.startTask(alloc.ID);
    // Runs of 50 ms, restarted 50 ms later: its first events gone within half a second (so soon after
    // its creation that the runs lost cannot have been healthy: the history is not undetermined).
    for (let i = 0; i < 4; i++) {
      clock.advance(50);
      fake.cluster.failTask(alloc.ID, 'main', { restartDelayMs: 50 });
      clock.advance(50);
      fake.cluster.startTask(alloc.ID);
    }
    clock.advance(500);
    fake.cluster.failTask(alloc.ID, 'main', { restartDelayMs: 60_000 });
    // A supervisor started now cannot tell when Nomad's deadline comes: it waits for Nomad's decision.
    const before = lateSupervisor(harness);
    await driveTo(clock, START + 20_000);
    expect(outcomeOf(before.verdicts, alloc.ID)).toBeUndefined();
    // Nomad's deadline (from its Received event), 5 ms of its tracker's lag later: it records the allocation unhealthy.
    await driveTo(clock, START + 20_105);
    fake.cluster.batch(() => {
      fake.cluster.addTaskEvents(alloc.ID, 'main', [{ Type: 'Alloc Unhealthy', DisplayMessage: 'Task not running by deadline' }]);
      fake.cluster.setAllocHealth(alloc.ID, false);
    });
    const decidedAt = clock.now();
    await driveTo(clock, decidedAt + 1_500);
    // FakeNomad plays 1.1.2 by default: Nomad 1.1.2's words.
    const reasons = { main: 'Task not running by deadline' };
    expect(outcomeOf(harness.verdicts, alloc.ID)).toEqual({ healthy: false, at: START + 20_100, reasons });
    expect(fake.cluster.allocation(alloc.ID)?.TaskStates?.main?.Events?.some((event) => event.Type === 'Received')).toBe(false);
    const late = lateSupervisor(harness);
    try {
      await driveTo(clock, clock.now() + 500);
      // Judged from the kept events alone, its deadline would count from the earliest of them.
      expect(outcomeOf(late.verdicts, alloc.ID)).toEqual({ healthy: false, at: decidedAt, reasons, basis: 'nomad' });
      expect(outcomeOf(before.verdicts, alloc.ID)).toEqual({ healthy: false, at: decidedAt, reasons, basis: 'nomad' });
    } finally {
      await late.supervisor.stop();
      await before.supervisor.stop();
    }
  });

  /** What 1.1.2's client writes on a failed allocation in a deployment whose health watch did not judge it (client/allocrunner clientAlloc): Healthy=false at Go's zero time. */
  const UNTIMED_UNHEALTHY = { Canary: false, Healthy: false, ModifyIndex: 0, Timestamp: '0001-01-01T00:00:00Z' };

  test.each([
    ['without a decision', undefined],
    ["marked unhealthy with no time (1.1.2's client, its health watch shut down first): not a decision", UNTIMED_UNHEALTHY],
  ])('over %s: undetermined, and a late gate names it among the unjudged with why', async (_case, deploymentStatus) => {
    const harness = await cluster();
    const { fake, clock, allocs } = harness;
    const [alloc] = allocs as [Allocation];
    await driveTo(clock, START + 200);
    fake.cluster.startTask(alloc.ID);
    restartLoop(harness, alloc.ID, 5);
    clock.advance(300);
    fake.cluster.failTask(alloc.ID, 'main');
    if (deploymentStatus !== undefined) fake.cluster.patchAllocation(alloc.ID, { DeploymentStatus: deploymentStatus });
    fake.cluster.setDeploymentStatus(String(alloc.DeploymentID), 'failed', 'Failed due to progress deadline');
    await driveTo(clock, clock.now() + 100);
    const late = lateSupervisor(harness);
    try {
      const result = await late.supervisor.waitForDeployment('web', { version: 0 });
      expect(result).toMatchObject({ ok: false, unhealthy: [] });
      expect(result.unjudged).toEqual([{ allocId: alloc.ID, name: 'web.app[0]', reason: expect.stringContaining("Nomad keeps only the last 10 events of a task, and task main's events before") }]);
      expect(late.problems).toEqual([]);
    } finally {
      await late.supervisor.stop();
    }
  });
});

describe('a gate on an older version', () => {
  test("a job registered again since: the gate reads that version's deployment, not the latest, and ends", async () => {
    const harness = await cluster();
    const { fake, clock, allocs } = harness;
    await driveTo(clock, START + 200);
    for (const alloc of allocs) fake.cluster.startTask(alloc.ID);
    await driveTo(clock, START + 2_300);
    for (const alloc of allocs) fake.cluster.setAllocHealth(alloc.ID, true);
    const first = fake.cluster.listDeployments({ jobId: 'web' })[0]!;
    fake.cluster.setDeploymentStatus(first.ID, 'successful');
    fake.cluster.registerJob(serviceJob('web', { Meta: { release: 'two' } }));
    await driveTo(clock, START + 4_000);
    const late = createSupervisor({ nomad: harness.supervisor.nomad, clock });
    try {
      const result = late.waitForDeployment('web', { version: 0 });
      await driveTo(clock, START + 6_000);
      await expect(result).resolves.toEqual({ ok: true, jobId: 'web', version: 0, deploymentId: first.ID, healthy: allocs.map((a) => a.ID).sort() });
    } finally {
      await late.stop();
    }
  });
});
